"""What crossed a simulator's pseudo-terminal, frame by frame, both ways: what a test asserts about an exchange.

Differencing the endpoint's byte counters across an exchange counts whatever else was crossing the line at that moment
too. The host's ACK of the device's `identity` is written before the driver reports the device online, but the pty
hands the slave's bytes to the master in a kernel work item of its own, so under load the simulator reads that ACK
together with the next command, inside the window (tests/drivers/test_protocol_v3.py: 23 bytes instead of 14 in 11
of 20 runs at load 10). A test reads the frames instead, says which ones the protocol allows beside the exchange at
that moment, and names them; `LineLog.window` checks that every byte of the window is in a frame it lists.
"""

from __future__ import annotations

import array
import asyncio
import fcntl
import select
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass

from drivers.interfaces import WAGER_BUS_ID, DeviceEvent, DeviceOnline
from drivers.reference.framing import Frame, FrameParser, Kind, ProtocolError, decode_message
from drivers.reference.wager_bus import ReferenceWagerBus
from drivers.registry import create_driver
from drivers.sim.pty import PtyEndpoint
from drivers.sim.wager_bus import WagerBusSim


@dataclass(frozen=True)
class OnLine:
    """One frame as the line delivered it: `size` is its bytes on the wire (a v3 CODE frame is 7)."""

    from_host: bool
    frame: Frame
    size: int

    @property
    def name(self) -> str:
        """The command or event a DATA/REPLY frame carries; the kind's name otherwise (ACK, NAK, SLOT...)."""
        if self.frame.kind in (Kind.DATA, Kind.REPLY):
            try:
                message = decode_message(self.frame.payload)
            except ProtocolError:
                return "undecodable"
            return str(message.get("cmd") or message.get("evt"))
        return self.frame.kind.name

    def __str__(self) -> str:
        way = "host->device" if self.from_host else "device->host"
        code = self.frame.kind == Kind.DATA and self.frame.version == 3 and self.size == 7
        what = (
            f"{'CODE' if code else self.frame.kind.name} {self.name}"
            if self.frame.kind in (Kind.DATA, Kind.REPLY)
            else self.name
        )
        frame = self.frame
        return f"{way} v{frame.version} {what} addr {frame.address} SEQ 0x{frame.seq:02X} ({self.size} bytes)"


class LineLog:
    """Every intact frame on `endpoint`, both ways, in the order the line delivered them (the endpoint's tap), and
    every byte. Slot confirmations after a GROUP frame are read as SLOT frames, as the host's parser reads them."""

    def __init__(self, endpoint: PtyEndpoint) -> None:
        self._parsers = {True: FrameParser(), False: FrameParser()}
        # Per direction: bytes fed since the last frame ended, and the parser's discarded bytes then.
        self._since = {True: (0, 0), False: (0, 0)}
        self.frames: list[OnLine] = []
        self.delivered = 0
        self._waiters: list[tuple[Callable[[list[OnLine]], bool], asyncio.Future[None]]] = []
        endpoint.tap = self._tap

    def _tap(self, from_host: bool, data: bytes) -> None:
        """Byte by byte, so each frame's size is what it took on the wire, not what re-encoding it would take (a
        sender that spelled a CODE frame as a longer DATA frame shows as the longer frame)."""
        self.delivered += len(data)
        parser = self._parsers[from_host]
        for byte in data:
            fed, discarded = self._since[from_host]
            frames = parser.feed(bytes((byte,)))
            if not frames:
                self._since[from_host] = (fed + 1, discarded)
                continue
            size = fed + 1 - (parser.discarded_bytes - discarded) - parser.buffered
            self._since[from_host] = (parser.buffered, parser.discarded_bytes)
            for frame in frames:
                if from_host and frame.kind == Kind.GROUP:
                    stations = decode_message(frame.payload).get("stations")
                    assert isinstance(stations, list)
                    self._parsers[False].open_slots(frame.seq, stations, 0)
                self.frames.append(OnLine(from_host, frame, size))
                size = 0  # a byte ends one frame; should it ever end two, the first holds every byte
        for done, waiter in self._waiters:
            if not waiter.done() and done(self.frames):
                waiter.set_result(None)

    async def until(self, done: Callable[[list[OnLine]], bool], bound: float = 5.0) -> None:
        """Return once `done(frames)` holds, checked as each delivery crosses the line; `bound` (seconds) bounds a
        failure only, naming the frames."""
        if done(self.frames):
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((done, waiter))
        try:
            async with asyncio.timeout(bound):
                await waiter
        except TimeoutError:
            raise AssertionError(
                "the line never carried what was awaited:\n" + "\n".join(map(str, self.frames))
            ) from None
        finally:
            self._waiters.remove((done, waiter))

    def mark(self) -> tuple[int, int, int]:
        """Where a window starts: frames so far, bytes so far, bytes of a frame still arriving."""
        return len(self.frames), self.delivered, self._buffered()

    def _buffered(self) -> int:
        return sum(parser.buffered for parser in self._parsers.values())

    def window(self, mark: tuple[int, int, int]) -> list[OnLine]:
        """The frames that arrived since `mark`, after checking that they are every byte that did (no garbage, no
        half frame left over: a byte count that the frames do not explain fails here, naming the frames)."""
        start, delivered, buffered = mark
        frames = self.frames[start:]
        in_frames = sum(seen.size for seen in frames) - buffered + self._buffered()
        assert self.delivered - delivered == in_frames, (
            f"{self.delivered - delivered} bytes crossed the line but the frames account for {in_frames}:\n"
            + "\n".join(map(str, frames))
        )
        return frames


def unread(fd: int) -> int:
    """The bytes waiting to be read on `fd` (FIONREAD)."""
    count = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, count)
    return count[0]


def until_readable(fd: int, n: int, bound: float = 5.0) -> None:
    """Block until `n` bytes wait on `fd`: the pty hands bytes across in a kernel work item of its own, so they are
    readable a moment after the write. `bound` (seconds) bounds a failure only."""
    deadline = time.monotonic() + bound
    while unread(fd) < n:
        left = deadline - time.monotonic()
        assert left > 0, f"the pty never handed over {n} bytes ({unread(fd)} waiting)"
        select.select([fd], [], [], left)


async def start_logged_bus(
    sim: WagerBusSim, settings: dict[str, object], expect: int
) -> tuple[LineLog, list[DeviceOnline], ReferenceWagerBus]:
    """Start the simulated line with a log on it, then every seat of a reference bus driver (`settings` beside its
    port) at once, as the controller does; return once `expect` stations are online: the line's log, their
    DeviceOnline events in device-id order, and the driver to stop."""
    await sim.start()
    assert sim._endpoint is not None
    wire = LineLog(sim._endpoint)
    driver = create_driver(
        WAGER_BUS_ID,
        {"driver": "reference-wager-bus", "port": sim.port, "heartbeat_interval": 0, **settings},
    )
    assert isinstance(driver, ReferenceWagerBus)
    online: asyncio.Queue[DeviceOnline] = asyncio.Queue()

    def sink(event: DeviceEvent) -> None:
        if isinstance(event, DeviceOnline):
            online.put_nowait(event)

    await asyncio.gather(*(s.start(sink) for s in driver.stations.values()))
    async with asyncio.timeout(10):  # bounds a failure only
        events = [await online.get() for _ in range(expect)]
    return wire, sorted(events, key=lambda e: e.device_id), driver
