"""Simulated wager stations on one multi-drop line: one pty, every station hearing everything the host sends.

Each station is a WagerStationSim with its own address, link and fault API; on the line it behaves as
docs/protocol.md ("Multi-drop lines") says: it answers only frames addressed to it and puts `"src"` in
every frame it sends. The bus adds the faults of the line itself: unplug, replug and garbage.

Each station keeps its seat light (`.light`, `.light_history`, `wait_light`) as a single station does. Pulling
the line (`WagerBusSim.unplug`) leaves the stations powered, so their lights stay as they were; a station's own
`unplug`/`replug` is a power cycle that puts its light out.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from drivers.interfaces import WAGER_BUS_ID
from drivers.reference.framing import (
    COMPACT_VERSIONS,
    SLOT_PERIOD,
    SLOT_TURNAROUND,
    Frame,
    FrameParser,
    Kind,
    decode_message,
)
from drivers.sim.line import LineTiming, at_time, default_timing
from drivers.sim.pty import PtyEndpoint, StableName
from drivers.sim.wager_station import WagerStationSim
from drivers.tasks import cancel_and_wait, simulator_task


class _Drop:
    """One station's connection to the line: hears a copy of every byte, writes onto the shared line."""

    def __init__(self, bus: WagerBusSim) -> None:
        self._bus = bus
        self.reader = asyncio.StreamReader()
        self._fed = 0
        self._taken = 0

    def feed(self, data: bytes) -> None:
        self._fed += len(data)
        self.reader.feed_data(data)

    async def read(self, n: int = -1) -> bytes:
        data = await self.reader.read(n)
        self._taken += len(data)
        return data

    def unread(self) -> int:
        """What this station has not read yet of what the host sent: its own share, and the line's bytes not yet fanned
        out to the stations (PtyEndpoint.unread). OSError once the line is gone."""
        endpoint = self._bus._endpoint
        if endpoint is None:
            raise OSError("the line is unplugged")
        return self._fed - self._taken + endpoint.unread()

    def write(self, data: bytes) -> None:
        # One write per frame and one event loop: frames from different stations never interleave.
        self._bus.write(data)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        """Closing a station's link disconnects its drop, not the line."""


