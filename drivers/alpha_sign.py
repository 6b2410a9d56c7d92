"""Driver for off-the-shelf LED signs that speak the Alpha Sign Communications Protocol (docs/alpha-sign.md).

Written from the protocol's public description. One packet is

    NUL x5 (autobaud)  SOH  type code (1)  address (2 hex)  STX command data ETX checksum (4 hex)  EOT

with the checksum the 16-bit sum of the bytes from STX through ETX. The sign's memory is laid out once per
connection (Write SPECIAL FUNCTION "$"): TEXT file "A" holds one message per level, each a caption and a
reference to that level's STRING file, so a meter update rewrites only a short STRING file ("G") and the
display does not restart; a win goes to the priority TEXT file "0", which overrides everything until it is
cleared. Every update is confirmed by reading the files back ("H", "B"): MetersShown carries what the sign
returned, not what was sent. A heartbeat writes and reads back STRING file "Z"; a sign that stops answering
is offline and is laid out again, with the latest values, once it answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import termios
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import serial
import serial_asyncio_fast
import structlog
from pydantic import BaseModel, ConfigDict, Field, field_validator

from drivers.interfaces import DeviceFault, DeviceOffline, DeviceOnline, EventSink, MetersShown
from drivers.reconnect import Reconnecting
from drivers.reference.progressive_sign import (
    amount_problem,
    check_updates_per_second,
    level_problem,
    levels_problem,
    seat_problem,
)
from drivers.sign_pacing import Clock, LoopClock, SignPacer
from drivers.tasks import cancel_and_wait

log = structlog.get_logger(__name__)

NUL, SOH, STX, ETX, EOT, ESC, DLE = 0x00, 0x01, 0x02, 0x03, 0x04, 0x1B, 0x10
SYNC = bytes(5)  # the description asks for at least five NULs so the sign can find the baud rate
WRITE_TEXT, READ_TEXT, WRITE_SPECIAL, WRITE_STRING, READ_STRING = b"A", b"B", b"E", b"G", b"H"
MEMORY_CONFIGURATION = b"$"  # special function label: allocate files (and clear the old ones)
RESPONSE_TYPE = "0"  # type code of a packet the sign sends back
TEXT_LABEL = b"A"
PRIORITY_LABEL = b"0"
HEARTBEAT_LABEL = b"Z"
LEVEL_LABELS = b"BCDEFGHIJKLMNOPQRSTUVWXY"  # one STRING file per level; "0"-"5" and "?" are reserved
STRING_SIZE = 0x20  # bytes allocated per STRING file: "$99,999,999,999.99" fits
POSITION_MIDDLE, MODE_HOLD, MODE_FLASH = b" ", b"b", b"c"
MAX_PACKET = 4096
IDLE_EXPIRY = 0.5  # seconds of silence inside a packet after which its start is dropped

AMOUNT = re.compile(rb"^\$(\d{1,3}(?:,\d{3})*)\.(\d{2})$")
CAPTION = re.compile(r"^[ -~]{1,24}$")  # printable ASCII: 7-bit signs show nothing else


# --- packets ----------------------------------------------------------------------------------------------------


def checksum(block: bytes) -> bytes:
    """Four upper-case hex digits: the sum of the bytes from STX through ETX, modulo 65536."""
    return b"%04X" % (sum(block) & 0xFFFF)


def encode_packet(type_code: str, address: str, command: bytes, data: bytes = b"") -> bytes:
    """One command in one packet, always with ETX and checksum (a sign drops a packet whose checksum fails)."""
    block = bytes([STX]) + command + data + bytes([ETX])
    return (
        SYNC
        + bytes([SOH])
        + type_code.encode("ascii")
        + address.encode("ascii")
        + block
        + checksum(block)
        + bytes([EOT])
    )


@dataclass(frozen=True, slots=True)
class Packet:
    type_code: str
    address: str
    command: bytes  # one byte
    data: bytes
    checksum_ok: bool | None  # None: sent without a checksum


@dataclass
class PacketParser:
    """Untrusted bytes in, whole packets out. Anything outside SOH..EOT but the NUL sync is noise; a packet
    longer than MAX_PACKET, a second SOH inside a packet or one that cannot be read is dropped and counted."""

    discarded_bytes: int = 0
    bad_packets: int = 0
    _buffer: bytearray = field(default_factory=bytearray)

    @property
    def pending(self) -> bool:
        return bool(self._buffer)

    def feed(self, data: bytes) -> list[Packet]:
        out: list[Packet] = []
        for byte in data:
            if not self._buffer:
                if byte == SOH:
                    self._buffer.append(byte)
                elif byte != NUL:
                    self.discarded_bytes += 1
                continue
            if byte == SOH:  # a new packet starts inside the last: the last is lost
                self._drop()
                self._buffer.append(byte)
                continue
            self._buffer.append(byte)
            if byte == EOT:
                packet = parse_body(bytes(self._buffer[1:-1]))
                if packet is None:
                    self._drop()
                else:
                    self._buffer.clear()
                    out.append(packet)
            elif len(self._buffer) > MAX_PACKET:
                self._drop()
        return out

    def expire(self) -> None:
        """The line went quiet inside a packet: it will never end, drop it."""
        if self._buffer:
            self._drop()

    def _drop(self) -> None:
        self.bad_packets += 1
        self.discarded_bytes += len(self._buffer)
        self._buffer.clear()


def parse_body(body: bytes) -> Packet | None:
    """type(1) address(2) STX command data [ETX checksum(4)]; None if it is not that (or has more commands:
    this driver neither sends nor expects nested packets)."""
    if len(body) < 5 or body[3] != STX:
        return None
    try:
        type_code, address = body[:1].decode("ascii"), body[1:3].decode("ascii")
    except UnicodeDecodeError:
        return None
    rest = body[3:]
    if ETX in rest:
        end = rest.index(ETX)
        block, tail = rest[: end + 1], rest[end + 1 :]
        if len(tail) != 4 or STX in tail:
            return None
        ok: bool | None = tail.upper() == checksum(block)
        content = block[1:-1]
    else:
        content, ok = rest[1:], None
    if not content or STX in content:
        return None
    return Packet(type_code, address, content[:1], content[1:], ok)


def format_amount(cents: int) -> bytes:
    return b"$%s.%02d" % (f"{cents // 100:,}".encode(), cents % 100)


def parse_amount(text: bytes) -> int | None:
    m = AMOUNT.match(text)
    if m is None:
        return None
    return int(m.group(1).replace(b",", b"")) * 100 + int(m.group(2))


def caption_for(level: str, captions: Mapping[str, str]) -> str:
    return captions.get(level, level.replace("_", " ").upper())


def win_message(caption: str, amount_cents: int, seat: int) -> bytes:
    return caption.encode("ascii") + b" WIN " + format_amount(amount_cents) + b" SEAT %d" % seat


def memory_layout(levels: list[str]) -> bytes:
    """Write SPECIAL FUNCTION "$" data: TEXT A, a STRING file per level and the heartbeat STRING Z.

    Each entry: label, type (A TEXT, B STRING), L (locked against the sign's IR keyboard, as 605a.7(a)(6)
    wants the meters kept from unauthorised change), size (4 hex), then FF00 (TEXT: shown always) or 0000.
    """
    text_size = 16 + sum(8 + 24 for _ in levels)
    entries = [TEXT_LABEL + b"AL" + b"%04X" % text_size + b"FF00"]
    entries += [LEVEL_LABELS[i : i + 1] + b"BL" + b"%04X" % STRING_SIZE + b"0000" for i in range(len(levels))]
    entries.append(HEARTBEAT_LABEL + b"BL" + b"%04X" % STRING_SIZE + b"0000")
    return MEMORY_CONFIGURATION + b"".join(entries)


def text_layout(levels: list[str], captions: Mapping[str, str]) -> bytes:
    """TEXT file A: one held message per level, its caption then its STRING file (DLE + label)."""
    return b"".join(
        bytes([ESC])
        + POSITION_MIDDLE
        + MODE_HOLD
        + caption_for(level, captions).encode("ascii")
        + b" "
        + bytes([DLE])
        + LEVEL_LABELS[i : i + 1]
        for i, level in enumerate(levels)
    )


# --- settings ---------------------------------------------------------------------------------------------------


class AlphaSignSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    driver: Literal["alpha-sign"] = "alpha-sign"
    port: str = Field(min_length=1, description="serial port of the sign, ideally a stable udev name")
    baudrate: Literal[1200, 2400, 4800, 9600, 19200, 38400] = Field(9600, description="as set on the sign")
    serial_format: Literal["7E1", "8N1"] = Field("7E1", description="the description's default is 7E1")
    type_code: str = Field("Z", pattern=r"^[!-~]$", description="sign type code; Z addresses every type")
    address: str = Field("00", pattern=r"^[0-9A-F]{2}$", description="sign address, 2 hex digits; 00 = all signs")
    captions: dict[str, str] = Field(
        default_factory=dict, description="level -> caption shown before its amount; default the level name in capitals"
    )
    max_updates_per_second: float = Field(1.0, le=20, description="most updates a second; at least one every 10 s")
    win_seconds: float = Field(20.0, ge=1, le=600, description="how long a win stays on the sign")
    reply_timeout: float = Field(1.0, gt=0, le=10, description="seconds to wait for the sign to answer a read")
    heartbeat_interval: float = Field(5.0, ge=0, description="seconds between heartbeats while idle; 0: none")
    layout_pause: float = Field(
        0.5,
        ge=0,
        le=5,
        description="seconds the sign is given after its memory is laid out (the sign clears its files then)",
    )

    @field_validator("max_updates_per_second")
    @classmethod
    def _often_enough(cls, v: float) -> float:
        return check_updates_per_second(v)

    @field_validator("captions")
    @classmethod
    def _captions(cls, v: dict[str, str]) -> dict[str, str]:
        for level, caption in v.items():
            problem = level_problem(level)
            if problem is not None:
                raise ValueError(f"captions: {problem}")
            if not CAPTION.fullmatch(caption):
                raise ValueError(f"captions.{level} = {caption!r}: 1 to 24 printable ASCII characters")
        return v


# --- driver -----------------------------------------------------------------------------------------------------

START_WAIT, NOISE_REPORT_INTERVAL = 2.0, 1.0
Win = tuple[str, int, int, "asyncio.Future[bool]"]


class SignGone(Exception):
    """The sign stopped answering or the port failed: drop the connection and start over."""


class AlphaSign(Reconnecting):
    Settings: ClassVar[type[AlphaSignSettings]] = AlphaSignSettings

    def __init__(self, device_id: str, settings: AlphaSignSettings) -> None:
        self.device_id = device_id
        self.settings = settings
        self.clock: Clock = LoopClock()  # a test may set another before start()
        self.pacer: SignPacer[Win] = SignPacer(settings.max_updates_per_second)
        self.identity = {
            "model": "Alpha Sign Communications Protocol sign",
            "serial": f"type {settings.type_code} address {settings.address}",
            "firmware": "",
            "firmware_hash": "",
        }  # the protocol has no identify command
        self._sink: EventSink | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._parser = PacketParser()
        self._replies: asyncio.Queue[Packet] = asyncio.Queue()
        self._closed = asyncio.Event()
        self._close_reason = ""
        self._wake = asyncio.Event()
        self._first_attempt = asyncio.Event()
        self._online: bool | None = None
        self._last_levels: dict[str, int] | None = None
        self._layout: list[str] | None = None  # the levels the sign's memory is laid out for
        self._shown: dict[str, int] = {}  # what the sign last read back
        self._clear_win_at: float | None = None
        self._heartbeat = 0
        self._last_noise_report = float("-inf")

    # --- Device / ProgressiveSign ------------------------------------------------------------------------------

    async def start(self, sink: EventSink) -> None:
        self._sink = sink
        self._supervisor = asyncio.get_running_loop().create_task(self._supervise(), name=f"driver:{self.device_id}")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(START_WAIT):
                await self._first_attempt.wait()

    async def stop(self) -> None:
        await cancel_and_wait(self._supervisor)
        self._supervisor = None
        await self._drop_link()
        self._fail_wins("the driver stopped")

    async def show_levels(self, levels: Mapping[str, int]) -> None:
        """Queue these values for the next slot (replacing values still waiting); MetersShown follows."""
        problem = levels_problem(levels)
        if problem is None and len(levels) > len(LEVEL_LABELS):
            problem = f"{len(levels)} levels; this driver lays out at most {len(LEVEL_LABELS)}"
        if problem is not None:
            self.emit(DeviceFault(self.device_id, "bad_request", f"show_levels: 'levels': {problem}"))
            return
        self._last_levels = dict(levels)
        self.pacer.want_levels(levels)
        self._wake.set()

    async def show_win(self, level: str, amount_cents: int, seat: int) -> None:
        """Queue the win for the next slot and return once the sign has read it back (or it failed: a fault)."""
        for name, problem in (
            ("level", level_problem(level)),
            ("amount", amount_problem(amount_cents)),
            ("seat", seat_problem(seat)),
        ):
            if problem is not None:
                self.emit(DeviceFault(self.device_id, "bad_request", f"show_win: {name!r}: {problem}"))
                return
        if not self._online:
            self.emit(DeviceFault(self.device_id, "offline", "cannot send show_win: device offline"))
            return
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.pacer.want_win((level, amount_cents, seat, done))
        self._wake.set()
        await asyncio.shield(done)

    def emit(self, event: DeviceFault | DeviceOnline | DeviceOffline | MetersShown) -> None:
        if self._sink is None:
            return
        try:
            self._sink(event)
        except Exception:
            log.exception("event sink failed", device=self.device_id, event=type(event).__name__)

    # --- connection ------------------------------------------------------------------------------------------

    async def _connect_once(self) -> str | None:
        s = self.settings
        seven = s.serial_format == "7E1"
        try:
            reader, self._writer = await serial_asyncio_fast.open_serial_connection(
                url=s.port,
                baudrate=s.baudrate,
                bytesize=serial.SEVENBITS if seven else serial.EIGHTBITS,
                parity=serial.PARITY_EVEN if seven else serial.PARITY_NONE,
                stopbits=serial.STOPBITS_ONE,
            )
        except (OSError, ValueError, termios.error) as exc:
            # termios.error: the port refuses the line settings (a pty refuses parity, so 7E1 on one fails here).
            return f"cannot open {s.port} at {s.baudrate} {s.serial_format}: {exc}"
        self._closed = asyncio.Event()
        self._parser = PacketParser()
        self._replies = asyncio.Queue()
        self._reader_task = asyncio.get_running_loop().create_task(self._read(reader), name=f"read:{self.device_id}")
        try:
            # A sign that was away may have restarted blank, or be another sign: lay it out from scratch.
            self._layout = None
            await self._lay_out(list(self._last_levels) if self._last_levels else [])
            await self._beat()
        except SignGone as exc:
            return f"no answer from the sign: {exc}"
        self._online = True
        log.info("device online", device=self.device_id, port=s.port, **self.identity)
        self.emit(DeviceOnline(self.device_id, dict(self.identity)))
        if self._last_levels is not None and self.pacer.wanted_levels is None:
            self.pacer.want_levels(self._last_levels)
        self._first_attempt.set()
        return None

    async def _drop_link(self) -> None:
        await cancel_and_wait(self._reader_task)
        self._reader_task = None
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()
                async with asyncio.timeout(1.0):
                    await writer.wait_closed()

    def _set_offline(self, reason: str) -> None:
        self._fail_wins(f"device offline: {reason}")
        if self._online is False:
            return
        self._online = False
        log.warning("device offline", device=self.device_id, reason=reason)
        self.emit(DeviceOffline(self.device_id, reason))

    def _fail_wins(self, why: str) -> None:
        for level, amount, seat, done in self.pacer.drop_wins():
            self.emit(
                DeviceFault(
                    self.device_id,
                    "win_not_shown",
                    f"show_win {level} {amount} cents seat {seat}: {why}; announce it again",
                )
            )
            if not done.done():
                done.set_result(False)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        reason = "end of file"
        try:
            while True:
                if self._parser.pending:
                    try:
                        async with asyncio.timeout(IDLE_EXPIRY):
                            data = await reader.read(4096)
                    except TimeoutError:
                        self._parser.expire()
                        self._noise()
                        continue
                else:
                    data = await reader.read(4096)
                if not data:
                    break
                for packet in self._parser.feed(data):
                    if packet.type_code == RESPONSE_TYPE and packet.checksum_ok is not False:
                        self._replies.put_nowait(packet)
                    else:
                        self._parser.bad_packets += 1
                self._noise()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            reason = f"read failed: {exc}"
        self._close_reason = reason
        self._closed.set()

    def _noise(self) -> None:
        if not (self._parser.discarded_bytes or self._parser.bad_packets):
            return
        now = asyncio.get_running_loop().time()
        if now - self._last_noise_report < NOISE_REPORT_INTERVAL:
            return  # one report a second flags a noisy line well enough
        self._last_noise_report = now
        self.emit(
            DeviceFault(
                self.device_id,
                "line_noise",
                f"{self._parser.discarded_bytes} bytes discarded, {self._parser.bad_packets} bad packets so far",
            )
        )

    # --- talking to the sign -----------------------------------------------------------------------------------

    async def _send(self, command: bytes, data: bytes = b"") -> None:
        if self._writer is None or self._closed.is_set():
            raise SignGone(self._close_reason or "port closed")
        try:
            self._writer.write(encode_packet(self.settings.type_code, self.settings.address, command, data))
            await self._writer.drain()
        except (OSError, RuntimeError, ConnectionError) as exc:
            raise SignGone(f"write failed: {exc}") from exc

    async def _read_back(self, command: bytes, label: bytes, expect: bytes) -> bytes:
        """Ask for one file and return its data; the answer is the matching write command with that label."""
        while not self._replies.empty():
            self._replies.get_nowait()  # a late answer to an earlier read is not this one's
        await self._send(command, label)
        try:
            async with asyncio.timeout(self.settings.reply_timeout):
                while True:
                    reply = await self._replies.get()
                    if reply.command == expect and reply.data[:1] == label:
                        return reply.data[1:]
        except TimeoutError:
            raise SignGone(
                f"no answer to a read of file {label.decode()} within {self.settings.reply_timeout:g} s"
            ) from None

    async def _lay_out(self, levels: list[str]) -> None:
        await self._send(WRITE_SPECIAL, memory_layout(levels))
        if self.settings.layout_pause:
            await asyncio.sleep(self.settings.layout_pause)
        await self._send(WRITE_TEXT, TEXT_LABEL + text_layout(levels, self.settings.captions))
        self._layout = levels
        self._shown = {}

    async def _beat(self) -> None:
        """Write a new token to STRING Z and read it back: the sign is there, takes writes, kept its memory."""
        self._heartbeat = (self._heartbeat + 1) % 0x10000
        token = b"%04X" % self._heartbeat
        await self._send(WRITE_STRING, HEARTBEAT_LABEL + token)
        got = await self._read_back(READ_STRING, HEARTBEAT_LABEL, WRITE_STRING)
        if got != token:
            raise SignGone(f"heartbeat file Z reads {got!r}, not {token!r}: the sign lost its memory")

    async def _show_levels(self, levels: dict[str, int]) -> None:
        names = list(levels)  # in the order asked for: the sign shows them in turn
        if names != self._layout:
            await self._lay_out(names)
        for i, name in enumerate(names):
            if self._shown.get(name) != levels[name]:
                await self._send(WRITE_STRING, LEVEL_LABELS[i : i + 1] + format_amount(levels[name]))
        shown: dict[str, int] = {}
        for i, name in enumerate(names):
            text = await self._read_back(READ_STRING, LEVEL_LABELS[i : i + 1], WRITE_STRING)
            amount = parse_amount(text)
            if amount is None:
                raise SignGone(f"the {name} file reads {text!r}, not an amount")
            shown[name] = amount
        self._shown = shown
        if shown != levels:
            wrong = {k: (v, levels[k]) for k, v in shown.items() if v != levels[k]}
            self.emit(
                DeviceFault(
                    self.device_id,
                    "display_mismatch",
                    f"the sign shows {wrong} (shown, asked): rewriting at the next slot",
                )
            )
            self.pacer.retry_levels(levels)
        self.emit(MetersShown(self.device_id, shown))

    async def _show_win(self, win: Win) -> None:
        level, amount, seat, done = win
        caption = caption_for(level, self.settings.captions)
        message = win_message(caption, amount, seat)
        shown = False
        try:
            await self._send(WRITE_TEXT, PRIORITY_LABEL + bytes([ESC]) + POSITION_MIDDLE + MODE_FLASH + message)
            got = await self._read_back(READ_TEXT, PRIORITY_LABEL, WRITE_TEXT)
            shown = got.endswith(message)
            if not shown:
                self.emit(DeviceFault(self.device_id, "win_not_shown", f"priority file reads {got!r}"))
            self._clear_win_at = self.clock.now() + self.settings.win_seconds
        except SignGone as exc:
            self.emit(
                DeviceFault(
                    self.device_id,
                    "win_not_shown",
                    f"show_win {level} {amount} cents seat {seat}: {exc}; announce it again",
                )
            )
            raise
        finally:
            # Whatever happened, the caller waiting in show_win hears of it.
            if not done.done():
                done.set_result(shown)

    async def _watch_link(self) -> str:
        """Online: send in pacer slots, clear a win when its time is up, beat when idle; until the sign goes."""
        try:
            while not self._closed.is_set():
                now = self.clock.now()
                if self._clear_win_at is not None and now >= self._clear_win_at:
                    self._clear_win_at = None
                    await self._send(WRITE_TEXT, PRIORITY_LABEL)  # an empty priority file: back to the meters
                    continue
                if self.pacer.pending and now >= self.pacer.due_at():
                    taken = self.pacer.take(now)
                    if taken is not None:
                        kind, item = taken
                        if kind == "win":
                            assert isinstance(item, tuple)
                            await self._show_win(item)
                        else:
                            assert isinstance(item, dict)
                            await self._show_levels(item)
                    continue
                if not await self._wait_for_work():
                    await self._beat()
        except SignGone as exc:
            if not self._closed.is_set():
                self.emit(DeviceFault(self.device_id, "timeout", str(exc)))
            return str(exc) if not self._closed.is_set() else self._close_reason
        return self._close_reason

    async def _wait_for_work(self) -> bool:
        """Sleep until there is something to send (True) or a heartbeat is due (False)."""
        due: list[float] = []
        if self.pacer.pending:
            due.append(self.pacer.due_at())
        if self._clear_win_at is not None:
            due.append(self._clear_win_at)
        self._wake.clear()
        waits: set[asyncio.Future[object]] = {
            asyncio.ensure_future(self._wake.wait()),
            asyncio.ensure_future(self._closed.wait()),
        }
        if due:
            waits.add(asyncio.ensure_future(self.clock.sleep(min(due) - self.clock.now())))
        try:
            timeout = self.settings.heartbeat_interval or None
            finished, _ = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()
        return bool(finished)
