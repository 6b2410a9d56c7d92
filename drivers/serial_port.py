"""Opening a serial port for the link layer."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable

import serial
import serial_asyncio_fast

from drivers.reference.transport import PushReader

DEFAULT_BAUDRATE = 115200


class _Port(serial.Serial):  # type: ignore[misc]  # pyserial has no type stubs
    """pyserial's POSIX port, read with one syscall when the event loop said it is readable.

    The transport (serial_asyncio_fast) reads only when the loop reports the fd readable, with timeout 0; pyserial's
    own read then selects on the fd and its abort pipe again before reading, and builds a Timeout: a second syscall and
    about 6 us for every frame a device sends (bench/footprint.py's profile). Anything else (a blocking read, a port
    not open) is pyserial's own read."""

    def read(self, size: int = 1) -> bytes:
        if self.timeout != 0 or not self.is_open:
            return bytes(super().read(size))
        try:
            data = os.read(self.fd, size)
        except (BlockingIOError, InterruptedError):
            return b""
        except OSError as err:  # as pyserial says it: an unplugged device, a pty whose other end closed (EIO)
            raise serial.SerialException(f"read failed: {err}") from err
        if not data:
            # Linux reports a disconnected port readable but returns nothing: pyserial's words for it.
            raise serial.SerialException(
                "device reports readiness to read but returned no data "
                "(device disconnected or multiple access on port?)"
            )
        return data


async def open_serial(path: str, baudrate: int = DEFAULT_BAUDRATE) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Open `path` 8N1 at `baudrate`; raises OSError (or serial.SerialException, an OSError) if absent. A pyserial URL
    (`socket://`, `rfc2217://`...) is opened by pyserial's own handler for it."""
    if "://" in path:
        return await serial_asyncio_fast.open_serial_connection(url=path, baudrate=baudrate)
    loop = asyncio.get_running_loop()
    # Opened in the executor as serial_asyncio_fast does: opening a real port may block.
    port = await loop.run_in_executor(None, functools.partial(_Port, path, baudrate))
    # A PushReader: the reference link parses each chunk in the transport's read callback (one wake-up a frame).
    reader = PushReader(loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    transport, _ = await serial_asyncio_fast.connection_for_serial(loop, lambda: protocol, port)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


def unread_input(writer: asyncio.StreamWriter) -> Callable[[], int] | None:
    """How many received bytes the OS holds for the port `writer` writes to, not yet read (pyserial's `in_waiting`:
    TIOCINQ on a tty), or None for a transport without a serial port. OSError (serial.SerialException) once the port
    is gone."""
    port = writer.get_extra_info("serial")
    if not isinstance(port, serial.Serial):
        return None

    def in_waiting() -> int:
        return int(port.in_waiting)

    return in_waiting