class BusStationSim(WagerStationSim):
    """A wager station on a bus. unplug()/replug() pull and restore this station's drop alone."""

    def __init__(self, bus: WagerBusSim, seat: int, address: int, protocols: tuple[int, ...] = (1, 2, 3, 4)) -> None:
        super().__init__(f"wager_station_{seat}", seat, address)
        self.configure_line(protocols, bus.timing)
        self._bus = bus
        self._drop: _Drop | None = None
        # Slot confirmations to send with a wrong check value: what a collision or a burst of noise does to them on a
        # real line (a pty cannot collide), so tests see the host refuse them.
        self.damaged_slots = 0
        # GROUP frames this station does not hear (noise on its drop): it neither acts on them nor knows their window.
        self.missed_groups = 0
        # Every slot confirmation this station put on the line, (slot, bytes), in order.
        self.slot_history: list[tuple[int, bytes]] = []

    @property
    def port(self) -> str:
        return self._bus.port

    @property
    def plugged(self) -> bool:
        return self._drop is not None and self._bus.plugged

    @property
    def drop(self) -> _Drop | None:
        """Where the line delivers bytes, while this station listens (not hung, not unplugged)."""
        if self._drop is None or self._link is None or self._link.closed.is_set():
            return None
        return self._drop

    async def start(self) -> None:
        if self._bus.plugged:
            await self._plug()

    async def send(self, message: Mapping[str, Any]) -> None:
        await self._after_window()
        if self._link is not None and self._link.version in COMPACT_VERSIONS:
            await super().send(message)  # a v2 header names the sender
        else:
            await super().send({**message, "src": self.address})

    def inject_garbage(self, data: bytes) -> None:
        self._bus.inject_garbage(data)

    async def _plug(self) -> None:
        self._drop = _Drop(self._bus)
        link = self._attach(self._drop, self._drop, self._drop.unread)
        link.slot_writer = self._write_in_slot
        link.frame_left = self._frame_left

    async def _frame_left(self) -> None:
        """Return when the frame this station just queued has left the shared return pair. A real station listens
        before it talks and starts its ACK timer from its frame's last byte: timed from the queueing, seven 217-byte
        identities (133 ms at 115200 baud) outlasted the 100 ms timer and two to four were sent twice at every start."""
        endpoint = self._bus._endpoint
        if endpoint is None or not self._bus.timing.paced:
            return
        left: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def gone() -> None:
            if not left.done():
                left.set_result(None)

        # The line is first in, first out: when everything queued so far has left, so has this frame, queued last.
        endpoint.outbound.after(gone)
        await left

    async def _after_window(self) -> None:
        """A station starts no frame of its own inside a GROUP frame's slot window (docs/protocol.md section 13): an
        answer it could not give in its slot (a lamp that does not show what was asked) waits for the window's end."""
        end = self._bus.window_end
        if not self._bus.timing.paced or time.monotonic() >= end:
            return
        over: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        at_time(end, lambda: None if over.done() else over.set_result(None))
        await over

    def _write_in_slot(self, slot: int, data: bytes) -> None:
        """Start the confirmation when this station's slot begins, counted from the end of the GROUP frame as every
        station on the line heard it; the shared return pair then carries it in its byte times."""
        if self.damaged_slots:
            self.damaged_slots -= 1
            data = bytes((data[0], damaged_check(data[1])))
        self.slot_history.append((slot, data))
        timing = self._bus.timing
        if not timing.paced:
            self._bus.write(data)
            return
        start = self._bus.heard_at + timing.frame_time(SLOT_TURNAROUND + slot * SLOT_PERIOD)
        drop = self._drop

        def send() -> None:
            if self._drop is drop and drop is not None:
                self._bus.write(data, gap=False)

        at_time(start, send)

    async def _unplug(self) -> None:
        await self._detach()
        if self._drop is not None:
            self._drop.reader.feed_eof()
            self._drop = None


def damaged_check(check: int) -> int:
    """The check byte of a confirmation sent damaged (BusStationSim.damaged_slots): never `check`, and plain noise to
    the host whatever the GROUP frame's SEQ. A collision can leave any byte, and one that is a station's header byte
    (v2's VER, a v3 VK from a station) costs the next station's pair too (docs/protocol.md section 13, "An awaited
    address right after a station's header byte"): `check` XOR 0x5A was such a byte for 7 SEQs in 256, and a test that
    expects one station to fall back saw its neighbour fall back with it. Tests of that case write their bytes."""
    return 0xFF if check == 0x00 else 0x00


