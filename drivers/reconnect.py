"""Keeping a device connection up: one loop for every driver that owns a line.

A driver opens its line, serves it until it dies, reports the device offline and tries again after a backoff
that starts at BACKOFF_FIRST and doubles to BACKOFF_MAX (reset once a line has opened). A bug in the loop
itself must not leave the controller looking at silence: it is reported as a device fault.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from drivers.interfaces import DeviceFault

log = structlog.get_logger(__name__)

BACKOFF_FIRST = 0.1
BACKOFF_MAX = 5.0


async def reconnect_forever(
    serve: Callable[[], Awaitable[tuple[str, bool]]],
    down: Callable[[str], None],
    crashed: Callable[[Exception], None],
    *,
    running: Callable[[], bool] = lambda: True,
    first: float = BACKOFF_FIRST,
    most: float = BACKOFF_MAX,
) -> None:
    """Until cancelled (or `running()` is false): `serve()` opens the line and serves it until it dies, returning
    why it ended and whether it had opened; `down(reason)` reports that; then wait and try again. An exception
    out of any of them ends the loop through `crashed(exc)`."""
    delay = first
    try:
        while running():
            reason, opened = await serve()
            if opened:
                delay = first
            down(reason)
            await asyncio.sleep(delay)
            delay = min(delay * 2, most)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # should be unreachable; if not, the controller must hear of it
        crashed(exc)


class Reconnecting(ABC):
    """A driver that owns one line: `_supervise()` keeps it up with reconnect_forever. The driver says how to
    open the line (`_connect_once`: None when open, else why not), serve it until it dies (`_watch_link`: why it
    died) and close it (`_drop_link`), and how the device goes offline and reports a fault."""

    device_id: str
    _first_attempt: asyncio.Event  # set after the first attempt either way: start() waits for it

    @abstractmethod
    async def _connect_once(self) -> str | None: ...

    @abstractmethod
    async def _watch_link(self) -> str: ...

    @abstractmethod
    async def _drop_link(self) -> None: ...

    @abstractmethod
    def _set_offline(self, reason: str) -> None: ...

    @abstractmethod
    def emit(self, event: Any) -> None: ...

    def _running(self) -> bool:
        return True

    async def _supervise(self) -> None:
        await reconnect_forever(self._serve_once, self._went_down, self._crashed, running=self._running)

    async def _serve_once(self) -> tuple[str, bool]:
        reason = await self._connect_once()
        opened = reason is None
        if reason is None:
            reason = await self._watch_link()
        await self._drop_link()
        return reason, opened

    def _went_down(self, reason: str) -> None:
        self._set_offline(reason)
        self._first_attempt.set()

    def _crashed(self, exc: Exception) -> None:
        log.exception("driver supervisor crashed", device=self.device_id)
        self.emit(DeviceFault(self.device_id, "driver_error", f"supervisor crashed: {exc!r}"))
        self._set_offline(f"driver error: {exc!r}")
