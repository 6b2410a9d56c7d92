"""Reference-protocol wager stations sharing one multi-drop serial line (docs/protocol.md, "Multi-drop lines").

`ReferenceWagerBus` owns the port and its supervision; `stations` holds one `BusWagerStation` per seat, each
an ordinary interfaces.WagerStation (device id `wager_station_<seat>`) that the controller starts, stops,
locks and unlocks as if it had a line of its own. A station that stops answering goes offline alone; a
line that goes away takes every station with it. Each station's seat light (`light_on`/`light_off`, confirmed by
SeatLight) is the single station's, addressed to that station on the line.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import structlog
from pydantic import BaseModel, ConfigDict, Field, model_validator

from drivers.interfaces import DeviceFault, DeviceOffline, DeviceOnline, EventSink, WagerStation
from drivers.link import BusLink, LinkError
from drivers.reconnect import BACKOFF_FIRST, BACKOFF_MAX, reconnect_forever
from drivers.reference.base import IDENTIFY_TIMEOUT, NOISE_REPORT_INTERVAL, START_WAIT
from drivers.reference.wager_station import ReferenceWagerStation, ReferenceWagerStationSettings
from drivers.serial_port import open_serial
from drivers.tasks import cancel_and_wait

log = structlog.get_logger(__name__)


@runtime_checkable
class WagerBus(Protocol):
    """A driver that puts several seats' wager stations on one line: the controller uses `stations`."""

    device_id: str

    @property
    def stations(self) -> Mapping[int, WagerStation]: ...


class BusStationSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    seat: int = Field(ge=1, description="Seat (betting position) this station senses")
    address: int | None = Field(default=None, ge=1, le=254, description="Address on the line; default: the seat")

    @property
    def bus_address(self) -> int:
        return self.seat if self.address is None else self.address


class ReferenceWagerBusSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    driver: Literal["reference-wager-bus"] = "reference-wager-bus"
    port: str = Field(min_length=1, description="Serial port path of the line, ideally a stable udev name")
    baudrate: int = Field(default=115200, gt=0)
    stations: list[BusStationSettings] = Field(
        default_factory=list, description="The stations on the line: {seat, address}; address defaults to the seat"
    )
    seats: list[int] = Field(default_factory=list, description="Shorthand for stations whose address is their seat")
    ack_timeout: float = Field(default=0.1, gt=0, description="Seconds to wait for an ACK before resending")
    retries: int = Field(default=3, ge=0, le=10)
    heartbeat_interval: float = Field(
        default=2.0, ge=0, description="Seconds between pings to each station while idle; 0 disables the heartbeat"
    )
    debounce_ms: int = Field(default=30, ge=0, le=1000, description="As for reference-wager-station")

    @model_validator(mode="after")
    def _distinct(self) -> ReferenceWagerBusSettings:
        entries = self.all_stations()
        if not entries:
            raise ValueError("a wager bus needs `stations` (or `seats`): name the seats on the line")
        for what, values in (("seat", [e.seat for e in entries]), ("address", [e.bus_address for e in entries])):
            doubled = sorted({v for v in values if values.count(v) > 1})
            if doubled:
                raise ValueError(f"each station on the line needs its own {what}; doubled: {doubled}")
        return self

    def all_stations(self) -> list[BusStationSettings]:
        return [*self.stations, *(BusStationSettings(seat=seat) for seat in self.seats)]


class BusWagerStation(ReferenceWagerStation):
    """One seat's station on a bus: the wager station's vocabulary and debounce, the bus's line."""

    def __init__(self, device_id: str, settings: ReferenceWagerStationSettings, bus: ReferenceWagerBus) -> None:
        super().__init__(device_id, settings)
        self.address = settings.address
        self._bus = bus
        self._offline_reason = ""

    # --- Device protocol: the station shares the bus's lifetime --------------------------------------

    async def start(self, sink: EventSink) -> None:
        """Start the bus if no seat has yet; returns once this station's first attempt settled."""
        self._sink = sink
        self._stopping = False
        await self._bus.attach(self)
        # The bus may have reached this station before this seat was started (another seat started the
        # line): what it found went to no sink, so tell this one.
        if self._online:
            self.emit(DeviceOnline(self.device_id, dict(self.identity)))
        elif self._online is False:
            self.emit(DeviceOffline(self.device_id, self._offline_reason))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(START_WAIT):
                await self._first_attempt.wait()

    async def stop(self) -> None:
        """Stop this seat; the line closes when the last started seat stops."""
        await super().stop()  # releases nothing but the debounce timers: the supervisor and link are the bus's
        self._sink = None
        await self._bus.detach(self)

    async def command(self, message: Mapping[str, Any]) -> bool:
        link = self._bus.link
        if link is None or not self._online:
            self.emit(DeviceFault(self.device_id, "offline", f"cannot send {message.get('cmd')}: device offline"))
            return False
        try:
            await link.send_to(self.address, message)
        except ValueError as exc:
            self.emit(DeviceFault(self.device_id, "bad_request", f"{message.get('cmd')}: {exc}"))
            return False
        except LinkError as exc:
            self.emit(DeviceFault(self.device_id, "timeout", f"{message.get('cmd')}: {exc}"))
            return False
        return True

    # --- this station on a live line ----------------------------------------------------------------

    async def serve(self, link: BusLink) -> None:
        """Identify and heartbeat this station until the line closes; a silent station is retried with backoff."""
        delay = BACKOFF_FIRST
        while not link.closed.is_set():
            reason = await self._identify(link)
            if reason is None:
                delay = BACKOFF_FIRST
                reason = await self._heartbeat(link)
            if link.closed.is_set():
                return  # the bus reports the line's end for every station at once
            self.set_offline(reason)
            self._first_attempt.set()
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX)

    async def _identify(self, link: BusLink) -> str | None:
        link.forget(self.address)  # a restarted station may begin again at the SEQ it last used
        self._identity_waiter = asyncio.get_running_loop().create_future()
        try:
            await link.send_to(self.address, {"cmd": "identify"})
            async with asyncio.timeout(IDENTIFY_TIMEOUT):
                self.identity = await self._identity_waiter
        except (LinkError, TimeoutError) as exc:
            return f"identify failed: {exc or 'no identity reply'}"
        finally:
            self._identity_waiter = None
        self._online = True
        log.info(
            "device online", device=self.device_id, port=self._bus.settings.port, address=self.address, **self.identity
        )
        self.emit(DeviceOnline(self.device_id, dict(self.identity)))
        self._first_attempt.set()
        return None

    async def _heartbeat(self, link: BusLink) -> str:
        interval = self.settings.heartbeat_interval
        while True:
            if not interval:
                await link.closed.wait()
                return link.close_reason
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval):
                    await link.closed.wait()
                return link.close_reason
            try:
                await link.send_to(self.address, {"cmd": "ping"})
            except LinkError as exc:
                return f"heartbeat: {exc}"

    def set_offline(self, reason: str) -> None:
        self._offline_reason = reason
        self._set_offline(reason)

    def line_noise(self, discarded_bytes: int, bad_frames: int) -> None:
        self.emit(
            DeviceFault(
                self.device_id,
                "line_noise",
                f"line shared by the wager bus: {discarded_bytes} bytes discarded, {bad_frames} bad frames so far",
            )
        )


