"""The imperative shell around the pure engine: one asyncio task per table.

Inputs (device events, controller inputs) are queued and stepped one at a time. For each step the
domain events are committed to the journal first, with the engine's state in the same transaction; only
then are the events handed to the publisher (by the writer thread, once durable), listeners told and the device
commands carried out, so nothing leaves the
process that the journal does not hold, and a restart at any instant finds the state that goes with the
last journaled event (restored at start, then `Recover`: docs/recovery.md). One exception: a step's lock commands
leave while its commit is on the disk (docs/recovery.md, "Locks before the commit").
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import structlog

from controller.accounts import codec as accounts_codec
from controller.config.errors import ConfigError
from controller.config.table import TableConfig
from controller.core.events import DomainEvent, JournaledEvent
from controller.core.settlement import ChapterRules
from controller.engine.commands import DeviceCommand, LockSeat, LockTerminal
from controller.engine.context import BonusDraws
from controller.engine.inputs import CriticalStateInvalid, Input, LinkLease, OpenTable, RaiseTilt, Recover, Tick
from controller.engine.round import RoundEngine
from controller.engine.state import Phase, TableState
from controller.games.registry import REGISTRY
from controller.progressive import codec as meter_codec
from controller.progressive.model import MeterError
from controller.release.installed import SoftwareCheck
from controller.shell import software
from controller.shell.device_commands import CommandRunner, device_for
from controller.shell.listeners import DETACHED, LISTENER_BOUND, Listener, ListenerKind
from controller.shell.writer import Commit, JournalWriter
from controller.store import integrity, snapshot
from controller.store.anchor import Claim
from controller.store.journal import Journal
from controller.store.records import Record
from drivers.interfaces import Device, DeviceEvent, DeviceOffline

log = structlog.get_logger("tablectl.service")

Clock = Callable[[], dt.datetime]
METERS_RECORD = "meters"  # the progressive meters, two copies (controller/progressive/codec.py)
ACCOUNTS_RECORD = "accounts"  # the game accounts' ledger, two copies (controller/accounts/codec.py)
TICK_SECONDS = 30.0  # fine enough for hour-long deck lives and half-hour idle checks
MAX_GROUP = 64  # inputs stepped and committed together at most (see run)
LINK_DRAIN_SECONDS = 5.0  # how long a linked table that closed waits for the link's last answers


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True, slots=True)
class _Waited:
    """An input queued by submit_and_wait, whose caller awaits the events its step journaled."""

    inp: Input
    done: asyncio.Future[list[JournaledEvent]]


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
    ) -> None:
        """`remote_anchor` is the anchor the broker retains for this table (controller.mqtt.anchor), when it could
        be read at start: the journal is held against it as well as against its own anchor file. `software_check`
        is the installed code's verdict (controller/shell/software.py): journaled first, and on a refusal the table
        stays closed under its tilt. `draws` replaces the CSPRNG's Magic Card and Lucky Bonus draws: only the demo
        passes them (seeded, so a demo run can be repeated); a live table always draws from the CSPRNG."""
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
        self._found = integrity.assess(journal, remote_anchor)
        self.state, self._first = self._restore()
        self.state, self._meters_generation = self._restore_meters(self.state, self._first)
        self._software = software_check
        if software_check is not None and software_check.refused:
            self._first.insert(0, CriticalStateInvalid(str(software_check.judgement.problem), tilt=software.TILT))
        self._accounts_generation = self._restore_accounts(self.state, self._first)
        if self.engine.link is not None:  # a lease does not survive a restart: locked out until the link grants one
            self._first.append(LinkLease(False, "the table started: awaiting the link's lease"))
        # The state as last stored: a step that leaves it unchanged (most Ticks) writes nothing.
        self._stored = snapshot.encode(self.state)
        self._stored_meters = self.state.meters
        self._stored_accounts = self.state.accounts
        # A step's events go to `on_durable` (the publisher's offer) straight from the writer thread once durable;
        # `on_journaled` is then not called for them again, only for the shell's own notes.
        self._writer = JournalWriter(journal, on_durable)
        self._offered = on_durable is not None
        self._inputs: asyncio.Queue[Input | _Waited] = asyncio.Queue()
        self._listeners: list[Listener] = []
        self.closed = asyncio.Event()
        # Set the moment a step closes the table, before its commit: nothing the shell notes after that may follow
        # `table.closed` into the journal (the command listener's `command.listening`, subscribing late).
        self.closing = False
        # Set once the devices were started and the table was opened (systemd READY=1, benchmarks).
        self.ready = asyncio.Event()

    def _restore(self) -> tuple[TableState, list[Input]]:
        """The state to start from and the inputs that come before anything a device reports."""
        for warning in self._found.warnings:
            log.warning("journal anchor behind the journal", detail=warning, journal=str(self.journal.path))
        if self._found.rolled_back:
            return self._rolled_back()
        copies = self.journal.load(snapshot.RECORD)
        problem = self._found.journal or self._found.records.get(snapshot.RECORD)
        state: TableState | None = None
        if problem is None:
            try:
                state = snapshot.restore(copies)
            except snapshot.SnapshotError as err:
                problem = str(err)
        if state is not None and state.table_id != self.config.table_id:
            problem, state = (
                (
                    f"the stored engine state is table {state.table_id!r}'s, not {self.config.table_id!r}: "
                    "give each table its own journal file"
                ),
                None,
            )
        if problem is not None:
            open_round = self.journal.critical.open_round()
            if open_round is not None:
                problem += (
                    f"; the journal's last round, {open_round[0]}, has {open_round[1]} wager(s) accepted and was "
                    "neither completed nor voided: settle it by hand from the journal"
                )
            log.error(
                "critical state invalid: the table starts blocked", reason=problem, journal=str(self.journal.path)
            )
            if copies:  # kept for the investigation; the next stored state would otherwise overwrite it
                self.journal.save([Record(f"{snapshot.RECORD}.rejected", copies[0].body)], self._clock())
            return self._fresh(), [CriticalStateInvalid(problem)]
        if state is None:
            return self._fresh(), []
        log.info(
            "critical state restored",
            phase=str(state.phase),
            rounds_played=state.rounds_played,
            round_id=state.round.round_id if state.round else None,
        )
        return state, ([] if state.phase is Phase.CLOSED else [Recover()])

    def _rolled_back(self) -> tuple[TableState, list[Input]]:
        """The journal lost committed events (or cannot be told not to have): the table starts blocked under the
        `tilt:rollback` tilt, from no round, its numbering after the highest round any anchor knows. When an anchor
        is ahead of the journal, the journal continues after it, so no seq the floor may hold is used again for
        another event (docs/recovery.md, "What must exist")."""
        found = self._found
        if found.rollback:
            reason = "; ".join(found.rollback)
            self.journal.resume_after(found.resume, reason, self._clock())
        else:  # recorded at an earlier start that stopped before its first step: the same tilt again
            reason = found.pending or "the journal was found rolled back at an earlier start"
        log.error("journal rolled back: the table starts blocked", reason=reason, journal=str(self.journal.path))
        return self._fresh(), [CriticalStateInvalid(reason, tilt="tilt:rollback")]

    def _meters_gone(self, stored: bool) -> list[str]:
        """What says the stored meters are not the table's: the manifest, or a rollback (their value moved on)."""
        findings = [self._found.records[METERS_RECORD]] if METERS_RECORD in self._found.records else []
        if self._found.rolled_back and (stored or self.engine.meter_params.levels):
            findings.append(
                "the journal lost committed events (tilt:rollback): the meters are "
                + ("as stored before them" if stored else "not stored at all")
                + "; reconcile them with the floor's record (progressive/<level>, the archive) before clearing"
            )
        return findings

    def _restore_meters(self, state: TableState, first: list[Input]) -> tuple[TableState, int]:
        """Validate both stored copies of the meters (checksums, format, balance) and compare them with the
        engine state's own copy and the manifest. Anything wrong raises the `tilt:meters` tilt; the meters are
        never reset: the newest sound copy (or the engine state's) is kept, and a table whose meters cannot be read
        at all, or are gone, gets no fresh seeds (progressive play stays locked out until a floorperson restores
        and clears them)."""
        copies = {c.copy: c for c in self.journal.load(METERS_RECORD)}
        if not copies:
            gone = self._meters_gone(stored=False)
            if gone:  # the manifest lists them, or the journal lost them: never seeded afresh without a person
                reason = "; ".join(gone)
                log.error("progressive meters gone: progressive play is locked out", reason=reason)
                state.progressive_lockout["meters"] = f"the stored progressive meters are gone ({reason})"
                first.append(CriticalStateInvalid(f"progressive meters: {reason}", tilt="tilt:meters"))
            return state, 0  # otherwise a new table (seeded at its first open) or one without progressives
        # A body failing the journal's checksum still goes to the codec, whose own checks say what is wrong with it.
        blobs = [copies[i].body if i in copies else None for i in (0, 1)]
        findings = [f"copy {'ab'[i]} fails its sha256 check" for i in (0, 1) if i in copies and not copies[i].intact]
        findings += self._meters_gone(stored=True)
        generation = max(c.seq for c in copies.values())
        try:
            loaded = meter_codec.load_copies(blobs[0], blobs[1])
        except MeterError as err:
            reason = "; ".join([*findings, str(err)])
            log.error("progressive meters unreadable: progressive play is locked out", reason=reason)
            state.progressive_lockout["meters"] = f"the stored progressive meters cannot be read ({reason})"
            first.append(CriticalStateInvalid(f"progressive meters: {reason}", tilt="tilt:meters"))
            return state, generation
        findings += loaded.findings
        if state.meters is None:
            state.meters = loaded.meters  # the engine state was refused or lost: the meters are not
        elif state.meters != loaded.meters:
            findings.append(
                f"the stored meters (seq {loaded.meters.seq}) disagree with the engine state's "
                f"(seq {state.meters.seq}); the engine state's, journaled with the events, are used"
            )
        if findings:
            reason = "; ".join(findings)
            log.error("progressive meters failed validation: tilt", reason=reason)
            first.append(CriticalStateInvalid(f"progressive meters: {reason}", tilt="tilt:meters"))
        return state, loaded.generation

    def _restore_accounts(self, state: TableState, first: list[Input]) -> int:
        """Validate both stored copies of the game accounts (checksums, format, balance) against each other, the
        manifest and the engine state's ledger. Anything wrong raises `tilt:accounts` (no new round until a supervisor
        clears it); balances are never reset: the engine state's ledger, journaled with the events, is kept, or the
        newest sound copy when the engine state itself was refused. Returns the generation to continue from."""
        copies = {c.copy: c for c in self.journal.load(ACCOUNTS_RECORD)}
        findings = [self._found.records[ACCOUNTS_RECORD]] if ACCOUNTS_RECORD in self._found.records else []
        refused = any(isinstance(i, CriticalStateInvalid) and i.tilt == "critical_state" for i in first)
        generation = max((c.seq for c in copies.values()), default=0)
        if not copies:
            if state.accounts.seq:
                findings.append(f"both stored copies are gone but the engine state has {state.accounts.seq} movements")
        else:
            blobs = [copies[i].body if i in copies else None for i in (0, 1)]
            findings += [
                f"copy {'ab'[i]} fails its sha256 check" for i in (0, 1) if i in copies and not copies[i].intact
            ]
            try:
                loaded = accounts_codec.load_copies(blobs[0], blobs[1])
            except accounts_codec.AccountsCorrupt as err:
                findings.append(f"no stored copy can be read ({err})")
            else:
                findings += loaded.findings
                generation = loaded.generation
                if state.accounts.seq == 0 and refused:
                    state.accounts = loaded.ledger  # the engine state was refused: the balances are not
                elif state.accounts != loaded.ledger:
                    findings.append(
                        f"the stored accounts (seq {loaded.ledger.seq}) disagree with the engine state's "
                        f"(seq {state.accounts.seq}); the engine state's, journaled with the events, are used"
                    )
        if findings:
            reason = "; ".join(findings)
            log.error("game accounts failed validation: tilt", reason=reason)
            first.append(CriticalStateInvalid(f"game accounts: {reason}", tilt="tilt:accounts"))
        return generation

    def _fresh(self) -> TableState:
        # A new table, a journal from before the state was stored, a state refused or a journal rolled back:
        # numbering continues after the highest round the journal or any anchor knows (a round id is never reused).
        return TableState(self.config.table_id, rounds_played=max(self.journal.last_round_no(), self._found.round_no))

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

    def note(self, events: list[DomainEvent]) -> list[JournaledEvent]:
        """Journal events that come from the shell rather than an engine step (a rejected supervisor command,
        a device's status) and tell the listeners and the publisher, in the same seq order as the rest."""
        journaled = self.journal.append(events, self._clock()) if events else []
        in_flight = self._writer.in_flight
        if in_flight is not None and in_flight.finished.is_set():
            self._announce_commit(in_flight)  # committed before this note (the journal's lock): announced before it
        self._announce(journaled)
        return journaled

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
        await asyncio.gather(*(self._start_device(d) for d in self.devices.values()))
        # Recovery (or the tilt of a state that could not be restored) is decided on the state as it was stored,
        # before any report the restarted devices queued meanwhile.
        for inp in self._first:
            await self.apply(inp)
        recovered = any(isinstance(i, Recover) for i in self._first)
        # The engine reads no clock: deck life (4 h / 8 h) and the idle-table inspection run on these ticks.
        self.submit(Tick(self._clock()))
        if not recovered and not (self._software is not None and self._software.refused):
            self.submit(OpenTable())
        while True:
            batch = [await self._inputs.get()]
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
                item = await asyncio.wait_for(self._inputs.get(), left)
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
        state = self.state
        steps: list[tuple[list[DomainEvent], list[DeviceCommand]]] = []
        for inp in inputs:
            refusal = software.refused_clear(inp, self._software, str(state.phase))
            if refusal is not None:
                steps.append((refusal, []))
                continue
            state, effects = self.engine.step(state, inp)
            events = [e for e in effects if isinstance(e, DomainEvent)]
            steps.append((events, [e for e in effects if not isinstance(e, DomainEvent)]))
            if any(e.type == "table.closed" for e in events):
                self.closing = True
                break
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
        events = [e for evs, _ in steps for e in evs]
        journaled: list[JournaledEvent] = []
        # Lock-outs leave now, while the journal commits (docs/recovery.md, "Locks before the commit").
        early = _hoist_locks(steps)
        locking = None
        if early:
            locking = asyncio.ensure_future(self._execute(early))
            await lock_frames_out()
        try:
            if events or records:
                commit = self._writer.submit(events, self._clock(), records)
                try:
                    await self._writer.wait(commit)
                finally:  # also when cancelled after the commit was made: the state goes with what the journal holds
                    if commit.journaled is not None:
                        journaled = commit.journaled
                        self._took(body, state)
                        self._announce_commit(commit)
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

    def _took(self, body: bytes, state: TableState) -> None:
        self._stored = body
        self._stored_meters = state.meters
        self._stored_accounts = state.accounts
        self.state = state  # only once the journal holds what the steps decided

    def _announce_commit(self, commit: Commit) -> None:
        """A step batch's events, once: after its commit, or first thing in a note that was ordered after it."""
        if not commit.announced and commit.journaled is not None:
            commit.announced = True
            self._announce(commit.journaled, offered=self._offered)

    def _announce(self, journaled: list[JournaledEvent], offered: bool = False) -> None:
        for ev in journaled:
            for q in self._listeners:
                if not q.offer(ev):
                    self._detach(q)
        if journaled and not offered:
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

    async def _start_device(self, device: Device) -> None:
        try:
            await device.start(self.sink)
        except Exception as err:
            log.error("device did not start", device=device.device_id, error=str(err))
            self.sink(DeviceOffline(device.device_id, reason=f"did not start: {err}"))


