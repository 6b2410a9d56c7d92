"""`ServiceTasks.close()` (floor/tasks.py), which the floor and the link await at their stop, ends every task even one
that swallows its cancel, as Python 3.11's `asyncio.wait_for` does when the cancel lands in the loop turn its inner
wait completes (cpython#86296; aiomqtt waits that way inside publish, subscribe and disconnect, out of our hands).
Awaiting such a task once waited for ever: the service ignored SIGTERM until systemd killed it. The swallowing task
below stands in for that race, which tests/link/test_cancel_race.py drives for real in the link's own loop."""

from __future__ import annotations

import asyncio

from structlog.testing import capture_logs

from floor.tasks import CANCEL_AGAIN_S, ServiceTasks
from tests.swallowing import deaf_once


async def _quiet() -> None:
    await asyncio.sleep(3600)


async def test_close_cancels_again_a_task_that_went_on_after_its_cancel() -> None:
    failures: list[BaseException] = []
    tasks = ServiceTasks("link", failures.append)
    swallowed: list[str] = []
    deaf = tasks.start("link-publisher", deaf_once(swallowed))
    quiet = tasks.start("link-probe", _quiet())
    await asyncio.sleep(0)
    with capture_logs() as logs:
        async with asyncio.timeout(CANCEL_AGAIN_S * 6):  # a bound on failure only: one wait of CANCEL_AGAIN_S
            await tasks.close()
    assert deaf.cancelled() and quiet.cancelled() and swallowed == ["once"]
    assert failures == [], "a task ended by the service's own stop is not a failure"
    again = [e for e in logs if e["event"] == "a link task went on after its cancel; cancelling it again"]
    assert [(e["log_level"], e["task"]) for e in again] == [("warning", "link-publisher")]


async def test_an_error_raised_while_the_service_stops_is_retrieved_not_reported() -> None:
    failures: list[BaseException] = []
    tasks = ServiceTasks("floor", failures.append)

    async def fails_on_cancel() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise RuntimeError("a broken cleanup") from None

    task = tasks.start("floor-writer", fails_on_cancel())
    await asyncio.sleep(0)
    await tasks.close()
    assert isinstance(task.exception(), RuntimeError) and failures == []
