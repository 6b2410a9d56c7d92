"""The table's stop reaches a task that swallowed its cancel (Python 3.11's `asyncio.wait_for`, cpython#86296, inside
a library: tests/test_no_wait_for.py keeps it out of ours): SIGTERM's handler cancels the service again each
STOP_AGAIN_S while it runs on (controller/shell/runner.py `_stop_now`), and the runner's last wait cancels again
whatever went on (drivers/tasks.py `ended_after_cancel`). Awaited once, such a task held `tablectl run` past SIGTERM
until systemd killed it after TimeoutStopSec. The swallowing task stands in for the race, which
tests/link/test_cancel_race.py drives for real."""

from __future__ import annotations

import asyncio

from structlog.testing import capture_logs

from controller.shell.runner import STOP_AGAIN_S, _stop_now
from drivers.tasks import ended_after_cancel
from tests.swallowing import deaf_once


async def test_sigterms_handler_cancels_the_service_again_while_it_runs_on() -> None:
    swallowed: list[str] = []
    task = asyncio.create_task(deaf_once(swallowed), name="service")
    await asyncio.sleep(0)
    with capture_logs() as logs:
        _stop_now(task)
        done, _ = await asyncio.wait({task}, timeout=STOP_AGAIN_S * 5)  # a bound on failure only
    assert task in done and task.cancelled() and swallowed == ["once"]
    again = [e for e in logs if e["event"] == "the table went on after its stop; cancelling it again"]
    assert [(e["log_level"], e["task"]) for e in again] == [("warning", "service")]


async def test_the_last_wait_cancels_again_only_what_went_on() -> None:
    swallowed: list[str] = []
    deaf = asyncio.create_task(deaf_once(swallowed), name="publisher")
    quiet = asyncio.create_task(asyncio.sleep(3600), name="device-watches")
    await asyncio.sleep(0)
    deaf.cancel()
    quiet.cancel()
    with capture_logs() as logs:
        async with asyncio.timeout(5):  # a bound on failure only: one wait of 0.2 s
            await ended_after_cancel([deaf, quiet], again_after=0.2)
    assert deaf.cancelled() and quiet.cancelled() and swallowed == ["once"]
    again = [e for e in logs if e["event"] == "a task went on after its cancel; cancelling it again"]
    assert [(e["log_level"], e["task"]) for e in again] == [("warning", "publisher")]


async def test_the_handler_leaves_a_service_waiting_out_a_slow_commit_alone_until_that_wait_ends() -> None:
    """A service that waits out a slow journal commit after its cancel (controller/shell/writer.py wait_while_moving,
    bounded by itself) is not cancelled again nor said to have gone on; once that wait is over, it is, as before."""
    swallowed: list[str] = []
    task = asyncio.create_task(deaf_once(swallowed), name="service")
    await asyncio.sleep(0)
    settling = [True, True, False]  # what the handler finds at each look, one STOP_AGAIN_S apart
    with capture_logs() as logs:
        _stop_now(task, lambda: settling.pop(0) if len(settling) > 1 else settling[0])
        done, _ = await asyncio.wait({task}, timeout=STOP_AGAIN_S * 8)  # a bound on failure only
    assert task in done and task.cancelled() and swallowed == ["once"] and settling == [False]
    again = [e for e in logs if e["event"] == "the table went on after its stop; cancelling it again"]
    assert [(e["log_level"], e["task"]) for e in again] == [("warning", "service")]