async def lock_frames_out() -> None:
    """Let lock commands just started write their frames before the journal's writer thread starts its commit: the
    thread's Python work would otherwise hold the GIL while the frames wait. Two turns of the loop: one for the
    runner's gather to start a task per device, one for each task to write its frame (a link writes at once when
    nothing is outstanding, drivers/reference/link.py)."""
    for _turn in range(2):
        await asyncio.sleep(0)


def _hoist_locks(steps: list[tuple[list[DomainEvent], list[DeviceCommand]]]) -> list[DeviceCommand]:
    """Take out of the steps the lock commands that may leave before the journal holds the steps: a station's or a
    terminal's lock that is the first command for its seat in the batch (so nothing for that device overtakes it).
    A lock is safe to send early: it only takes the chance to wager away, it is idempotent, and the engine counts
    its confirmation only as an input stepped after this commit; a crash before the commit recovers to betting,
    which unlocks the stations again (docs/recovery.md)."""
    seen: set[str] = set()
    early: list[DeviceCommand] = []
    for _events, commands in steps:
        keep: list[DeviceCommand] = []
        for c in commands:
            target = device_for(c)
            if isinstance(c, LockSeat | LockTerminal) and target not in seen:
                early.append(c)
            else:
                keep.append(c)
            seen.add(target)
        commands[:] = keep
    return early
