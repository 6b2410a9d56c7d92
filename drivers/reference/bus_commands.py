"""A wager bus's commands to several stations at once (docs/protocol.md sections 10, 13 and 14): v2's broadcast lock,
v3's GROUP lock, and v4's GROUP unlock and lights, each confirmed in slots, with their fallbacks to a frame per station.

ReferenceWagerBus (wager_bus.py) takes these from BusCommands; they gather the stations whose lock(), unlock() or
light_on()/light_off() the controller calls in one turn of the event loop into one frame.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog

from drivers.reference.bus_link import BusLink
from drivers.reference.framing import GROUP_LIGHT, GROUP_LOCK, GROUP_UNLOCK, VERSION_3, VERSION_4
from drivers.reference.link import LinkError
from drivers.reference.wager_bus_settings import ReferenceWagerBusSettings

if TYPE_CHECKING:
    from drivers.reference.wager_bus import BusWagerStation

log = structlog.get_logger(__name__)


class BusCommands:
    """The gathering of commands to a bus's stations into broadcast and GROUP frames; mixed into ReferenceWagerBus."""

    device_id: str
    settings: ReferenceWagerBusSettings
    link: BusLink | None
    _stations: dict[int, BusWagerStation]
    _by_address: dict[int, BusWagerStation]

    def _init_commands(self) -> None:
        # Stations whose lock() joined the broadcast being gathered this turn of the loop, and the answers awaited; the
        # same for unlock() and the lights on a v4 line (the GROUP unlock and light).
        self._gathering: dict[int, asyncio.Future[None]] = {}
        self._gathering_unlock: dict[int, asyncio.Future[None]] = {}
        self._gathering_light: dict[bool, dict[int, asyncio.Future[None]]] = {}
        # GROUP command code -> station address -> its answer awaited (the slot confirmation or its own event).
        self._awaiting: dict[int, dict[int, asyncio.Future[None]]] = {GROUP_LOCK: {}, GROUP_UNLOCK: {}, GROUP_LIGHT: {}}
        self._awaiting_locked = self._awaiting[GROUP_LOCK]
        self._awaiting_unlocked = self._awaiting[GROUP_UNLOCK]
        self._lock_tasks: set[asyncio.Task[None]] = set()

    # --- the broadcast lock (docs/protocol.md, "Broadcast lock") -------------------------------------

    def lock_together(self, station: BusWagerStation) -> asyncio.Future[None]:
        """Join the broadcast that locks every station whose lock() is called in this turn of the event loop
        (the controller locks all of them at once); done once this station confirmed or was reported."""
        loop = asyncio.get_running_loop()
        if not self._gathering:
            loop.call_soon(self._start_broadcast)
        done = self._gathering.get(station.address)
        if done is None:
            done = self._gathering[station.address] = loop.create_future()
        return done

    def _start_broadcast(self) -> None:
        batch, self._gathering = self._gathering, {}
        link = self.link
        if link is not None and (link.answers_due() or link.window_open()):
            # An answer to an addressed frame may still cross the return pair (on a mixed line, the v1 stations' `lock`
            # written in this very lock-out, its ACK and then its `locked`), or a GROUP unlock's or light's window is
            # open (one window at a time): the GROUP lock, or on a line that cannot take it v2's broadcast lock, whose
            # slots the answer would land on just the same, goes once the line is clear, at most the window's end on
            # the line later (docs/protocol.md section 13, "What the host writes around a window").
            lock = self._group_when_clear(batch)
        elif self._group_line():
            # The GROUP frame is written here, in the turn of the loop after the stations' lock() calls, not in the
            # task's first step a turn later: the journal's commit starts two turns after the locks
            # (controller/shell/service.py, lock_frames_out) and would hold the GIL while the frame waited.
            lock = self._group_lock(batch, self._send_group(batch))
        else:
            lock = self._v2_broadcast_lock(batch)
        task = asyncio.get_running_loop().create_task(lock, name=f"driver:{self.device_id}:lock")
        self._lock_tasks.add(task)
        task.add_done_callback(self._lock_tasks.discard)

    def relock(self, station: BusWagerStation) -> None:
        """Lock `station` with a frame of its own at once: its slot pair is in doubt (BusWagerStation.slot_confirmed).
        Locking is idempotent: a station that did lock answers `locked` again."""
        task = asyncio.get_running_loop().create_task(station.lock_alone(), name=f"driver:{station.device_id}:relock")
        self._lock_tasks.add(task)
        task.add_done_callback(self._lock_tasks.discard)

    def _prove_slot_locks(self, addresses: list[int]) -> None:
        """Lock each station counted locked by its slot pair alone with a frame of its own, once the window closed: a
        damaged frame of a station that never locked can pass for its pair (docs/protocol.md section 13, "Collisions
        and noise"). A task of its own: the lock() calls and the lock-out they confirmed do not wait for it."""
        if addresses:
            proofs = self._prove_each(addresses)
            task = asyncio.get_running_loop().create_task(proofs, name=f"driver:{self.device_id}:prove")
            self._lock_tasks.add(task)
            task.add_done_callback(self._lock_tasks.discard)

    async def _prove_each(self, addresses: list[int]) -> None:
        # A turn of the loop first: the controller takes the last confirmation before the proofs are set up
        # (bench/lockout.py --bus: +0.04 ms on the controller's share, p50, when they were set up at once).
        await asyncio.sleep(0)
        await asyncio.gather(*(self.prove_slot_lock(self._by_address[a]) for a in addresses))

    async def prove_slot_lock(self, station: BusWagerStation) -> None:
        """A lock frame to `station`, counted locked by its slot pair alone: its `locked` (a REPLY, or an ACK and a
        frame of its own) is a whole frame with a CRC, which no collision forges. Not written once the station was
        locked, unlocked or proven since; unanswered, or ACKed with no `locked` within the exchange's time, it is a
        `timeout` fault, as any unanswered lock."""
        link = self.link
        if link is None or not station._online or not station.locked_by_slot_alone:
            return
        station.proven = proven = asyncio.Event()
        why = "ACKed, but no `locked` followed"
        try:
            await link.send_to(station.address, {"cmd": "lock"}, still=lambda: station.locked_by_slot_alone)
            if station.locked_by_slot_alone:
                # ACKed, not answered: its `locked` comes in a frame of its own after what it had queued.
                async with asyncio.timeout(self.settings.ack_timeout * (self.settings.retries + 1)):
                    await proven.wait()
        except LinkError as exc:
            why = str(exc)
        except TimeoutError:
            pass
        if station.locked_by_slot_alone:  # neither proven nor locked, unlocked or relocked since
            station.fault("timeout", f"lock: its slot pair was never confirmed by a frame of its own: {why}")

    async def commands_done(self) -> None:
        """Return once every command to several stations under way has ended, its fallbacks and proofs included."""
        while self._lock_tasks:
            await asyncio.wait(list(self._lock_tasks))

    def confirmed(self, address: int, code: int = GROUP_LOCK) -> None:
        waiter = self._awaiting[code].get(address)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _group_line(self, version: int = VERSION_3) -> bool:
        """Whether the line may use GROUP frames of `version`: every station on it that answers speaks it. A v1 or v2
        station does not know the slot window and could talk into it (docs/protocol.md section 13, "Negotiation"); a
        v3 station ignores a GROUP unlock, and would hold every unlock of the line up for a window's timeout (section
        14)."""
        live = [s for s in self._stations.values() if s._online]
        return bool(live) and all(s.protocol_version >= version for s in live)

    def unlock_together(self, station: BusWagerStation) -> asyncio.Future[None]:
        """Join the GROUP unlock of every station whose unlock() is called in this turn of the event loop (the table's
        opening and each round's reopening unlock all of them at once); done once this station confirmed or was
        unlocked on its own."""
        loop = asyncio.get_running_loop()
        if not self._gathering_unlock:
            loop.call_soon(self._start_unlock)
        done = self._gathering_unlock.get(station.address)
        if done is None:
            done = self._gathering_unlock[station.address] = loop.create_future()
        return done

    def _start_unlock(self) -> None:
        batch, self._gathering_unlock = self._gathering_unlock, {}
        link = self.link
        if self._group_line(VERSION_4) and not self._window_open() and link is not None and link.answers_due():
            lock = self._group_when_clear(batch, GROUP_UNLOCK)
        elif self._group_line(VERSION_4) and not self._window_open():
            lock = self._group_lock(batch, self._send_group(batch, GROUP_UNLOCK), GROUP_UNLOCK)
        else:
            # A station on the line that does not speak v4 (or another GROUP window still open): today's addressed
            # unlocks, each answered by its REPLY.
            lock = self._unlock_each(batch, sorted(batch))
        task = asyncio.get_running_loop().create_task(lock, name=f"driver:{self.device_id}:unlock")
        self._lock_tasks.add(task)
        task.add_done_callback(self._lock_tasks.discard)

    def _window_open(self) -> bool:
        """Whether a GROUP frame's slot window is open on the line: one window at a time (the parser matches the pairs
        of one GROUP frame)."""
        return any(self._awaiting.values())

    def light_together(self, station: BusWagerStation, on: bool) -> asyncio.Future[None]:
        """Join the GROUP light (`on`) of every station whose light_on()/light_off() is called in this turn of the loop
        (the table's opening tells every station what its light must show); done once this station answered."""
        loop = asyncio.get_running_loop()
        if not self._gathering_light:
            loop.call_soon(self._start_light)
        batch = self._gathering_light.setdefault(on, {})
        done = batch.get(station.address)
        if done is None:
            done = batch[station.address] = loop.create_future()
        return done

    def _start_light(self) -> None:
        batches, self._gathering_light = self._gathering_light, {}
        task = asyncio.get_running_loop().create_task(self._lights(batches), name=f"driver:{self.device_id}:light")
        self._lock_tasks.add(task)
        task.add_done_callback(self._lock_tasks.discard)

    async def _lights(self, batches: dict[bool, dict[int, asyncio.Future[None]]]) -> None:
        """One GROUP light per state asked for (out first, then on), one window after the other; a line that cannot take
        it (a station that does not speak v4, another window open) gets today's addressed `light` frames."""
        for on in sorted(batches):
            batch = batches[on]
            if self._group_line(VERSION_4) and not self._window_open():
                await self._group_when_clear(batch, GROUP_LIGHT, on)
            else:
                try:
                    await asyncio.gather(*(self._by_address[a].alone(GROUP_LIGHT, on) for a in sorted(batch)))
                finally:
                    for done in batch.values():
                        if not done.done():
                            done.set_result(None)

    async def _group_when_clear(
        self, batch: dict[int, asyncio.Future[None]], code: int = GROUP_LOCK, on: bool | None = None
    ) -> None:
        """The GROUP frame once the line is clear for it (BusLink.clear_for_group): no answer to an addressed frame
        still due, no other window open; on a line that cannot take a GROUP lock (a v1 or v2 station on it), v2's
        broadcast lock, whose slots the same rule guards. Addressed frames are held meanwhile, so a heartbeat due now
        goes after the window and a lock never waits behind one. A lock that finds a window still open at its end on the
        line plus a quarter of the ACK timeout (a station missed its slot: the host's window stays open to the ACK
        timeout) goes as v2's broadcast lock at once, as before; an unlock or a light then goes to each station on its
        own."""
        link = self.link
        if link is None:
            await self._group_lock(batch, None, code, on)
            return
        link.hold()
        try:
            clear = await link.clear_for_group(self.settings.ack_timeout / 4)
            if code == GROUP_LOCK:
                group = clear and self._group_line() and not self._awaiting_unlocked and not self._awaiting[GROUP_LIGHT]
            else:
                group = clear and self._group_line(VERSION_4) and not self._window_open()
            waiters = self._send_group(batch, code, on) if group else None
        finally:
            link.unhold()
        if group or link.closed.is_set():
            await self._group_lock(batch, waiters, code, on)  # waiters None: the line closed, each lock reported
        elif code == GROUP_LOCK:
            await self._v2_broadcast_lock(batch)
        else:
            try:
                await asyncio.gather(*(self._by_address[a].alone(code, on) for a in sorted(batch)))
            finally:
                for done in batch.values():
                    if not done.done():
                        done.set_result(None)

    async def _unlock_each(self, batch: dict[int, asyncio.Future[None]], addresses: list[int]) -> None:
        try:
            await asyncio.gather(*(self._by_address[a].unlock_alone() for a in addresses))
        finally:
            for done in batch.values():
                if not done.done():
                    done.set_result(None)

    def _send_group(
        self, batch: dict[int, asyncio.Future[None]], code: int = GROUP_LOCK, on: bool | None = None
    ) -> dict[int, asyncio.Future[None]] | None:
        """Write the GROUP frame naming `batch` and open the slot window: the confirmations awaited, or None when the
        line is closed (every lock is then settled as unanswered, as an addressed lock's would be)."""
        link = self.link
        if link is None or link.closed.is_set():
            return None
        loop = asyncio.get_running_loop()
        awaiting = self._awaiting[code]
        waiters = {a: awaiting.setdefault(a, loop.create_future()) for a in sorted(batch)}
        try:
            link.send_group(code, waiters, on)
        except LinkError:
            self._forget_waiters(link, waiters, code)
            return None
        return waiters

    def _forget_waiters(self, link: BusLink, waiters: dict[int, asyncio.Future[None]], code: int = GROUP_LOCK) -> None:
        link.close_slots()
        awaiting = self._awaiting[code]
        for a in waiters:
            awaiting.pop(a, None)

    async def _group_lock(
        self,
        batch: dict[int, asyncio.Future[None]],
        waiters: dict[int, asyncio.Future[None]] | None,
        code: int = GROUP_LOCK,
        on: bool | None = None,
    ) -> None:
        """One v3 GROUP frame names every station in `batch`; each confirms with two bytes in its slot (taken by the
        link as the station's `locked`). A station not heard in its slot by the ACK timeout (it missed the frame,
        collided, or had an event of its own to send first) is locked on its own with a lock frame of its own,
        retried and reported as any command (a `timeout` fault when it never answers)."""
        link = self.link
        try:
            name = {GROUP_LOCK: "lock", GROUP_UNLOCK: "unlock"}.get(code, "light")
            if waiters is None or link is None:
                for address in sorted(batch):
                    self._by_address[address].fault(
                        "timeout", f"{name}: the line closed before the GROUP {name} frame left"
                    )
                return
            try:
                # The link reads what already arrived before the window closes: after a stall of the event loop the
                # confirmations are there but not yet read.
                await link.await_slots(list(waiters.values()), self.settings.ack_timeout)
            finally:
                self._forget_waiters(link, waiters, code)
            missed = [a for a in sorted(waiters) if not waiters[a].done()]
            if code == GROUP_LOCK:
                self._prove_slot_locks([a for a in sorted(waiters) if self._by_address[a].locked_by_slot_alone])
            if missed:
                log.info(f"stations missed their {name} slot; sending each its own", line=self.device_id, missed=missed)
                stations = [self._by_address[a] for a in missed]
                await asyncio.gather(*(s.alone(code, on) for s in stations))
        finally:
            for done in batch.values():
                if not done.done():
                    done.set_result(None)

    async def _v2_broadcast_lock(self, batch: dict[int, asyncio.Future[None]]) -> None:
        """One lock frame names every station in `batch`; each confirms with its own `locked` (ACKed by the host
        as any event). Stations that did not answer within the ACK timeout are named again, up to `retries`
        more times; a station that never answers is reported as its own lock would be (a `timeout` fault)."""
        loop = asyncio.get_running_loop()
        pending = sorted(batch)
        try:
            for attempt in range(self.settings.retries + 1):
                link = self.link
                if link is not None and attempt and link.answers_due():
                    # The first broadcast waited for the answers due (_start_broadcast); one naming stations again
                    # waits by the same rule: a heartbeat's answer meanwhile would land on the slots.
                    link.hold()
                    try:
                        await link.clear_for_group(self.settings.ack_timeout / 4)
                    finally:
                        link.unhold()
                if link is None or link.closed.is_set():
                    break
                waiters = {a: self._awaiting_locked.setdefault(a, loop.create_future()) for a in pending}
                try:
                    await link.broadcast({"cmd": "lock", "stations": pending}, list(waiters.values()))
                except LinkError:
                    break
                # Every station has its slot after the frame; the ACK timeout covers the last slot of a full line. What
                # arrived by then is read first, as for a GROUP frame's slots: after a stall of the loop the `locked`
                # frames wait unread on the port, and the stations would be named again for answers already given.
                await link.await_slots(list(waiters.values()), self.settings.ack_timeout)
                pending = [a for a in pending if not waiters[a].done()]
                for a in list(self._awaiting_locked):
                    if self._awaiting_locked[a].done():
                        del self._awaiting_locked[a]
                if not pending:
                    return
            for address in pending:
                self._by_address[address].fault(
                    "timeout", f"lock: no `locked` answer to {self.settings.retries + 1} broadcast lock frames"
                )
        finally:
            for address in pending:
                self._awaiting_locked.pop(address, None)
            for done in batch.values():
                if not done.done():
                    done.set_result(None)
