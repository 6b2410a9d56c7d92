"""Waiting in a test for what the event loop itself must bring about (a publisher connected, an outbox drained): the
publisher's tests (tests/mqtt/test_publisher.py), the offer's (test_offer.py) and the retained topics'
(test_retained.py) wait so. Shared here, so that no test module imports another or keeps its own copy."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def eventually(condition: Callable[[], bool], within: float = 10.0, what: str = "condition") -> None:
    """Wait for a condition the event loop itself must bring about; `within` only bounds failure."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        await asyncio.sleep(0.01)
