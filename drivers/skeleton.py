"""Skeleton driver: copy this file to start a driver for your own device (as Network UPS Tools' skel.c is for UPS
drivers). docs/new-driver.md walks through it and says how to package and register it.

The device is a made-up counting batch shuffler (interfaces.Shuffler) speaking a line protocol on a serial port,
ASCII lines ending in CR LF:

    host -> device      device -> host
    ID?                 ID <model> <serial> <firmware>
    PING                PONG
    SHUFFLE             DONE <cards counted>        when the shuffle is over
                        ERR <code> <detail>         at any time: a jam, the lid open...

Replace the protocol with yours and keep the shape: `_connect` reaches the device and calls `_set_online`,
`_serve` reads until the line dies or the device falls silent and says why, `_disconnect` lets the port go.
DeviceBase does the rest: start() and stop(), reconnecting with a backoff after an unplug, reporting the device
offline once per outage, handing events to the controller, reporting a crash of its own loop as a fault.

This module is not registered by tablectl itself (a skeleton is not a driver an operator should pick); its test
registers it the way your package will register yours.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import ClassVar, Literal

import structlog
from pydantic import BaseModel, ConfigDict, Field

from drivers.base import DeviceBase
from drivers.interfaces import ShuffleCompleted
from drivers.serial_port import open_serial

log = structlog.get_logger(__name__)


class SkeletonShufflerSettings(BaseModel):
    """What a table's config may set under `[devices.shuffler]`; the registry validates it before __init__."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    driver: Literal["skeleton-shuffler"] = "skeleton-shuffler"  # the entry-point name your package registers
    port: str = Field(min_length=1, description="serial port, ideally a stable udev name")
    baudrate: int = Field(default=9600, gt=0)
    reply_timeout: float = Field(default=1.0, gt=0, description="seconds to wait for the answer to ID? or PING")
    heartbeat_interval: float = Field(default=2.0, gt=0, description="seconds of silence before the driver pings")


class LineDead(Exception):
    """The port failed or closed (for a USB serial adapter: the cable was pulled)."""


class BadLine(ValueError):
    """A line with a byte the protocol has no use for; the device is there, the line is refused."""

    def __init__(self, line: bytes, why: str) -> None:
        super().__init__(f"{why}: {line[:200]!r}")
        self.line = line
        self.why = why


# A line is printable ASCII words spaced with " ", ending CR LF. bytes.strip() takes ASCII whitespace only (the
# CR LF, and spaces or tabs around the line); str.split() and str.strip() on the decoded text also took U+001C..U+001F
# (file, group, record and unit separators) as spaces, so "ID\x1cSKEL-1 SN0042 2.1" was an identity and
# "\x1cDONE 52" a count. Drivers cannot import controller.core.spaces: this is the skeleton's own strict reading.
_PRINTABLE = range(0x20, 0x7F)


def printable_line(data: bytes) -> str:
    """`data` (one line as read) without the ASCII whitespace around it, as text; BadLine naming the first byte that
    is not printable ASCII (a control character, DEL, or any byte of another encoding) otherwise."""
    line = data.strip()
    for offset, byte in enumerate(line):
        if byte not in _PRINTABLE:
            raise BadLine(line, f"byte 0x{byte:02x} at offset {offset} is not printable ASCII (0x20-0x7e)")
    return line.decode("ascii")


def _words(line: str) -> list[str]:
    """The words of a printable_line(): only " " spaces are left in it to split on."""
    return [word for word in line.split(" ") if word]