class WagerBusSim:
    """Several simulated wager stations on one line (`port`, a stable name like the single simulators').

    `stations` maps seat -> BusStationSim; `addresses` (seat -> address) defaults to address = seat.
    """

    def __init__(
        self,
        name: str = WAGER_BUS_ID,
        seats: Iterable[int] = (),
        addresses: Mapping[int, int] | None = None,
        *,
        protocols: tuple[int, ...] = (1, 2, 3, 4),
        timing: LineTiming | None = None,
    ) -> None:
        self.name = name
        # One line: its two directions are paced once for all the stations (their answers queue on the return pair).
        self.timing = default_timing() if timing is None else timing
        wanted = dict(addresses or {})
        for seat in seats:
            wanted.setdefault(seat, seat)
        if len(set(wanted.values())) != len(wanted):
            raise ValueError(f"stations on one line need distinct addresses: {wanted}")
        self.stations = {seat: BusStationSim(self, seat, wanted[seat], protocols) for seat in sorted(wanted)}
        self._endpoint: PtyEndpoint | None = None
        self._pump: asyncio.Task[None] | None = None
        self._name = StableName(name)
        # Every intact frame the host put on the line, as the stations heard it: what a test asserts went over
        # the wire (one broadcast lock, not seven frames).
        self.heard: list[Frame] = []
        # When the last byte of the host's latest frame reached the stations: the slots of a GROUP frame count from it.
        self.heard_at = 0.0
        # When the slot window of the latest GROUP frame ends (time.monotonic): no station starts a frame before.
        self.window_end = 0.0
        # Called with each GROUP frame the stations heard, as it reached them: a test puts a collision's bytes on the
        # return pair inside that frame's slot window (a pty cannot collide).
        self.on_group: Callable[[Frame], None] | None = None

    @property
    def port(self) -> str:
        return self._name.path

    @property
    def plugged(self) -> bool:
        return self._endpoint is not None

    @property
    def line_seconds(self) -> tuple[float, float]:
        """The wire time its line has carried since plugged in, (to the stations, from it): drivers/sim/line.py."""
        end = self._endpoint
        return (0.0, 0.0) if end is None else (end.inbound.line_seconds, end.outbound.line_seconds)

    async def start(self) -> None:
        self._name.create()
        try:
            await self.replug()
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        try:
            for station in self.stations.values():
                await station.stop()
            await self.unplug()
        finally:
            self._name.remove()

    async def unplug(self) -> None:
        """Pull the line's cable: the pty closes, the stable name disappears, every station goes quiet."""
        for station in self.stations.values():
            await station._unplug()
        await cancel_and_wait(self._pump)
        self._pump = None
        if self._endpoint is not None:
            self._endpoint.close()
            self._endpoint = None
        self._name.point(None)

    async def replug(self) -> None:
        """Plug the line back in: a new pty under the same name, every station attached (and revived)."""
        await self.unplug()
        self._endpoint = PtyEndpoint(self.timing)
        self._pump = simulator_task(
            asyncio.get_running_loop().create_task(self._fan_out(self._endpoint), name=f"sim:{self.name}")
        )
        for station in self.stations.values():
            await station._plug()
        self._name.point(self._endpoint.path)

    def write(self, data: bytes, *, gap: bool = True) -> None:
        """Put a station's bytes on the return pair; gap=False for a slot confirmation, whose slot already holds the
        guard time (it starts at its slot, or after the confirmation before it if that one is late)."""
        if self._endpoint is not None:
            self._endpoint.outbound.send(data, gap=gap)

    def inject_garbage(self, data: bytes) -> None:
        """Write raw bytes onto the line between frames (line-noise fault injection)."""
        self.write(data)

    async def _fan_out(self, endpoint: PtyEndpoint) -> None:
        # A multi-drop line: every listening station hears every byte the host sends.
        parser = FrameParser()
        while data := await endpoint.read(4096):
            frames = parser.feed(data)
            if frames:
                # The end of the frame on the wire, not when this task ran: a station's UART times its slot from the
                # stop bit, and a late simulator must not push every slot later than a real station would.
                self.heard_at = endpoint.inbound.delivered_at
                self.heard += frames
                for frame in frames:
                    if frame.kind == Kind.GROUP:
                        named = decode_message(frame.payload).get("stations")
                        slots = len(named) if isinstance(named, list) else 0
                        self.window_end = self.heard_at + self.timing.frame_time(SLOT_TURNAROUND + SLOT_PERIOD * slots)
                        if self.on_group is not None:
                            self.on_group(frame)
            group = any(frame.kind == Kind.GROUP for frame in frames)
            for station in self.stations.values():
                drop = station.drop
                if group and station.missed_groups:
                    station.missed_groups -= 1  # this read, the GROUP frame in it, never reached this station
                elif drop is not None:
                    drop.feed(data)
        for station in self.stations.values():
            if station.drop is not None:
                station.drop.reader.feed_eof()
