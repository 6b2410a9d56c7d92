"""The long-lived tasks of a service without a journal (`tablectl floor`, `tablectl link`): none ends unnoticed.

The table's supervisor (controller/shell/tasks.py) journals a task's failure and raises a tilt; the floor and the link
have no journal to write it to and may not import the table's shell (pyproject.toml's contracts), and their state
is in PostgreSQL and at the broker (unacknowledged messages wait there), so their policy is simpler: a task that
ends, whether it raised, was cancelled by anyone but the service, or returned when it should run for ever, is
logged at error level with its name and stops the service with that error; `tablectl` exits 1 and systemd
(Restart=on-failure) starts it again, which loses nothing. A task that hangs is told by `busy`: the watchdog task
asks `stuck()` before each ping, says which task is stuck, and stops pinging, so systemd restarts the service after
WatchdogSec (docs/supervision.md, "The floor and the link").
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog

log = structlog.get_logger("tablectl.tasks")
T = TypeVar("T")
# A task that has not ended this long after its cancel swallowed it and is cancelled again (ServiceTasks.close).
CANCEL_AGAIN_S = 0.5


async def stopped_within(stopping: asyncio.Event, delay: float) -> bool:
    """A retry's backoff at a service's start (its database down), cut short by its stop: True once stopping. A
    stop then ends the start at once, not once the database answers (after systemd's TimeoutStopSec, a SIGKILL)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(delay):
            await stopping.wait()
    return stopping.is_set()


async def unless_stopped(stopping: asyncio.Event, work: Coroutine[Any, Any, T]) -> T | None:
    """`work`'s result (or its error), or None once stopping first, `work` then cancelled and awaited: a database
    connect that hangs (a host that takes the connection and never answers, until connect_timeout) does not hold a
    stop. Both waits are awaited or cancelled here, so neither outlives the call."""
    doing = asyncio.ensure_future(work)
    stop = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({doing, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in (stop, doing):
            if not waiting.done():
                waiting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waiting
    return doing.result() if not doing.cancelled() else None


class TaskEnded(RuntimeError):
    """A long-lived task stopped without raising: cancelled from outside, or returned."""


@dataclass(frozen=True, slots=True)
class Stuck:
    task: str
    seconds: float
    limit_s: float


class ServiceTasks:
    """Starts and watches a service's tasks; `fail` is told the first task to end (the service stops with it)."""

    def __init__(self, service: str, fail: Callable[[BaseException], None]) -> None:
        self.service = service
        self._fail = fail
        self._tasks: set[asyncio.Task[None]] = set()
        self._may_return: set[str] = set()
        self._busy: dict[str, tuple[float, float]] = {}  # task -> (since, limit_s), while inside busy()
        self._said_stuck: set[str] = set()
        self.closing = False
        self.started = False  # a task was started: the service's start is over

    def start(self, name: str, coro: Coroutine[Any, Any, None], *, may_return: bool = False) -> asyncio.Task[None]:
        """A task of the service's life, or (`may_return`) one whose normal end is to return: a claim's answer, a
        watchdog that systemd did not ask for. Kept referenced here until it ends (the loop holds tasks weakly)."""
        self.started = True
        task = asyncio.create_task(coro, name=name)
        if may_return:
            self._may_return.add(name)
        self._tasks.add(task)
        task.add_done_callback(self._ended)
        return task

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        name = task.get_name()
        if self.closing:
            if not task.cancelled():
                task.exception()  # retrieved: an error while the service stops is not a failure to report
            return
        if task.cancelled():
            err: BaseException = TaskEnded(f"{name} was cancelled while the {self.service} ran")
        elif task.exception() is not None:
            err = task.exception()  # type: ignore[assignment]
        elif name in self._may_return:
            return
        else:
            err = TaskEnded(f"{name} returned; it must run as long as the {self.service}")
        log.error(
            f"a {self.service} task ended; stopping",
            task=name,
            error=repr(err),
            then="exit status 1: systemd restarts the service (Restart=on-failure), which loses nothing",
            exc_info=err if not isinstance(err, TaskEnded) else None,
        )
        self._fail(err)

    @contextlib.contextmanager
    def busy(self, task: str, limit_s: float) -> Iterator[None]:
        """Around a step that must not take longer than `limit_s` (a commit): past that, `stuck()` names it."""
        self._busy[task] = (time.monotonic(), limit_s)
        try:
            yield
        finally:
            self._busy.pop(task, None)
            self._said_stuck.discard(task)

    def stuck(self) -> list[Stuck]:
        """The steps running past their limit now; each is logged at error level once per time it is stuck."""
        now = time.monotonic()
        out = [Stuck(t, now - since, limit) for t, (since, limit) in self._busy.items() if now - since > limit]
        for s in out:
            if s.task not in self._said_stuck:
                self._said_stuck.add(s.task)
                log.error(
                    f"a {self.service} task is stuck; the watchdog is no longer pinged",
                    task=s.task,
                    stuck_s=round(s.seconds, 1),
                    limit_s=s.limit_s,
                    then="systemd restarts the service after WatchdogSec, which loses nothing",
                )
        return out

    async def close(self) -> None:
        """At the service's stop: every task cancelled and awaited, none of it reported as a failure.

        A task still running CANCEL_AGAIN_S after its cancel swallowed it (Python 3.11's `asyncio.wait_for`, inside
        aiomqtt's publish, subscribe and disconnect, returns instead of raising when the cancel lands as its inner
        wait completes: cpython#86296) and is cancelled again, said at warning level; awaiting it once would wait
        for ever, and the service would ignore SIGTERM until systemd killed it after TimeoutStopSec."""
        self.closing = True
        pending = set(self._tasks)
        for task in pending:
            task.cancel()
        while pending:
            _, pending = await asyncio.wait(pending, timeout=CANCEL_AGAIN_S)
            for task in pending:
                log.warning(
                    f"a {self.service} task went on after its cancel; cancelling it again",
                    task=task.get_name(),
                    after_s=CANCEL_AGAIN_S,
                )
                task.cancel()