class SkeletonShuffler(DeviceBase):
    Settings: ClassVar[type[SkeletonShufflerSettings]] = SkeletonShufflerSettings

    def __init__(self, device_id: str, settings: SkeletonShufflerSettings) -> None:
        super().__init__(device_id)
        self.settings = settings
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    # --- what the controller calls (interfaces.Shuffler) ---------------------------------------------------

    async def shuffle(self) -> None:
        """Start a shuffle; ShuffleCompleted follows when the device says DONE. Never raises: a failure is a fault."""
        if not self.online or not await self._write("SHUFFLE"):
            self.fault("offline", "cannot send shuffle: device offline")

    # --- DeviceBase session ------------------------------------------------------------------------------

    async def _connect(self) -> str | None:
        try:
            self._reader, self._writer = await open_serial(self.settings.port, self.settings.baudrate)
        except (OSError, ValueError) as exc:
            return f"cannot open {self.settings.port}: {exc}"
        if not await self._write("ID?"):
            return "cannot write to the port"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.reply_timeout
        words: list[str] = []
        try:
            while words[:1] != ["ID"]:  # whatever the device said before it heard us is stale
                try:
                    line = await self._line_within(deadline - loop.time())
                except BadLine as exc:
                    if exc.line.startswith(b"ID"):  # a control or non-ASCII byte in it: no identity
                        return f"not an identity: {exc}"
                    continue
                if line is None:
                    return f"no answer to ID? within {self.settings.reply_timeout:g} s"
                words = _words(line)
        except LineDead as exc:
            return str(exc)
        if len(words) != 4:
            return f"not an identity: {' '.join(words)!r}"
        self._set_online({"model": words[1], "serial": words[2], "firmware": words[3]}, port=self.settings.port)
        return None

    async def _serve(self) -> str:
        pinged = False
        while True:
            wait = self.settings.reply_timeout if pinged else self.settings.heartbeat_interval
            try:
                line = await self._line_within(wait)
            except BadLine as exc:
                pinged = False  # garbled, but the device is alive
                self._refuse(exc.line, exc.why)
                continue
            except LineDead as exc:
                return str(exc)
            if line is None:
                if pinged:
                    return "heartbeat: no answer to PING"  # plugged in but silent: offline all the same
                pinged = await self._write("PING")
                continue
            pinged = False  # any line shows the device is alive
            self._handle(line)

    async def _disconnect(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            with contextlib.suppress(Exception):  # the port may be gone already
                writer.close()
                async with asyncio.timeout(1.0):
                    await writer.wait_closed()

    # --- the device's protocol ---------------------------------------------------------------------------

    def _handle(self, line: str) -> None:
        """Turn one line from the device into an event. Nothing it says may raise here: a line that makes no
        sense is a fault the controller hears of, and the driver reads on."""
        word, _, rest = line.partition(" ")
        if word in ("", "PONG"):
            return
        if word == "DONE":
            # isdigit() alone is true for a superscript two, which int() refuses: only 0-9 is a count. _read_line
            # refuses non-ASCII bytes already; a copy that decodes latin-1 or UTF-8 would let them in.
            if rest.isascii() and rest.isdigit():
                self.emit(ShuffleCompleted(self.device_id, card_count=int(rest)))
            else:
                self._refuse(line, "DONE without a card count in ASCII digits (e.g. DONE 52)")
        elif word == "ERR" and rest:
            code, _, detail = rest.partition(" ")
            self.fault(code, detail)
        else:
            self._refuse(line, "unexpected line from the device")

    def _refuse(self, line: str | bytes, why: str) -> None:
        """A line that makes no sense: logged here, a fault for the controller, and the driver reads on."""
        detail = f"{why}: {line[:200]!r}"
        log.warning("refused a line from the device", device=self.device_id, detail=detail)
        self.fault("bad_message", detail)

    async def _line_within(self, seconds: float) -> str | None:
        """The next line within `seconds`; None when none came. A line that came in time is taken even when this
        process stalled past the timeout (a GC pause, a loaded machine): the read and the timer are then due in the
        same turn of the loop, the timer first, and the line waits in the reader. Without this second look the
        device went offline for an answer it gave in time (the reference host reads its port before it resends,
        docs/protocol.md section 4)."""
        try:
            async with asyncio.timeout(max(seconds, 0)):
                return await self._read_line()
        except TimeoutError:
            pass
        try:
            async with asyncio.timeout(0):  # only what the reader holds already: cancelled at its first wait
                return await self._read_line()
        except TimeoutError:
            return None

    async def _read_line(self) -> str:
        if self._reader is None:
            raise LineDead("port closed")
        try:
            data = await self._reader.readline()
        except ValueError:  # a line longer than the reader's limit: noise, not a reason to drop the device
            self.fault("line_noise", "an overlong line was dropped")
            return ""
        except Exception as exc:  # pyserial reports a pulled cable as an OSError or SerialException
            raise LineDead(f"read failed: {exc}") from exc
        if not data:
            raise LineDead("end of file")
        return printable_line(data)

    async def _write(self, line: str) -> bool:
        """False when the line could not be written (the read side will find out why)."""
        if self._writer is None:
            return False
        try:
            self._writer.write(line.encode("ascii") + b"\r\n")
            await self._writer.drain()
        except (OSError, RuntimeError, ConnectionError):
            return False
        return True
