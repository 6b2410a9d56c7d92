"""The reference link's edges: the byte streams it reads and writes, its errors and its timing defaults."""

from __future__ import annotations

from typing import Protocol

DEFAULT_ACK_TIMEOUT = 0.1
DEFAULT_RETRIES = 3
# A UART sender emits a frame back to back; a gap this long inside a frame means it is dead.
IDLE_EXPIRY = 0.05


class ByteReader(Protocol):
    async def read(self, n: int = -1) -> bytes: ...


class ByteWriter(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class LinkError(Exception):
    pass


class LinkTimeout(LinkError):
    """The peer did not ACK a DATA frame after all retransmissions."""


class LinkClosed(LinkError):
    """The transport closed (EOF or read error): for a serial device, an unplug."""
