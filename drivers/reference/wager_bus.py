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
from drivers.reference.bus_commands import BusCommands
from drivers.reference.bus_link import BusLink, identify_window
from drivers.reference.device import Translator
from drivers.reference.framing import GROUP_LIGHT, GROUP_LOCK, GROUP_UNLOCK, VERSION_2, VERSION_3, VERSION_4
from drivers.reference.link import Link
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
        # "No more bets" outranks a reopening still on its way: a station that missed its slot of the GROUP unlock is
        # unlocked on its own only after the window's ACK timeout, by when the dealer may have locked the table; an
        # unlock frame written after that lock would open the spots again (the lock-out of 643a/655a). Each lock()
        # counts here; an unlock asked before the latest lock is not written (_send).
        self._locks_asked = 0
        self._unlock_asked_at = 0
        # The same for the seat light: the state last asked (light_on/light_off) is the one the lamp must end in; a
        # station's own `light` frame after a missed GROUP light slot is not written once another state was asked.
        self._light_asked: bool | None = None
        # Locked by its two slot bytes alone since the last lock(): a damaged frame of the station's own can pass for
        # them (docs/protocol.md section 13, "Collisions and noise"), so once the window closed the host locks it with
        # a frame of its own, whose answer proves it (BusCommands.prove_slot_lock); a wager meanwhile relocks it.
        self.locked_by_slot_alone = False
        self._slot_answer = False  # the slot pair read, its `locked` not yet translated
        self.proven = asyncio.Event()  # set as a `locked` of its own proves the pair (BusCommands.prove_slot_lock)

    @property
    def bus(self) -> ReferenceWagerBus:
        return self._bus

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
        if message.get("cmd") == "unlock":
            await self._on_the_bus(link).send_to(self.address, message, still=self._unlock_wanted)
        elif message.get("cmd") == "light":
            on = message.get("on")
            await self._on_the_bus(link).send_to(self.address, message, still=lambda: self._light_wanted(on))
        else:
            await self._on_the_bus(link).send_to(self.address, message)

    def _light_wanted(self, on: object) -> bool:
        if self._light_asked is None or self._light_asked == on:
            return True
        log.info("light not sent: the other state was asked since", device=self.device_id, on=on)
        return False

    def _unlock_wanted(self) -> bool:
        """Checked as the unlock frame is about to be written (its turn on the line taken): no lock() since the
        unlock() it carries out."""
        if self._locks_asked == self._unlock_asked_at:
            return True
        log.info("unlock not sent: the station was locked since it was asked", device=self.device_id)
        return False

    def _use_protocol(self, link: Link, version: int) -> None:
        link = self._on_the_bus(link)
        self.protocol_version = version
        link.peer_versions[self.address] = min(version, VERSION_3)  # v4 sends v3 frames

    def _on_the_bus(self, link: Link) -> BusLink:
        """A station's link is its line's BusLink (_open_link): anything else is refused, not written to."""
        if not isinstance(link, BusLink):
            raise TypeError(
                f"{self.device_id}: a wager bus station talks on its line's BusLink, not a {type(link).__name__}"
            )
        return link

    # --- "no more bets": one broadcast for the stations that speak v2 ---------------------------------

    async def lock(self) -> None:
        self._locks_asked += 1
        self.locked_by_slot_alone = self._slot_answer = False
        if self.protocol_version >= VERSION_2 and self._online and self._bus.settings.broadcast_lock:
            await self._bus.lock_together(self)
        else:
            await super().lock()

    async def lock_alone(self) -> None:
        """A lock frame to this station alone: for a station that did not confirm in its slot."""
        await self.alone(GROUP_LOCK)

    # --- the opening and each round's reopening: one GROUP unlock on a v4 line (docs/protocol.md section 14) ---------

    async def unlock(self) -> None:
        self._unlock_asked_at = self._locks_asked
        self.locked_by_slot_alone = self._slot_answer = False
        if self.protocol_version >= VERSION_4 and self._online and self._bus.settings.broadcast_lock:
            await self._bus.unlock_together(self)
        else:
            await super().unlock()

    async def unlock_alone(self) -> None:
        """An unlock frame to this station alone: on a line that cannot take a GROUP unlock, or for a station that did
        not confirm in its slot."""
        await self.alone(GROUP_UNLOCK)

    # --- the opening's seat lights: one GROUP light per state on a v4 line (docs/protocol.md section 14) ------------

    async def light_on(self) -> None:
        self._light_asked = True
        await self._light_group(True)

    async def light_off(self) -> None:
        self._light_asked = False
        await self._light_group(False)

    async def _light_group(self, on: bool) -> None:
        if self.protocol_version >= VERSION_4 and self._online and self._bus.settings.broadcast_lock:
            await self._bus.light_together(self, on)
        else:
            await self.alone(GROUP_LIGHT, on)

    async def alone(self, code: int, on: bool | None = None) -> None:
        """The command of GROUP `code` in a frame to this station alone: for a station that did not answer in its
        slot, or on a line that cannot take the GROUP frame."""
        if code == GROUP_LOCK:
            await super().lock()
        elif code == GROUP_UNLOCK:
            await super().unlock()
        elif on:
            await super().light_on()
        else:
            await super().light_off()

    def slot_confirmed(self, code: int) -> None:
        """This station's slot pair for a GROUP frame with command `code` was read (before its answer is translated)."""
        if code == GROUP_LOCK:
            self.locked_by_slot_alone = self._slot_answer = True

    def translators(self) -> Mapping[str, Translator]:
        table = dict(super().translators())
        plain_locked, plain_unlocked, plain_light = table["locked"], table["unlocked"], table["light"]
        plain_wager = table["wager"]

        def wager(message: Mapping[str, Any]) -> DeviceEvent | None:
            if self.locked_by_slot_alone:
                # A locked station senses no wager, and a station with a wager waiting does not confirm in its slot: the
                # pair was not this station's (a damaged frame of its own, or noise). The wager goes on to the
                # controller, which refuses one placed after "no more bets".
                self.locked_by_slot_alone = False
                log.warning(
                    "wager from a station its slot pair counted as locked: the pair was false, locking it on its own",
                    device=self.device_id,
                    address=self.address,
                    spot=message.get("spot"),
                )
                self._bus.relock(self)
            return plain_wager(message)

        def locked(message: Mapping[str, Any]) -> DeviceEvent | None:
            self._bus.confirmed(self.address, GROUP_LOCK)
            if self._slot_answer:
                self._slot_answer = False
            elif self.locked_by_slot_alone:
                # The answer to prove_slot_lock: the lock is proven, and the controller has it already.
                self.locked_by_slot_alone = False
                self.proven.set()
                return None
            return plain_locked(message)

        def unlocked(message: Mapping[str, Any]) -> DeviceEvent | None:
            self._bus.confirmed(self.address, GROUP_UNLOCK)
            return plain_unlocked(message)

        def light(message: Mapping[str, Any]) -> DeviceEvent | None:
            # Whatever the lamp shows: a station whose lamp does not show what was asked answers with this event after
            # the window, and that is its answer (the state journaled); a frame of its own would get the same.
            self._bus.confirmed(self.address, GROUP_LIGHT)
            return plain_light(message)

        table["locked"], table["unlocked"], table["light"], table["wager"] = locked, unlocked, light, wager
        return table

    async def _went_silent(self, link: Link, reason: str) -> None:
        pass  # the line stays up for the other stations

    async def _disconnect(self) -> None:
        self._link = None  # the line is the bus's to close


class ReferenceWagerBus(BusCommands, DeviceBase):
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
        self._init_commands()

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
            baud=self.settings.baudrate,
            on_slot=self._on_slot,
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

    def _on_slot(self, src: int, code: int) -> None:
        station = self._by_address.get(src)
        if station is not None:
            station.slot_confirmed(code)

    def _on_noise(self, discarded_bytes: int, bad_frames: int) -> None:
        self._report_noise(
            f"line shared by the wager bus: {discarded_bytes} bytes discarded, {bad_frames} bad frames so far"
        )
