"""A simulated LED sign speaking the Alpha Sign Communications Protocol, on the master side of a real pty.

It parses the packets itself (not with the driver's parser, so the two check each other against the
protocol's description), keeps the files a sign keeps (memory layout, TEXT, STRING, the priority TEXT file),
answers reads as a sign does (a packet of type "0", address "00", carrying the matching write command), and
records what it displays and when, on the clock it is given, so a test can measure delays without the wall.
Faults: unplug / replug (a new pty under the same stable name; memory kept unless power_lost), lose_memory
(a brownout), garbage towards the host, deaf (reads go unanswered, as from a sign set not to respond).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from drivers.sign_pacing import Clock, LoopClock
from drivers.sim.pty import PtyEndpoint, StableName
from drivers.tasks import cancel_and_wait, simulator_task

log = structlog.get_logger(__name__)

_SOH, _STX, _ETX, _EOT, _ESC, _DLE = 1, 2, 3, 4, 0x1B, 0x10
_MAX = 4096


@dataclass(frozen=True, slots=True)
class SignFile:
    kind: str  # "TEXT" or "STRING"
    size: int


@dataclass(frozen=True, slots=True)
class Shown:
    """One change of the display: when (on the sim's clock) and the messages shown, in turn."""

    at: float
    messages: tuple[str, ...]


class AlphaSignSim:
    model = "SIM-ALPHA-SIGN"

    def __init__(
        self, device_id: str, *, type_code: str = "f", address: str = "01", clock: Clock | None = None
    ) -> None:
        self.device_id = device_id
        self.type_code = type_code
        self.address = address
        self.clock: Clock = clock or LoopClock()
        self.memory: dict[str, SignFile] = {}
        self.texts: dict[str, bytes] = {}
        self.strings: dict[str, bytes] = {}
        self.priority = b""
        self.history: list[Shown] = []
        self.accepted: list[str] = []  # "A:A", "G:B", ... command and label of each packet acted on
        self.rejected: list[str] = []  # why each packet was dropped
        self.deaf = False
        self._endpoint: PtyEndpoint | None = None
        self._name = StableName(device_id)
        self._task: asyncio.Task[None] | None = None
        self._buffer = bytearray()
        self._changed = asyncio.Event()

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait until `condition()` holds, looking again after every packet (bound it with a timeout)."""
        while not condition():
            self._changed.clear()
            await self._changed.wait()

    # --- plumbing ------------------------------------------------------------------------------------------

    @property
    def port(self) -> str:
        return self._name.path

    async def start(self) -> None:
        self._name.create()
        try:
            self._plug()
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        try:
            await self.unplug()
        finally:
            self._name.remove()

    def _plug(self) -> None:
        self._endpoint = PtyEndpoint()
        self._buffer.clear()
        self._task = simulator_task(
            asyncio.get_running_loop().create_task(self._listen(self._endpoint), name=f"sim:{self.device_id}")
        )
        self._name.point(self._endpoint.path)

    async def unplug(self) -> None:
        """Pull the cable: the pty closes and the stable name goes away (the driver finds the sign offline)."""
        await cancel_and_wait(self._task)
        self._task = None
        if self._endpoint is not None:
            self._endpoint.close()
            self._endpoint = None
            log.info("simulator unplugged", device=self.device_id, port=self._name.path)
        self._name.point(None)

    async def replug(self, *, power_lost: bool = False) -> None:
        await self.unplug()
        if power_lost:
            self.lose_memory()
        self._plug()

    def lose_memory(self) -> None:
        """A brownout: the layout and every file are gone; the display is blank."""
        self._changed.set()
        self.memory.clear()
        self.texts.clear()
        self.strings.clear()
        self.priority = b""
        self._record()

    def inject_garbage(self, data: bytes) -> None:
        if self._endpoint is not None:
            self._endpoint.write(data)

    async def _listen(self, endpoint: PtyEndpoint) -> None:
        while True:
            data = await endpoint.read(4096)
            if not data:
                return
            self.feed(data)

    # --- what the sign shows -----------------------------------------------------------------------------------

    @property
    def messages(self) -> tuple[str, ...]:
        """What the display shows, message by message: the priority file while it has text, else TEXT file A."""
        source = self.priority if self.priority else self.texts.get("A", b"")
        out = []
        for chunk in source.split(bytes([_ESC]))[1:]:
            body = chunk[2:]  # display position and mode code
            if chunk[1:2] == b"n":
                body = body[1:]  # special mode specifier
            out.append(self._render(body))
        return tuple(out)

    def _render(self, body: bytes) -> str:
        text = bytearray()
        i = 0
        while i < len(body):
            b = body[i]
            if b == _DLE and i + 1 < len(body):
                text += self.strings.get(chr(body[i + 1]), b"")
                i += 2
                continue
            if b >= 0x20:
                text.append(b)
            i += 1
        return text.decode("ascii", errors="replace")

    def _record(self) -> None:
        messages = self.messages
        if not self.history or self.history[-1].messages != messages:
            self.history.append(Shown(self.clock.now(), messages))

    # --- the protocol -----------------------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Bytes from the host: packets are found between SOH and EOT; anything else is ignored."""
        self._changed.set()
        for byte in data:
            if byte == _SOH:
                if self._buffer:
                    self.rejected.append("packet cut short by a new SOH")
                self._buffer = bytearray([byte])
            elif self._buffer:
                self._buffer.append(byte)
                if byte == _EOT:
                    body, self._buffer = bytes(self._buffer[1:-1]), bytearray()
                    self._packet(body)
                elif len(self._buffer) > _MAX:
                    self.rejected.append("packet too long")
                    self._buffer = bytearray()

    def _packet(self, body: bytes) -> None:
        if len(body) < 4:
            self.rejected.append("packet too short")
            return
        type_code, address, rest = chr(body[0]), body[1:3].decode("ascii", "replace"), body[3:]
        if type_code not in ("Z", "?", self.type_code) or not _address_matches(address, self.address):
            return  # for another sign on the line
        if rest[:1] != bytes([_STX]):
            self.rejected.append("no STX after the address")
            return
        blocks = rest.split(bytes([_STX]))[1:]
        for block in blocks:
            if _ETX in block:
                end = block.index(_ETX)
                command, tail = block[:end], block[end + 1 :]
                if len(tail) >= 4:
                    expected = b"%04X" % ((_STX + sum(command) + _ETX) & 0xFFFF)
                    if tail[:4].upper() != expected:
                        self.rejected.append(f"checksum {tail[:4]!r} != {expected!r}")
                        return  # a sign drops the whole packet
            else:
                command = block
            self._command(command)
        self._record()

    def _command(self, command: bytes) -> None:
        code, label, data = command[:1], chr(command[1]) if len(command) > 1 else "", command[2:]
        if code == b"E" and label == "$":
            self._lay_out(data)
        elif code == b"A":
            if label == "0":
                self.priority = data
            elif self.memory.get(label, SignFile("", 0)).kind == "TEXT" and len(data) <= self.memory[label].size:
                self.texts[label] = data
            else:
                self.rejected.append(f"write TEXT {label!r}: no such TEXT file, or too long")
                return
        elif code == b"G":
            if self.memory.get(label, SignFile("", 0)).kind == "STRING" and len(data) <= self.memory[label].size:
                self.strings[label] = data
            else:
                self.rejected.append(f"write STRING {label!r}: no such STRING file, or too long")
                return
        elif code == b"H":
            if label in self.strings or self.memory.get(label, SignFile("", 0)).kind == "STRING":
                self._answer(b"G" + label.encode() + self.strings.get(label, b""))
            else:
                self.rejected.append(f"read STRING {label!r}: no such file")
                return
        elif code == b"B":
            if label == "0" or label in self.texts:
                self._answer(b"A" + label.encode() + (self.priority if label == "0" else self.texts[label]))
            else:
                self.rejected.append(f"read TEXT {label!r}: no such file")
                return
        else:
            self.rejected.append(f"command {code!r} not understood")
            return
        self.accepted.append(f"{code.decode()}:{label}")

    def _lay_out(self, data: bytes) -> None:
        memory: dict[str, SignFile] = {}
        for i in range(0, len(data), 11):
            entry = data[i : i + 11]
            kinds = {b"A": "TEXT", b"B": "STRING"}
            if len(entry) != 11 or entry[1:2] not in kinds or entry[2:3] not in (b"L", b"U"):
                self.rejected.append(f"memory configuration entry {entry!r} not understood")
                return
            try:
                size = int(entry[3:7], 16)
            except ValueError:
                self.rejected.append(f"memory configuration size {entry[3:7]!r} not hex")
                return
            memory[chr(entry[0])] = SignFile(kinds[entry[1:2]], size)
        # A new layout clears the old files.
        self.memory, self.texts, self.strings = memory, {}, {}

    def _answer(self, command: bytes) -> None:
        if self.deaf or self._endpoint is None:
            return
        block = bytes([_STX]) + command + bytes([_ETX])
        packet = bytes(20) + bytes([_SOH]) + b"000" + block + b"%04X" % (sum(block) & 0xFFFF) + bytes([_EOT])
        self._endpoint.write(packet)


def _address_matches(address: str, own: str) -> bool:
    if address == "00":
        return True
    return len(address) == 2 and all(a in ("?", b) for a, b in zip(address, own, strict=True))
