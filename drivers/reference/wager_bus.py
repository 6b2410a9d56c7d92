"""Reference-protocol wager stations sharing one multi-drop serial line (docs/protocol.md, "Multi-drop lines").

`ReferenceWagerBus` (an interfaces.WagerBus) owns the port and its supervision; `stations` holds one
`BusWagerStation` per seat, each an ordinary interfaces.WagerStation (device id `wager_station_<seat>`) that the
controller starts, stops, locks and unlocks as if it had a line of its own. A station that stops answering goes
offline alone; a line that goes away takes every station with it. Each station's seat light (`light_on`/`light_off`,
confirmed by SeatLight) is the single station's, addressed to that station on the line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

import structlog

from drivers.base import DeviceBase
from drivers.interfaces import DeviceEvent, DeviceOffline, DeviceOnline, EventSink
from drivers.reference.bus_link import BusLink, identify_window
from drivers.reference.device import Translator
from drivers.reference.framing import GROUP_LOCK, VERSION_2, VERSION_3
from drivers.reference.link import Link, LinkError
from drivers.reference.wager_bus_settings import BusStationSettings, ReferenceWagerBusSettings
from drivers.reference.wager_station import ReferenceWagerStation, ReferenceWagerStationSettings
from drivers.serial_port import open_serial, unread_input
from drivers.tasks import cancel_and_wait

log = structlog.get_logger(__name__)

# The settings moved to wager_bus_settings.py; this module stays the driver's import path (its entry point) for both.
__all__ = ["BusStationSettings", "BusWagerStation", "ReferenceWagerBus", "ReferenceWagerBusSettings"]


class BusWagerStation(ReferenceWagerStation):
    """One seat's station on a bus: the wager station's vocabulary and debounce, the bus's line.

    The bus runs this station's sessions (identify, then heartbeat) while its line is open; a station that
    stops answering goes offline alone and is tried again with the usual backoff.
    """

    def __init__(self, device_id: str, settings: ReferenceWagerStationSettings, bus: ReferenceWagerBus) -> None:
        super().__init__(device_id, settings)
        self.address = settings.address
        self._bus = bus

    # --- lifetime: the station shares the bus's ------------------------------------------------------

    def _launch(self) -> None:
        """Start the bus if no seat has yet."""
        self._bus.attach(self)
        # The bus may have reached this station before this seat was started (another seat started the
        # line): what it found went to no sink, so tell this one.
        if self._online:
            self.emit(DeviceOnline(self.device_id, dict(self.identity)))
        elif self._online is False:
            self.emit(DeviceOffline(self.device_id, self._offline_reason))

    async def _end(self) -> None:
        """Stop this seat; the line closes when the last started seat stops."""
        self._sink = None
        await self._bus.detach(self)

    def _running(self) -> bool:
        link = self._bus.link
        return link is not None and not link.closed.is_set()

    def _went_down(self, reason: str) -> None:
        if self._running():
            super()._went_down(reason)
        # else the line itself went: the bus reports that for every station at once

    # --- the bus's line ------------------------------------------------------------------------------

    async def _open_link(self) -> str | None:
        link = self._bus.link
        if link is None or link.closed.is_set():
            return "line closed"
        link.forget(self.address)  # a restarted station may begin again at the SEQ it last used
        self._link = link
        return None

    async def _send(self, link: Link, message: Mapping[str, Any]) -> None:
        await self._on_the_bus(link).send_to(self.address, message)

    def _use_protocol(self, link: Link, version: int) -> None:
        link = self._on_the_bus(link)
        self.protocol_version = version
        link.peer_versions[self.address] = version

    def _on_the_bus(self, link: Link) -> BusLink:
        """A station's link is its line's BusLink (_open_link): anything else is refused, not written to."""
        if not isinstance(link, BusLink):
            raise TypeError(
                f"{self.device_id}: a wager bus station talks on its line's BusLink, not a {type(link).__name__}"
            )
        return link

    # --- "no more bets": one broadcast for the stations that speak v2 ---------------------------------

    async def lock(self) -> None:
        if self.protocol_version >= VERSION_2 and self._online and self._bus.settings.broadcast_lock:
            await self._bus.lock_together(self)
        else:
            await super().lock()

    async def lock_alone(self) -> None:
        """A lock frame to this station alone: for a station that did not confirm in its slot."""
        await super().lock()

    def translators(self) -> Mapping[str, Translator]:
        table = dict(super().translators())
        plain = table["locked"]

        def locked(message: Mapping[str, Any]) -> DeviceEvent | None:
            self._bus.confirmed(self.address)
            return plain(message)

        table["locked"] = locked
        return table

    async def _went_silent(self, link: Link, reason: str) -> None:
        pass  # the line stays up for the other stations

    async def _disconnect(self) -> None:
        self._link = None  # the line is the bus's to close


class ReferenceWagerBus(DeviceBase):
    """Wager stations on one line. Started and stopped through its stations (see BusWagerStation).

    The bus is a device whose session is the line: what it reports (the line went away, line noise, a crash)
    each of its stations reports, under its own device id.
    """

    Settings: ClassVar[type[ReferenceWagerBusSettings]] = ReferenceWagerBusSettings

    def __init__(self, device_id: str, settings: ReferenceWagerBusSettings) -> None:
        super().__init__(device_id)
        self.settings = settings
        self.link: BusLink | None = None
        self._stations: dict[int, BusWagerStation] = {}
        for entry in settings.all_stations():
            station_settings = ReferenceWagerStationSettings(
                port=settings.port,
                address=entry.bus_address,
                baudrate=settings.baudrate,
                ack_timeout=settings.ack_timeout,
                retries=settings.retries,
                heartbeat_interval=settings.heartbeat_interval,
                seat=entry.seat,
                debounce_ms=settings.debounce_ms,
                protocol=settings.protocol,
            )
            self._stations[entry.seat] = BusWagerStation(f"wager_station_{entry.seat}", station_settings, self)
        self._by_address = {s.address: s for s in self._stations.values()}
        self._attached: set[int] = set()
        # Stations whose lock() joined the broadcast being gathered this turn of the loop, and the answers awaited.
        self._gathering: dict[int, asyncio.Future[None]] = {}
        self._awaiting_locked: dict[int, asyncio.Future[None]] = {}
        self._lock_tasks: set[asyncio.Task[None]] = set()

    @property
    def stations(self) -> Mapping[int, BusWagerStation]:
        """Seat -> that seat's station, in seat order."""
        return dict(sorted(self._stations.items()))

    # The bus also works as a plain Device (starting every seat with one sink), for tools that probe lines.
    async def start(self, sink: EventSink) -> None:
        await asyncio.gather(*(s.start(sink) for s in self._stations.values()))

    async def stop(self) -> None:
        await asyncio.gather(*(s.stop() for s in self._stations.values()))

    def attach(self, station: BusWagerStation) -> None:
        self._attached.add(station.seat)
        if not self.supervised:
            for s in self._stations.values():
                s._first_attempt.clear()
            self._stopping = False
            self._launch()

    async def detach(self, station: BusWagerStation) -> None:
        self._attached.discard(station.seat)
        if self._attached or not self.supervised:
            return
        self._stopping = True
        await self._end()
        for s in self._stations.values():
            s._online = None  # unknown until the line is served again

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
        if self._group_line():
            # The GROUP frame is written here, in the turn of the loop after the stations' lock() calls, not in the
            # task's first step a turn later: the journal's commit starts two turns after the locks
            # (controller/shell/service.py, lock_frames_out) and would hold the GIL while the frame waited.
            lock = self._group_lock(batch, self._send_group(batch))
        else:
            lock = self._v2_broadcast_lock(batch)
        task = asyncio.get_running_loop().create_task(lock, name=f"driver:{self.device_id}:lock")
        self._lock_tasks.add(task)
        task.add_done_callback(self._lock_tasks.discard)

    def confirmed(self, address: int) -> None:
        waiter = self._awaiting_locked.get(address)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _group_line(self) -> bool:
        """Whether the line may use v3 GROUP frames: every station on it that answers speaks v3. A v1 or v2 station
        does not know the slot window and could talk into it (docs/protocol.md section 13, "Negotiation")."""
        live = [s for s in self._stations.values() if s._online]
        return bool(live) and all(s.protocol_version == VERSION_3 for s in live)

    def _send_group(self, batch: dict[int, asyncio.Future[None]]) -> dict[int, asyncio.Future[None]] | None:
        """Write the GROUP frame naming `batch` and open the slot window: the confirmations awaited, or None when the
        line is closed (every lock is then settled as unanswered, as an addressed lock's would be)."""
        link = self.link
        if link is None or link.closed.is_set():
            return None
        loop = asyncio.get_running_loop()
        waiters = {a: self._awaiting_locked.setdefault(a, loop.create_future()) for a in sorted(batch)}
        try:
            link.send_group(GROUP_LOCK, waiters)
        except LinkError:
            self._forget_waiters(link, waiters)
            return None
        return waiters

    def _forget_waiters(self, link: BusLink, waiters: dict[int, asyncio.Future[None]]) -> None:
        link.close_slots()
        for a in waiters:
            self._awaiting_locked.pop(a, None)

    async def _group_lock(
        self, batch: dict[int, asyncio.Future[None]], waiters: dict[int, asyncio.Future[None]] | None
    ) -> None:
        """One v3 GROUP frame names every station in `batch`; each confirms with two bytes in its slot (taken by the
        link as the station's `locked`). A station not heard in its slot by the ACK timeout (it missed the frame,
        collided, or had an event of its own to send first) is locked on its own with a lock frame of its own,
        retried and reported as any command (a `timeout` fault when it never answers)."""
        link = self.link
        try:
            if waiters is None or link is None:
                for address in sorted(batch):
                    self._by_address[address].fault("timeout", "lock: the line closed before the GROUP lock frame left")
                return
            try:
                # The link reads what already arrived before the window closes: after a stall of the event loop the
                # confirmations are there but not yet read.
                await link.await_slots(list(waiters.values()), self.settings.ack_timeout)
            finally:
                self._forget_waiters(link, waiters)
            missed = [a for a in sorted(waiters) if not waiters[a].done()]
            if missed:
                log.info("stations missed their lock slot; locking them one by one", line=self.device_id, missed=missed)
                await asyncio.gather(*(self._by_address[a].lock_alone() for a in missed))
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
            for _attempt in range(self.settings.retries + 1):
                link = self.link
                if link is None or link.closed.is_set():
                    break
                waiters = {a: self._awaiting_locked.setdefault(a, loop.create_future()) for a in pending}
                try:
                    await link.broadcast({"cmd": "lock", "stations": pending})
                except LinkError:
                    break
                # Every station has its slot after the frame; the ACK timeout covers the last slot of a full line.
                # asyncio.wait, not gather under a timeout: that would cancel the waiters and count them as answered.
                await asyncio.wait(waiters.values(), timeout=self.settings.ack_timeout)
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

    # --- what the line reports, every station reports ------------------------------------------------

    def emit(self, event: DeviceEvent) -> None:
        for station in self._stations.values():
            station.emit(replace(event, device_id=station.device_id))

    def _set_offline(self, reason: str) -> None:
        for station in self._stations.values():
            station._set_offline(reason)

    def _settle(self) -> None:
        for station in self._stations.values():
            station._settle()

    # --- the line's session --------------------------------------------------------------------------

    async def _connect(self) -> str | None:
        try:
            reader, writer = await open_serial(self.settings.port, self.settings.baudrate)
        except (OSError, ValueError) as exc:
            return f"cannot open {self.settings.port}: {exc}"
        self.link = BusLink(
            reader,
            writer,
            peers=self._by_address,
            on_data=self._on_data,
            on_noise=self._on_noise,
            ack_timeout=self.settings.ack_timeout,
            retries=self.settings.retries,
            name=f"driver:{self.device_id}",
            in_waiting=unread_input(writer),
            identifying=identify_window(self.settings.baudrate, self.settings.ack_timeout),
        )
        self.link.start()
        return None

    async def _serve(self) -> str:
        """Serve every station (each with its own sessions and backoff) until the line closes."""
        link = self.link
        if link is None:  # only served after _connect opened it
            return "the line is not open"
        served = [
            asyncio.get_running_loop().create_task(s._supervise(), name=f"driver:{s.device_id}")
            for s in self._stations.values()
        ]
        try:
            await link.closed.wait()
        finally:
            for task in served:
                await cancel_and_wait(task)
        return link.close_reason or "line closed"

    async def _disconnect(self) -> None:
        link, self.link = self.link, None
        if link is not None:
            await link.close()

    def _on_data(self, src: int, payload: bytes) -> None:
        station = self._by_address.get(src)
        if station is not None:
            station._on_data(payload)

    def _on_noise(self, discarded_bytes: int, bad_frames: int) -> None:
        self._report_noise(
            f"line shared by the wager bus: {discarded_bytes} bytes discarded, {bad_frames} bad frames so far"
        )