class ReferenceWagerBus:
    """Wager stations on one line. Started and stopped through its stations (see BusWagerStation)."""

    Settings: ClassVar[type[ReferenceWagerBusSettings]] = ReferenceWagerBusSettings

    def __init__(self, device_id: str, settings: ReferenceWagerBusSettings) -> None:
        self.device_id = device_id
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
            )
            self._stations[entry.seat] = BusWagerStation(f"wager_station_{entry.seat}", station_settings, self)
        self._by_address = {s.address: s for s in self._stations.values()}
        self._attached: set[int] = set()
        self._supervisor: asyncio.Task[None] | None = None
        self._last_noise_report = float("-inf")

    @property
    def stations(self) -> Mapping[int, BusWagerStation]:
        """Seat -> that seat's station, in seat order."""
        return dict(sorted(self._stations.items()))

    # The bus also works as a plain Device (starting every seat with one sink), for tools that probe lines.
    async def start(self, sink: EventSink) -> None:
        await asyncio.gather(*(s.start(sink) for s in self._stations.values()))

    async def stop(self) -> None:
        await asyncio.gather(*(s.stop() for s in self._stations.values()))

    async def attach(self, station: BusWagerStation) -> None:
        self._attached.add(station.seat)
        if self._supervisor is None:
            for s in self._stations.values():
                s._first_attempt.clear()
            self._supervisor = asyncio.get_running_loop().create_task(
                self._supervise(), name=f"driver:{self.device_id}"
            )

    async def detach(self, station: BusWagerStation) -> None:
        self._attached.discard(station.seat)
        if self._attached or self._supervisor is None:
            return
        supervisor, self._supervisor = self._supervisor, None
        await cancel_and_wait(supervisor)
        for s in self._stations.values():
            s._online = None  # unknown until the line is served again

    # --- line supervision ---------------------------------------------------------------------------

    async def _supervise(self) -> None:
        await reconnect_forever(self._serve_line, self._went_down, self._crashed)

    def _went_down(self, reason: str) -> None:
        for station in self._stations.values():
            station.set_offline(reason)
            station._first_attempt.set()

    def _crashed(self, exc: Exception) -> None:
        log.exception("wager bus supervisor crashed", device=self.device_id)
        for station in self._stations.values():
            station.emit(DeviceFault(station.device_id, "driver_error", f"bus supervisor crashed: {exc!r}"))
            station.set_offline(f"driver error: {exc!r}")

    async def _serve_line(self) -> tuple[str, bool]:
        """Open the line and serve every station until it closes: why it ended, and whether it had opened."""
        try:
            reader, writer = await open_serial(self.settings.port, self.settings.baudrate)
        except (OSError, ValueError) as exc:
            return f"cannot open {self.settings.port}: {exc}", False
        link = BusLink(
            reader,
            writer,
            peers=self._by_address,
            on_data=self._on_data,
            on_noise=self._on_noise,
            ack_timeout=self.settings.ack_timeout,
            retries=self.settings.retries,
            name=f"driver:{self.device_id}",
        )
        self.link = link
        link.start()
        served = [
            asyncio.get_running_loop().create_task(s.serve(link), name=f"driver:{s.device_id}")
            for s in self._stations.values()
        ]
        try:
            await link.closed.wait()
            reason = link.close_reason
        finally:
            for task in served:
                await cancel_and_wait(task)
            self.link = None
            await link.close()
        return reason or "line closed", True

    def _on_data(self, src: int, payload: bytes) -> None:
        station = self._by_address.get(src)
        if station is not None:
            station._on_data(payload)

    def _on_noise(self, discarded_bytes: int, bad_frames: int) -> None:
        now = asyncio.get_running_loop().time()
        if now - self._last_noise_report < NOISE_REPORT_INTERVAL:
            return
        self._last_noise_report = now
        for station in self._stations.values():
            station.line_noise(discarded_bytes, bad_frames)
