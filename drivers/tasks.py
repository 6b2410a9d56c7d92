"""Task helpers shared by the link, the drivers and the simulators."""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

log = structlog.get_logger(__name__)


async def cancel_and_wait(task: asyncio.Task[Any] | None) -> None:
    """Cancel `task` and return only once it has finished.

    Cancels again while it keeps running: a cancellation that lands in the same loop iteration as the
    completion of an awaited future can be swallowed (asyncio.wait_for in Python 3.11 does this), and
    a single cancel() would then leave the caller waiting forever.
    """
    if task is None:
        return
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=0.1)
    if not task.cancelled() and task.exception() is not None:
        log.error("task ended with an error", task=task.get_name(), error=repr(task.exception()))
