"""The daemon's long-lived tasks under one supervisor: none dies unnoticed (docs/supervision.md).

Every task beside the engine loop (the publisher, the command listener, the tick, the meters feed, the console,
systemd's notifier, each device's watch, the demo's people) runs in one asyncio TaskGroup, each wrapped by
`_keep`. When one raises, the failure is journaled (`task.failed`: the task, the error, what happens next), so the
publisher sends it once the broker is reachable, and the task is either restarted after a backoff or escalated:
the table raises the tilt `tilt:task:<name>` (no new round until a supervisor clears it) and the retained status
says `degraded` and why. While a task marked `required` is down, `down()` says so and the systemd watchdog stops
pinging. A storage failure is not a task's to survive: it stops the table (controller/store/failure.py).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import structlog

from controller.core.events import DomainEvent
from controller.engine.inputs import Input, RaiseTilt
from controller.store.failure import StorageError

log = structlog.get_logger("tablectl.tasks")

Policy = Literal["restart", "escalate"]
TASK_TILT = "tilt:task:"


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """One supervised task. `start` makes a fresh coroutine for each (re)start. `policy` "restart": restarted
    with backoff, escalated once it failed `escalate_after` times within the window; "escalate": the first
    failure raises the tilt (and the task is still restarted, slowly, so it may heal). `required`: the table is
    not healthy while it is down (the watchdog stops pinging). `why` is the reason for the choice, in the log."""

    name: str
    start: Callable[[], Coroutine[Any, Any, None]]
    policy: Policy = "restart"
    required: bool = False
    escalate_after: int = 5
    why: str = ""


class Table(Protocol):
    """What the supervisor needs of the service: journal an event, queue an input."""

    def note(self, events: list[DomainEvent]) -> object: ...

    def submit(self, inp: Input) -> None: ...


class TaskSupervisor:
    def __init__(
        self,
        table: Table,
        *,
        on_change: Callable[[], None] = lambda: None,
        backoff_min: float = 0.5,
        backoff_max: float = 30.0,
        window: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._table = table
        self._on_change = on_change
        self._backoff = (backoff_min, backoff_max)
        self._window = window
        self._clock = clock
        self._down: dict[str, tuple[bool, str]] = {}  # name -> (required, why), while not running
        self._group: asyncio.TaskGroup | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.failures: dict[str, int] = {}  # name -> failures since start (tests, the fault campaign)

    # -- what the rest of the shell asks ---------------------------------------------------------------------

    def down(self, required_only: bool = False) -> dict[str, str]:
        """The tasks not running now (failed, waiting to restart), with why."""
        return {n: why for n, (req, why) in self._down.items() if req or not required_only}

    def running(self) -> list[str]:
        return [n for n, t in self._tasks.items() if not t.done()]

    def alive(self) -> list[asyncio.Task[None]]:
        """The tasks not ended yet (the runner's stop waits for them, cancelling again one that swallowed it)."""
        return [t for t in self._tasks.values() if not t.done()]

    # -- running ---------------------------------------------------------------------------------------------

    async def run(self, specs: Sequence[TaskSpec]) -> None:
        """Run every task until each has returned, or until cancelled (then every task is cancelled with it). A
        StorageError from any task ends them all and propagates (in an ExceptionGroup, as TaskGroup raises)."""
        async with asyncio.TaskGroup() as group:
            self._group = group
            for spec in specs:
                self._tasks[spec.name] = group.create_task(self._keep(spec), name=spec.name)
        self._group = None

    def add(self, spec: TaskSpec) -> None:
        """Start one more task under the running supervisor (a device's watch, once the devices are up)."""
        if self._group is None:
            raise RuntimeError(f"task {spec.name}: the supervisor is not running")
        self._tasks[spec.name] = self._group.create_task(self._keep(spec), name=spec.name)

    def cancel(self, *names: str) -> None:
        """Stop these tasks (all but the publisher, as the table shuts down); a cancelled task is not restarted."""
        for name in names:
            task = self._tasks.get(name)
            if task is not None:
                task.cancel()

    async def _keep(self, spec: TaskSpec) -> None:
        """`spec`'s task, restarted or escalated after each failure, until it returns or is cancelled."""
        recent: deque[float] = deque()
        escalated = False
        delay = self._backoff[0]
        while True:
            started = self._clock()
            try:
                await spec.start()
                return  # returned by itself: it is done (the publisher after close(), a demo's people at the end)
            except StorageError:
                raise  # the table cannot go on without its journal: the runner stops it
            except Exception as err:
                failure = err
            self.failures[spec.name] = self.failures.get(spec.name, 0) + 1
            now = self._clock()
            if now - started > self._window:
                delay = self._backoff[0]  # it ran well for a while: this is a new failure, not the same one again
            recent.append(now)
            while recent and now - recent[0] > self._window:
                recent.popleft()
            escalate = not escalated and (spec.policy == "escalate" or len(recent) >= spec.escalate_after)
            self._down[spec.name] = (spec.required, f"{spec.name} failed: {failure!r}")
            self._report(spec, failure, delay, escalate, len(recent))
            if escalate:
                escalated = True
                self._table.submit(
                    RaiseTilt(
                        f"{TASK_TILT}{spec.name}",
                        f"the {spec.name} task failed {len(recent)} time(s) in {self._window:g} s: {failure!r}",
                        "the task keeps being restarted; once it runs again (see the task.failed events and the "
                        "log), a supervisor clears the tilt",
                    )
                )
            self._on_change()
            try:
                await asyncio.sleep(delay)
            finally:
                self._down.pop(spec.name, None)
                self._on_change()
            delay = min(delay * 2, self._backoff[1])

    def _report(self, spec: TaskSpec, err: Exception, delay: float, escalate: bool, count: int) -> None:
        then = f"restarted in {delay:g} s" + (f"; tilt {TASK_TILT}{spec.name} raised" if escalate else "")
        log.error(
            "task failed",
            task=spec.name,
            error=repr(err),
            then=then,
            failures_in_window=count,
            policy=spec.policy,
            why=spec.why,
            exc_info=err,
        )
        payload = {
            "task": spec.name,
            "error": repr(err)[:500],
            "then": then,
            "restart_in_seconds": delay,
            "escalated": escalate,
            "failures_in_window": count,
            "required": spec.required,
        }
        self._table.note([DomainEvent("task.failed", None, payload)])


def degraded_reason(supervisor: TaskSupervisor, blocks: dict[str, str]) -> str | None:
    """Why the retained status says degraded, or None: tasks down now, and tasks' tilts not yet cleared."""
    parts = [f"task {name} down ({why})" for name, why in sorted(supervisor.down().items())]
    parts += [f"{key}: {reason}" for key, reason in sorted(blocks.items()) if key.startswith(TASK_TILT)]
    return "; ".join(parts) or None
