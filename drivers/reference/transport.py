"""The reference link's edges: the byte streams it reads and writes, its errors and its timing defaults."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Protocol, SupportsIndex

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


class PushReader(asyncio.StreamReader):
    """A StreamReader that, once a consumer is attached, hands it each chunk in the transport's own read callback.

    A plain StreamReader buffers the chunk and wakes the task awaiting `read`: two loop callbacks for every frame a
    device sends, and the frame waits a turn for its parse (bench/footprint.py --wakeups). The reference link attaches
    its parser instead (LinkCore.start), so a frame is parsed, ACKed and delivered in the callback that read it.
    Until then it is an ordinary StreamReader; what arrived before `attach` is handed over first. `read` and `attach`
    are alternatives: one consumer per port."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(loop=loop)
        self._on_bytes: Callable[[bytes], None] | None = None
        self._on_end: Callable[[BaseException | None], None] | None = None
        # What arrived before a consumer was attached (None once someone read: the buffer is theirs then).
        self._early: bytearray | None = bytearray()
        self._ended = False

    def attach(self, on_bytes: Callable[[bytes], None], on_end: Callable[[BaseException | None], None]) -> None:
        """From now on call on_bytes(chunk) for each chunk read, and on_end(None) at end of file or on_end(error) when
        the transport failed, once. Whatever arrived before is handed over at once."""
        if self._early is None:
            raise RuntimeError("this reader is already being read with read()")
        early, self._early = bytes(self._early), None
        self._on_bytes, self._on_end = on_bytes, on_end
        if early:
            on_bytes(early)
        error = self.exception()
        if error is not None or self._ended:
            on_end(error)

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        chunk = bytes(data)  # the transport's bytes already: no copy
        if self._on_bytes is not None:
            self._on_bytes(chunk)
            return
        if self._early is not None:
            self._early += chunk
        super().feed_data(chunk)

    def feed_eof(self) -> None:
        super().feed_eof()
        self._ended = True
        if self._on_end is not None:
            self._on_end(None)

    def set_exception(self, exc: Exception) -> None:
        super().set_exception(exc)
        if self._on_end is not None:
            self._on_end(exc)

    async def read(self, n: int = -1) -> bytes:
        self._early = None
        return await super().read(n)
