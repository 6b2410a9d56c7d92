"""`floor.tasks.unless_stopped`, which the floor's database connect runs under: the work's result or error when it
ends first, None once the stop comes first, the work then cancelled (not left running: a connect would hold its
socket) and no task of either wait outliving the call."""

from __future__ import annotations

import asyncio

import pytest

from floor.tasks import unless_stopped


async def _answer(ready: asyncio.Event) -> int:
    await ready.wait()
    return 42


async def _refused() -> int:
    raise ConnectionRefusedError("refused")


async def test_the_work_s_result_or_error_when_it_ends_first() -> None:
    stopping, ready = asyncio.Event(), asyncio.Event()
    ready.set()
    assert await unless_stopped(stopping, _answer(ready)) == 42
    with pytest.raises(ConnectionRefusedError, match="refused"):
        await unless_stopped(stopping, _refused())
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_a_stop_first_cancels_the_work_and_gives_none() -> None:
    stopping, never = asyncio.Event(), asyncio.Event()
    cancelled: list[bool] = []

    async def hangs() -> int:
        try:
            await never.wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return 1

    waiting = asyncio.ensure_future(unless_stopped(stopping, hangs()))
    await asyncio.sleep(0)
    assert not waiting.done()
    stopping.set()
    assert await waiting is None
    assert cancelled == [True]
    assert asyncio.all_tasks() == {asyncio.current_task()}
