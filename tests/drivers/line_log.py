"""What crossed a simulator's pseudo-terminal, frame by frame, both ways: what a test asserts about an exchange.

Differencing the endpoint's byte counters across an exchange counts whatever else was crossing the line at that moment
too. The host's ACK of the device's `identity` is written before the driver reports the device online, but the pty
hands the slave's bytes to the master in a kernel work item of its own, so under load the simulator reads that ACK
together with the next command, inside the window (tests/drivers/test_protocol_v3.py: 23 bytes instead of 14 in 11
of 20 runs at load 10). A test reads the frames instead, says which ones the protocol allows beside the exchange at
that moment, and names them; `LineLog.window` checks that every byte of the window is in a frame it lists.
"""

from __future__ import annotations

from dataclasses import dataclass

from drivers.reference.framing import Frame, FrameParser, Kind, ProtocolError, decode_message, slot_confirmation
from drivers.sim.pty import PtyEndpoint


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
        kind = "CODE" if self.frame.kind == Kind.DATA and self.frame.version == 3 and self.size == 7 else None
        return (
            f"{way} v{self.frame.version} {kind or self.frame.kind.name} {self.name} addr {self.frame.address} "
            f"SEQ 0x{self.frame.seq:02X} ({self.size} bytes)"
        )


def _size(frame: Frame) -> int:
    if frame.kind == Kind.SLOT:
        return len(slot_confirmation(frame.address, frame.seq))
    return len(frame.encode())


class LineLog:
    """Every intact frame on `endpoint`, both ways, in the order the line delivered them (the endpoint's tap), and
    every byte. Slot confirmations after a GROUP frame are read as SLOT frames, as the host's parser reads them."""

    def __init__(self, endpoint: PtyEndpoint) -> None:
        self._parsers = {True: FrameParser(), False: FrameParser()}
        self.frames: list[OnLine] = []
        self.delivered = 0
        endpoint.tap = self._tap

    def _tap(self, from_host: bool, data: bytes) -> None:
        self.delivered += len(data)
        for frame in self._parsers[from_host].feed(data):
            if from_host and frame.kind == Kind.GROUP:
                stations = decode_message(frame.payload).get("stations")
                assert isinstance(stations, list)
                self._parsers[False].open_slots(frame.seq, stations, 0)
            self.frames.append(OnLine(from_host, frame, _size(frame)))

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
