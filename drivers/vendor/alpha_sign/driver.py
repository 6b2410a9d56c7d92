"""Driver for off-the-shelf LED signs that speak the Alpha Sign Communications Protocol (docs/alpha-sign.md).

Written from the protocol's public description; the packets are in packets.py. The sign's memory is laid out
once per connection (Write SPECIAL FUNCTION "$"): TEXT file "A" holds one message per level, each a caption and a
reference to that level's STRING file, so a meter update rewrites only a short STRING file ("G") and the
display does not restart; a win goes to the priority TEXT file "0", which overrides everything until it is
cleared. Every update is confirmed by reading the files back ("H", "B"): MetersShown carries what the sign
returned, not what was sent. A heartbeat writes and reads back STRING file "Z"; a sign that stops answering
is offline and is laid out again, with the latest values, once it answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import termios
from collections.abc import Mapping
from typing import ClassVar, Literal

import serial
import serial_asyncio_fast
from pydantic import BaseModel, ConfigDict, Field, field_validator

from drivers.base import DeviceBase
from drivers.interfaces import DeviceFaultCleared, MetersShown
from drivers.sign_pacing import (
    Clock,
    LoopClock,
    SignPacer,
    Win,
    check_updates_per_second,
    give_up_wins,
    level_problem,
    levels_problem,
    win_problem,
)
from drivers.tasks import cancel_and_wait, session_task
from drivers.vendor.alpha_sign.packets import (
    CAPTION,
    ESC,
    HEARTBEAT_LABEL,
    IDLE_EXPIRY,
    LEVEL_LABELS,
    MODE_FLASH,
    POSITION_MIDDLE,
    PRIORITY_LABEL,
    READ_STRING,
    READ_TEXT,
    RESPONSE_TYPE,
    TEXT_LABEL,
    WRITE_SPECIAL,
    WRITE_STRING,
    WRITE_TEXT,
    Packet,
    PacketParser,
    caption_for,
    encode_packet,
    format_amount,
    memory_layout,
    parse_amount,
    text_layout,
    win_message,
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


class SignGone(Exception):
    """The sign stopped answering or the port failed: drop the connection and start over."""


class AlphaSign(DeviceBase):
    Settings: ClassVar[type[AlphaSignSettings]] = AlphaSignSettings

    def __init__(self, device_id: str, settings: AlphaSignSettings) -> None:
        super().__init__(device_id)
        self.settings = settings
        self.clock: Clock = LoopClock()  # a test may set another before start()
        self.pacer: SignPacer[Win] = SignPacer(settings.max_updates_per_second)
        self.identity = {
            "model": "Alpha Sign Communications Protocol sign",
            "serial": f"type {settings.type_code} address {settings.address}",
            "firmware": "",
            "firmware_hash": "",
        }  # the protocol has no identify command
        self._reader_task: asyncio.Task[None] | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._parser = PacketParser()
        self._replies: asyncio.Queue[Packet] = asyncio.Queue()
        self._closed = asyncio.Event()
        self._close_reason = ""
        self._wake = asyncio.Event()
        self._last_levels: dict[str, int] | None = None
        self._layout: list[str] | None = None  # the levels the sign's memory is laid out for
        self._shown: dict[str, int] = {}  # what the sign last read back
        # A display_mismatch reported and not yet cleared: the protocol has no fault status, its read-back is the sign's
        # status, so a later read-back of every level as asked is the sign well again (docs/alpha-sign.md).
        self._mismatch = False
        self._clear_win_at: float | None = None
        self._heartbeat = 0

    # --- ProgressiveSign ---------------------------------------------------------------------------------------

    async def stop(self) -> None:
        await super().stop()
        give_up_wins(self.pacer, "the driver stopped", self.fault)

    async def show_levels(self, levels: Mapping[str, int]) -> None:
        """Queue these values for the next slot (replacing values still waiting); MetersShown follows."""
        problem = levels_problem(levels)
        if problem is None and len(levels) > len(LEVEL_LABELS):
            problem = f"{len(levels)} levels; this driver lays out at most {len(LEVEL_LABELS)}"
        if problem is not None:
            self.fault("bad_request", f"show_levels: 'levels': {problem}")
            return
        self._last_levels = dict(levels)
        self.pacer.want_levels(levels)
        self._wake.set()

    async def show_win(self, level: str, amount_cents: int, seat: int) -> None:
        """Queue the win for the next slot and return once the sign has read it back (or it failed: a fault)."""
        problem = win_problem(level, amount_cents, seat)
        if problem is not None:
            self.fault("bad_request", f"show_win: {problem}")
            return
        if not self._online:
            self.fault("offline", "cannot send show_win: device offline")
            return
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.pacer.want_win((level, amount_cents, seat, done))
        self._wake.set()
        await asyncio.shield(done)

    # --- connection ------------------------------------------------------------------------------------------

    async def _connect(self) -> str | None:
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
        # Ends with the session (the line closed, the sign unplugged), which _serve reports: not the driver failing.
        self._reader_task = session_task(
            asyncio.get_running_loop().create_task(self._read(reader), name=f"read:{self.device_id}")
        )
        try:
            # A sign that was away may have restarted blank, or be another sign: lay it out from scratch.
            self._layout = None
            self._mismatch = False  # going online lifts every fault the sign's lock-out held
            await self._lay_out(list(self._last_levels) if self._last_levels else [])
            await self._beat()
        except SignGone as exc:
            return f"no answer from the sign: {exc}"
        self._set_online(port=s.port)
        if self._last_levels is not None and self.pacer.wanted_levels is None:
            self.pacer.want_levels(self._last_levels)
        return None

    async def _disconnect(self) -> None:
        await cancel_and_wait(self._reader_task)
        self._reader_task = None
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()
                async with asyncio.timeout(1.0):
                    await writer.wait_closed()

    def _set_offline(self, reason: str) -> None:
        give_up_wins(self.pacer, f"device offline: {reason}", self.fault)
        super()._set_offline(reason)

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
        if self._parser.discarded_bytes or self._parser.bad_packets:
            self._report_noise(
                f"{self._parser.discarded_bytes} bytes discarded, {self._parser.bad_packets} bad packets so far"
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
            self.fault("display_mismatch", f"the sign shows {wrong} (shown, asked): rewriting at the next slot")
            self._mismatch = True
            self.pacer.retry_levels(levels)
        self.emit(MetersShown(self.device_id, shown))
        if self._mismatch and shown == levels:
            self._mismatch = False
            self.emit(DeviceFaultCleared(self.device_id, "display_mismatch", "every level reads back as asked"))

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
                self.fault("win_not_shown", f"priority file reads {got!r}")
            self._clear_win_at = self.clock.now() + self.settings.win_seconds
        except SignGone as exc:
            self.fault("win_not_shown", f"show_win {level} {amount} cents seat {seat}: {exc}; announce it again")
            raise
        finally:
            # Whatever happened, the caller waiting in show_win hears of it.
            if not done.done():
                done.set_result(shown)

    async def _serve(self) -> str:
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
                    if taken is None:
                        pass
                    elif taken[0] == "win":  # the pacer's kinds type each item: a win's tuple, the levels' dict
                        await self._show_win(taken[1])
                    else:
                        await self._show_levels(taken[1])
                    continue
                if not await self._wait_for_work():
                    await self._beat()
        except SignGone as exc:
            if not self._closed.is_set():
                self.fault("timeout", str(exc))
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
