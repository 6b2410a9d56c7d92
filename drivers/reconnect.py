"""Keeping a device connection up: one loop for every driver that owns a line.

A driver opens its line, serves it until it dies, reports the device offline and tries again after a backoff
that starts at BACKOFF_FIRST and doubles to BACKOFF_MAX (reset once a line has opened). A bug in the loop
itself must not leave the controller looking at silence: it is reported as a device fault.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

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
