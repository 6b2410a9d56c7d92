"""A task that swallows its first cancel, as a loop around Python 3.11's `asyncio.wait_for` does when the cancel
lands in the loop turn its inner wait completes (cpython#86296): what a stop must still end. Shared by
tests/floor/test_tasks_close.py and tests/test_stop_again.py; tests/link/test_cancel_race.py drives the race itself."""

from __future__ import annotations

import asyncio


async def deaf_once(swallowed: list[str]) -> None:
    """Runs on after its first cancel (noted in `swallowed`), ends at the second."""
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            if swallowed:
                raise
            swallowed.append("once")
