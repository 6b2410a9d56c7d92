"""Opening a serial port for the link layer."""

from __future__ import annotations

import asyncio

import serial_asyncio_fast

DEFAULT_BAUDRATE = 115200


async def open_serial(path: str, baudrate: int = DEFAULT_BAUDRATE) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Open `path` 8N1 at `baudrate`; raises OSError (or serial.SerialException, an OSError) if absent."""
    reader, writer = await serial_asyncio_fast.open_serial_connection(url=path, baudrate=baudrate)
    return reader, writer
