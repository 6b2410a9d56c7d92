"""The imperative shell around the pure engine: one asyncio task per table.

Inputs (device events, controller inputs) are queued and stepped one at a time. For each step the domain events are
committed to the journal first, with the engine's state in the same transaction; only then are the events handed to
the publisher (by the writer thread, once durable), listeners told and the device commands carried out, so nothing
leaves the process that the journal does not hold, and a restart at any instant finds the state that goes with the
last journaled event (restored at start, then `Recover`: docs/recovery.md). One exception: a step's lock commands leave
while its commit is on the disk (docs/recovery.md, "Locks before the commit").
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import structlog

from controller.accounts import codec as accounts_codec
from controller.config.errors import ConfigError
from controller.config.table import TableConfig
from controller.core.events import DomainEvent, JournaledEvent
from controller.core.invariant import present
from controller.core.settlement import ChapterRules
from controller.engine.commands import DeviceCommand
from controller.engine.context import BonusDraws
from controller.engine.inputs import CriticalStateInvalid, Input, LinkLease, OpenTable, RaiseTilt, Recover, Tick
from controller.engine.round import RoundEngine
from controller.engine.state import Phase, TableState
from controller.games.registry import REGISTRY
from controller.progressive import codec as meter_codec
from controller.release.installed import SoftwareCheck
from controller.shell import notes, software
from controller.shell.device_commands import CommandRunner
from controller.shell.inbox import EarlyStart, start_devices
from controller.shell.inbox import Waited as _Waited
from controller.shell.listeners import DETACHED, LISTENER_BOUND, Listener, ListenerKind
from controller.shell.locks import hoist_locks, lock_frames_out
from controller.shell.notes import Noted
from controller.shell.restore import ACCOUNTS_RECORD, METERS_RECORD, Restore
from controller.shell.writer import Commit, JournalWriter
from controller.store import integrity, snapshot
from controller.store.anchor import Claim
from controller.store.journal import Journal
from controller.store.records import Record
from drivers.interfaces import Device, DeviceEvent

if TYPE_CHECKING:
    from controller.shell.inbox import Inbox

log = structlog.get_logger("tablectl.service")

# One input's step: the events it journals and the device commands carried out after the commit.
Step = tuple[list[DomainEvent], list[DeviceCommand]]

Clock = Callable[[], dt.datetime]
TICK_SECONDS = 30.0  # fine enough for hour-long deck lives and half-hour idle checks
MAX_GROUP = 64  # inputs stepped and committed together at most (see run)
LINK_DRAIN_SECONDS = 5.0  # how long a linked table that closed waits for the link's last answers


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class TableService:
    def __init__(
        self,
        config: TableConfig,
        devices: Mapping[str, Device],
        journal: Journal,
        on_journaled: Callable[[], None] = lambda: None,
        clock: Clock = utc_now,
        on_durable: Callable[[list[JournaledEvent]], None] | None = None,
        remote_anchor: Claim | None = None,
        software_check: SoftwareCheck | None = None,
        draws: BonusDraws | None = None,
        early: EarlyStart | None = None,
    ) -> None:
        """`remote_anchor` is the anchor the broker retains for this table (controller.mqtt.anchor), when it could
        be read at start: the journal is held against it as well as against its own anchor file. `software_check`
        is the installed code's verdict (controller/shell/software.py): journaled first, and on a refusal the table
        stays closed under its tilt. `draws` replaces the CSPRNG's Magic Card and Lucky Bonus draws: only the demo
        passes them (seeded); a live table draws from the CSPRNG. `early`: devices started already (shell.inbox)."""
        self.config = config
        self.devices = dict(devices)
        self._commands = CommandRunner(self.devices, self.sink)
        self.journal = journal
        chapter = REGISTRY.get(config.game.chapter)
        if chapter is None:
            raise ConfigError(f"chapter {config.game.chapter} has no round engine yet")
        try:
            self.engine: RoundEngine[ChapterRules] = chapter.engine(config.game, draws=draws)
        except ValueError as err:
            raise ConfigError(f"game: {err}") from None
        self.engine.link = config.progressive.link
        self._on_journaled = on_journaled
        self._clock = clock
        stored = Restore(
            config, journal, integrity.assess(journal, remote_anchor), self.engine.meter_params.levels, clock
        )
        self.state, self._first = stored.restore()
        self.state, self._meters_generation = stored.restore_meters(self.state, self._first)
        self._software = software_check
        if software_check is not None and software_check.refused:
            self._first.insert(0, CriticalStateInvalid(str(software_check.judgement.problem), tilt=software.TILT))
        self._accounts_generation = stored.restore_accounts(self.state, self._first)
        if self.engine.link is not None:  # a lease does not survive a restart: locked out until the link grants one
            self._first.append(LinkLease(False, "the table started: awaiting the link's lease"))
        self._stored = snapshot.encode(self.state)  # as last stored: a step leaving it unchanged writes nothing
        self._stored_meters = self.state.meters
        self._stored_accounts = self.state.accounts
        # Every commit's events (a step's, a note's) go to `on_durable` (the publisher's offer) from the writer thread.
        self._writer = JournalWriter(journal, on_durable)
        self._order = notes.CommitOrder(self._announce_commit)  # steps' and notes' commits, announced in this order
        self._offered = on_durable is not None
        self._early = early
        self._inputs: Inbox = asyncio.Queue() if early is None else early.inbox
        self._listeners: list[Listener] = []
        self.closed = asyncio.Event()
        # The journal's last event is decided: a step closed the table (set before its commit) or a stop on purpose is
        # to be journaled. No input is stepped nor shell note (`command.listening`, subscribing late) journaled after.
        self.ending = False
        self.ready = asyncio.Event()  # the devices started and the table opened (systemd READY=1, benchmarks)

    # -- what the outside calls ------------------------------------------------------------------

    def sink(self, event: DeviceEvent) -> None:
        """Drivers call this from the event loop; it only queues."""
        self._inputs.put_nowait(event)

    def submit(self, inp: Input) -> None:
        self._inputs.put_nowait(inp)

    async def submit_and_wait(self, inp: Input) -> list[JournaledEvent]:
        """Queue `inp` behind what is already queued and return the events its step journaled (a supervisor
        command's reply says what the command did, e.g. `input.ignored` when the phase does not allow it)."""
        done: asyncio.Future[list[JournaledEvent]] = asyncio.get_running_loop().create_future()
        self._inputs.put_nowait(_Waited(inp, done))
        return await done

    def note(self, events: list[DomainEvent]) -> Noted:
        """Journal events that come from the shell rather than an engine step (a rejected supervisor command, a task's
        failure) on the writer thread, after the commits handed to it before, and tell the listeners and the publisher
        in seq order with the rest. Never waits: what a caller may await of its future is in shell/notes.py."""
        if not events:
            return notes.nothing()
        commit = self._order.add(self._writer.submit(events, self._clock(), ()))
        return notes.noted(commit, self._order, [e.type for e in events])

    async def note_within(self, events: list[DomainEvent], still_s: float) -> list[JournaledEvent] | None:
        """A note awaited, bounded, for the stop at once: committed after the commits in flight, waited for while the
        disk moves (JournalWriter.wait_while_moving: a slow disk, within the stop's budget). None when the journal has
        not committed it by then, or made no progress for `still_s`: its disk hangs (a write that never returns holds
        the writer thread, and with it the journal's lock). Raises what the journal raised."""
        if self._order.hung():
            return None  # the writer thread is still inside that commit: this one would only wait behind it
        commit = self._order.add(self._writer.submit(events, self._clock(), ()))
        running = present(commit.running, "the future of a commit handed to the writer")
        running.add_done_callback(lambda f: f.cancelled() or f.exception())  # a late failure is nobody's to raise
        if not await self._writer.wait_while_moving(commit, still_s):
            return None
        await asyncio.wait((running,))  # its outcome, set on the loop right after it finished
        running.result()
        self._order.through(commit)
        return commit.journaled

    async def notes_settled(self, bound_s: float) -> bool:
        """The commits handed to the writer thread finished (a note made while the table stopped, before the journal
        closes), waited for at most `bound_s`: False when one has not (its disk hangs)."""
        unfinished = self._order.unfinished()
        if unfinished:
            await asyncio.wait(unfinished, timeout=bound_s)
        return not self._order.unfinished()

    @property
    def settling(self) -> bool:
        """The stop's wait for the commit in flight is on (JournalWriter.wait_while_moving)."""
        return self._writer.settling

    def link_wake(self, wake: Callable[[], None]) -> None:
        """`wake` is called when a step put requests for the link controller in the outbox (SendLink)."""
        self._commands.link_wake = wake

    def subscribe(self, name: str, kind: ListenerKind, bound: int = LISTENER_BOUND) -> Listener:
        """Every journaled event, in seq order, from now on, on a queue of at most `bound` events. `kind` says what
        falling behind by the bound does (controller/shell/listeners.py): a "lossy" listener loses its oldest events,
        counted and logged; a "lossless" one is detached and the table raises `tilt:listener:<name>`."""
        q = Listener(name, kind, bound)
        self._listeners.append(q)
        return q

    def unsubscribe(self, q: asyncio.Queue[JournaledEvent]) -> None:
        """Stop filling `q` (a listener that is done with it)."""
        self._listeners = [x for x in self._listeners if x is not q]

    @property
    def listeners(self) -> int:
        """How many queues every journaled event is put on."""
        return len(self._listeners)

    def subscribers(self) -> list[Listener]:
        """The queues every journaled event is put on (their kinds, drops and high water: tests, diagnostics)."""
        return list(self._listeners)

    async def run(self) -> None:
        """Start the devices, open the table and step inputs until the table is closed."""
        if self._software is not None:  # 605a.4(c): the check of the code comes before anything the table does
            self.note([software.checked_event(self._software)])
        if self._early is None:
            await start_devices(self.devices.values(), self.sink)
        else:  # begun before the journal was read (controller.shell.inbox): nothing was commanded yet
            await self._early.started
        # A closed table is recovered only for a device's fault (controller/shell/restore.py): it still opens.
        recovered = self.state.phase is not Phase.CLOSED and any(isinstance(i, Recover) for i in self._first)
        # The engine reads no clock: deck life (4 h / 8 h) and the idle-table inspection run on these ticks.
        self.submit(Tick(self._clock()))
        if not recovered and not (self._software is not None and self._software.refused):
            self.submit(OpenTable())
        # Recovery (or the tilt of a state that could not be restored) is decided on the state as it was stored: the
        # first inputs head the first batch, stepped before any report the restarted devices queued meanwhile, and the
        # commands they decide are carried out after that batch's one commit.
        head: list[Input | _Waited] = list(self._first)
        while True:
            batch, head = [*head, await self._inputs.get()], []
            if self.ending:  # a stop on purpose is being journaled (the demo's): its caller cancels this task
                await asyncio.Future()
            # Inputs that queued while the last step's device commands ran are stepped together and committed
            # as one transaction (group commit): one fsync instead of one per input, and still nothing leaves
            # the process before the journal holds the events that decided it.
            while len(batch) < MAX_GROUP and not self._inputs.empty():
                batch.append(self._inputs.get_nowait())
            try:
                results = await self.apply_all([i.inp if isinstance(i, _Waited) else i for i in batch])
            except BaseException as err:
                for item in batch:
                    if isinstance(item, _Waited) and not item.done.done():
                        item.done.set_exception(err)
                raise
            for item, journaled in zip(batch, results, strict=False):
                if isinstance(item, _Waited) and not item.done.done():
                    item.done.set_result(journaled)
            # Ready once the table was opened (or recovered): the first batch holds the Tick and OpenTable.
            self.ready.set()
            if len(results) < len(batch) or any(e.type == "table.closed" for e in results[-1]):
                await self._drain_link()
                self.closed.set()
                return

    async def _drain_link(self) -> None:
        """A linked table that closed with requests unacknowledged steps the link's answers a little longer, so a
        table closed at the end of a shift leaves nothing pending; what is still unanswered stays in the journal's
        outbox and is sent at the next start."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LINK_DRAIN_SECONDS
        while self.state.link_outbox and (left := deadline - loop.time()) > 0:
            try:
                async with asyncio.timeout(left):
                    item = await self._inputs.get()
            except TimeoutError:
                break
            journaled = await self.apply(item.inp if isinstance(item, _Waited) else item)
            if isinstance(item, _Waited) and not item.done.done():
                item.done.set_result(journaled)
        if self.state.link_outbox:
            log.warning(
                "closed with link requests unacknowledged: they are sent at the next start",
                keys=sorted(self.state.link_outbox),
            )

    async def ticks(self) -> None:
        """Until cancelled: a Tick every TICK_SECONDS (a supervised task of the runner's, controller/shell/tasks.py)."""
        while True:
            await asyncio.sleep(TICK_SECONDS)
            self.submit(Tick(self._clock()))

    async def stop_devices(self) -> None:
        await asyncio.gather(*(d.stop() for d in self.devices.values()), return_exceptions=True)

    # -- the step --------------------------------------------------------------------------------

    async def apply(self, inp: Input) -> list[JournaledEvent]:
        return (await self.apply_all([inp]))[0]

    async def apply_all(self, inputs: list[Input]) -> list[list[JournaledEvent]]:
        """Step each input in order, commit all their events and the resulting state in one transaction, then
        carry out their device commands in order; returns each input's journaled events. Stops after an input
        that closed the table (the inputs after it are not stepped: the result is shorter)."""
        state, steps = self._step(inputs)
        events = [e for evs, _ in steps for e in evs]
        journaled: list[JournaledEvent] = []
        # Lock-outs leave now, while the journal commits (docs/recovery.md, "Locks before the commit"), and before
        # the state is encoded for that commit (about 0.1 ms a step, bench/critical_state.py), which the frames need
        # not wait for: each device's task is started here and writes its frame in the loop's next turn.
        early = hoist_locks(steps)
        locking = None
        if early:
            locking = self._start(early)
            await lock_frames_out()
        try:
            body, records = self._records(state)
            if events or records:
                commit = self._order.add(self._writer.submit(events, self._clock(), records))
                try:
                    await self._writer.wait(commit)
                finally:  # also when cancelled after the commit was made: the state goes with what the journal holds
                    if commit.journaled is not None:
                        journaled = commit.journaled
                        self._took(body, state)
                        self._order.through(commit)
            else:
                self._took(body, state)
        except BaseException:
            if locking is not None:
                locking.cancel()
                await asyncio.gather(locking, return_exceptions=True)
            raise
        if locking is not None:
            await locking  # a device's later commands keep their order after its lock
        out: list[list[JournaledEvent]] = []
        at = 0
        for evs, _ in steps:
            out.append(journaled[at : at + len(evs)])
            at += len(evs)
        for _, commands in steps:
            await self._execute(commands)
        return out

    def _step(self, inputs: list[Input]) -> tuple[TableState, list[Step]]:
        """Each input stepped in order from the service's state (nothing taken yet), up to one that closes the table."""
        state = self.state
        steps: list[Step] = []
        for inp in inputs:
            refusal = software.refused_clear(inp, self._software, str(state.phase))
            if refusal is not None:
                steps.append((refusal, []))
                continue
            state, effects = self.engine.step(state, inp)
            events = [e for e in effects if isinstance(e, DomainEvent)]
            steps.append((events, [e for e in effects if not isinstance(e, DomainEvent)]))
            if any(e.type == "table.closed" for e in events):
                self.ending = True
                break
        return state, steps

    def _records(self, state: TableState) -> tuple[bytes, list[Record]]:
        """The stored records that go with the steps' events: the engine state, the meters and the accounts, each
        only when it changed."""
        # The state goes in the events' transaction, and also on a step that changed it without an event (a lock
        # confirmation): a restart then resumes exactly after the last step the journal holds.
        body = snapshot.encode(state)
        records = [] if body == self._stored else [snapshot.record(body)]
        if state.meters is not None and state.meters is not self._stored_meters and state.meters != self._stored_meters:
            # Both copies in the steps' transaction, each with its own checksum (docs/progressive.md).
            self._meters_generation += 1
            records.append(Record(METERS_RECORD, meter_codec.encode(state.meters, self._meters_generation), copies=2))
        if state.accounts is not self._stored_accounts and state.accounts != self._stored_accounts:
            # The ledger's two copies in the same transaction as the movements' events (docs/accounts.md).
            self._accounts_generation += 1
            body_a = accounts_codec.encode(state.accounts, self._accounts_generation)
            records.append(Record(ACCOUNTS_RECORD, body_a, copies=2))
        return body, records

    def _took(self, body: bytes, state: TableState) -> None:
        self._stored = body
        self._stored_meters = state.meters
        self._stored_accounts = state.accounts
        self.state = state  # only once the journal holds what the steps decided

    def _announce_commit(self, commit: Commit) -> None:
        """A commit's events, once, in the order the commits were handed (notes.CommitOrder.through). Those offered to
        the publisher from the writer thread (`on_durable`) are not announced to it again."""
        if commit.announced or commit.journaled is None:
            return
        commit.announced = True
        for ev in commit.journaled:
            for q in self._listeners:
                if not q.offer(ev):
                    self._detach(q)
        if commit.journaled and not self._offered:
            self._on_journaled()

    def _detach(self, q: Listener) -> None:
        """A lossless listener behind by its bound: kept, it would hold every event from now on; dropped from, it would
        lose what it exists to keep. So it stops being filled and the table tilts, naming it (house rules: critical
        state never resets silently)."""
        self._listeners = [x for x in self._listeners if x is not q]
        tilt, reason, remedy = q.tilt()
        log.error(DETACHED, listener=q.name, bound=q.maxsize, tilt=tilt, reason=reason)
        self.submit(RaiseTilt(tilt, reason, remedy))

    async def _execute(self, commands: list[DeviceCommand]) -> None:
        # Carried out by controller/shell/device_commands.py: one match on the command's type, no state read back.
        await self._commands.execute(commands)

    def _start(self, commands: list[DeviceCommand]) -> asyncio.Future[list[None]]:
        # The same, each device's task started now (a step's early locks); bench/round_timeline.py times both.
        return self._commands.start(commands)
