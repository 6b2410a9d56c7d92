"""Opening a serial port for the link layer."""

from __future__ import annotations

import asyncio
import functools
import os
import re
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

    def write(self, data: bytes | bytearray | memoryview) -> int:
        """A non-blocking write is one os.write: pyserial's own retries EAGAIN until the OS takes the bytes, so with
        the port's output queue full it spins, and the transport's direct write holds the event loop until the device
        reads (pyserial-asyncio-fast PR #36's second fault). BlockingIOError instead: the transport buffers the bytes
        and writes them when the loop reports the port writable. Anything else is pyserial's own write."""
        if self.write_timeout != 0 or not self.is_open:
            return int(super().write(data))
        try:
            return os.write(self.fd, data)
        except (BlockingIOError, InterruptedError):  # the transport buffers the bytes and retries
            raise
        except OSError as err:  # as pyserial says it: an unplugged device, a pty whose other end closed
            raise serial.SerialException(f"write failed: {err}") from err


class _Transport(serial_asyncio_fast.SerialTransport):
    """serial_asyncio_fast's transport, unregistering its write callback once the buffer it writes from drains.

    Up to 0.16 the library registers the callback when the OS takes only part of a write and never removes it: after
    the drain the loop calls it on every turn (the port stays writable) and logs an AssertionError each time, 12,484 of
    them in 0.1 s after one 200 KB write to a pty. pyserial-asyncio-fast PR #36 (open) fixes it the same way."""

    def _write_ready(self) -> None:
        if self._write_buffer:
            super()._write_ready()
        if not self._write_buffer:
            self._remove_writer()


def _fixed_upstream(version: str) -> bool:
    """True for a serial_asyncio_fast release after 0.16, the last one without PR #36's fix; the test over a pty
    (tests/drivers/test_serial_port.py) says whether a newer release really has it."""
    release = re.match(r"([0-9]+)[.]([0-9]+)", version)
    return release is not None and (int(release[1]), int(release[2])) > (0, 16)


_TRANSPORT: type[serial_asyncio_fast.SerialTransport] = (
    serial_asyncio_fast.SerialTransport if _fixed_upstream(serial_asyncio_fast.__version__) else _Transport
)


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
    # What serial_asyncio_fast.connection_for_serial does, with the transport whose write callback is fixed.
    transport = _TRANSPORT(loop, protocol, port)
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
