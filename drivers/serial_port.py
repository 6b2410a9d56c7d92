"""Opening a serial port for the link layer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import SupportsIndex

import serial_asyncio_fast

DEFAULT_BAUDRATE = 115200


class SerialReader(asyncio.StreamReader):
    """A StreamReader that can instead hand each read to a callback (drivers/reference/link.py's ByteFeed): the
    reference link parses and answers its frames in the event loop's read callback, with no task to wake."""

    _on_bytes: Callable[[bytes | Exception], None] | None = None

    def subscribe(self, on_bytes: Callable[[bytes | Exception], None] | None) -> None:
        self._on_bytes = on_bytes
        # What was read before the link started (between the port opening and the link taking it) goes first.
        # StreamReader's own buffer and end flag: typeshed does not declare them.
        buffer: bytearray = self._buffer  # type: ignore[attr-defined]
        if on_bytes is not None and buffer:
            data = bytes(buffer)
            buffer.clear()
            on_bytes(data)
        if on_bytes is not None and self.exception() is not None:
            on_bytes(self.exception())  # type: ignore[arg-type]
        elif on_bytes is not None and self.at_eof():
            on_bytes(b"")

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        if self._on_bytes is not None:
            self._on_bytes(bytes(data))  # the transport's bytes: not copied
        else:
            super().feed_data(data)

    def feed_eof(self) -> None:
        super().feed_eof()
        if self._on_bytes is not None:
            self._on_bytes(b"")

    def set_exception(self, exc: Exception) -> None:
        super().set_exception(exc)
        if self._on_bytes is not None:
            self._on_bytes(exc)


async def open_serial(path: str, baudrate: int = DEFAULT_BAUDRATE) -> tuple[SerialReader, asyncio.StreamWriter]:
    """Open `path` 8N1 at `baudrate`; raises OSError (or serial.SerialException, an OSError) if absent. What
    serial_asyncio_fast.open_serial_connection does, with a reader that can call back."""
    loop = asyncio.get_running_loop()
    reader = SerialReader()
    protocol = asyncio.StreamReaderProtocol(reader)
    transport, _ = await serial_asyncio_fast.create_serial_connection(
        loop, lambda: protocol, url=path, baudrate=baudrate
    )
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)
