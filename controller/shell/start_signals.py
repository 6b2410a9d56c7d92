"""SIGINT and SIGTERM in `tablectl run`'s start, before the runner's own handlers are in (controller/shell/runner.py).

Before this, a SIGTERM in the start's first seconds ended the process by the signal's default action (no line, exit
143), and a SIGINT went to asyncio.run's handler, which cancels the main task: a cancel that lands in the loop turn an
`asyncio.wait_for` completes is swallowed on Python 3.11 (cpython#86296), and aiomqtt connects and subscribes with one
(the retained anchor's read, ~1.2 s into the start), so the table ran on with the Ctrl-C lost (user25).

`StartSignals` takes both signals from the verb's launch (controller/cli/main.py): before the loop runs, a signal
raises `StoppedAtStart` at the start's next stage (`reached`, or `running` as the loop starts); once the start's task
runs, it cancels that task, and the runner, which installs its handlers at `hand_over`, acts on a signal whose cancel
was swallowed as if it came then. No signal is lost at any moment of the start, and each ends with one line saying
what was and was not journaled.

Not raised by the handler itself, where the signal lands (start26): that may be any bytecode of an import, and a
class being created turns what its descriptors' `__set_name__` raise into a RuntimeError (`tablectl demo` then ended
"unexpected RuntimeError ... (a bug)", exit 1). The stages before the loop are some tenths of a second apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any, TypeVar

import structlog

log = structlog.get_logger("tablectl")
T = TypeVar("T")
# Ctrl-C's exit status (controller.cli.verb.EXIT_INTERRUPTED; the shell layer does not import the CLI's)
INTERRUPTED = 130

SIGNALS = (signal.SIGINT, signal.SIGTERM)


# The signals `controller.cli.main` took for `run` and `demo` as it launched the verb, before the verb's modules load
# (half of a start's first second: a SIGTERM then ended the process with no line); the verb's main takes them over.
_LAUNCHED: list[StartSignals] = []


def at_launch() -> StartSignals:
    """The start's signals taken now, as the process launches the verb; the verb's main has them by `taken`."""
    start = StartSignals().install()
    _LAUNCHED[:] = [start]
    return start


def taken() -> StartSignals:
    """The signals taken at launch (handed over once), else taken now: a verb's main called without the launcher."""
    if _LAUNCHED:
        return _LAUNCHED.pop()
    return StartSignals().install()


class StoppedAtStart(BaseException):
    """A SIGINT or SIGTERM before the table was up (a BaseException, as KeyboardInterrupt: no `except Exception` of
    the start takes it for a failure of its own). `by`: the signal's name; `stage`: the last stage the start reached."""

    def __init__(self, by: str, stage: str) -> None:
        super().__init__(f"{by} while starting ({stage})")
        self.by = by
        self.stage = stage


class StartSignals:
    """The start's handlers: installed by `install`, given back by `restore` (the runner's replace them meanwhile)."""

    def __init__(self) -> None:
        self.by: str | None = None  # the first signal's name, once one came
        self.stage = "loading the config"  # said in the stop's line: how far the start got
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handed_over = False
        self._previous: dict[int, Any] = {}

    def install(self) -> StartSignals:
        # Not the main thread (a test's tablectl in a thread): signals are the main thread's, and nothing is taken.
        with contextlib.suppress(ValueError):
            for sig in SIGNALS:
                self._previous[sig] = signal.signal(sig, self._caught)
        return self

    def restore(self) -> None:
        if self in _LAUNCHED:  # given back before a verb took them (its arguments refused): no later main takes them
            _LAUNCHED.remove(self)
        for sig, previous in self._previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(sig, previous)
        self._previous.clear()

    def reached(self, stage: str) -> None:
        """The start got to `stage` (at debug level: a test waits for the line; the stop's line names the last). A
        signal that came before the loop runs stops the start here, named by the stage it came in."""
        if self.by is not None and self._loop is None:
            raise StoppedAtStart(self.by, self.stage)
        self.stage = stage
        log.debug("start stage", stage=stage)

    def running(self) -> None:
        """Called first thing in the start's task: from now on a signal cancels it rather than raising."""
        self._task = asyncio.current_task()
        self._loop = asyncio.get_running_loop()
        if self.by is not None:  # came while asyncio.run set up (its raise was not taken): stop here
            raise StoppedAtStart(self.by, self.stage)

    async def guarding(self, start: Awaitable[T]) -> T:
        """`start` awaited as the start's task (`running`): a signal of the start cancels it until the runner's handlers
        are in, and that cancel comes out as the stop's StoppedAtStart (`tablectl run`, `tablectl demo`)."""
        self.running()
        try:
            return await start
        except asyncio.CancelledError:
            stopped = self.stopped()
            if stopped is None:
                raise
            raise stopped from None

    def stopped(self) -> StoppedAtStart | None:
        """The stop a cancel of the start's task stands for, if a signal asked for it."""
        return None if self.by is None or self._handed_over else StoppedAtStart(self.by, self.stage)

    def hand_over(self, act: Callable[[str], None]) -> None:
        """The runner's handlers are in: a signal that came before and whose cancel did not stop the start (swallowed)
        is acted on now by `act` (its name: SIGINT or SIGTERM), as the runner acts on one that comes later."""
        self._handed_over = True
        if self.by is not None:
            log.warning("a signal of the start is acted on now that the table is up", signal=self.by)
            act(self.by)

    def _caught(self, signum: int, frame: FrameType | None) -> None:
        first = self.by is None
        self.by = self.by or signal.Signals(signum).name
        if not first or self._loop is None:
            return  # under way already; or before the loop: raised at the next stage (`reached`, `running`)
        # In the loop's thread but between any two bytecodes: the cancel is done as a callback of the loop.
        with contextlib.suppress(RuntimeError):  # the loop closed already: the start failed and its own exit stands
            self._loop.call_soon_threadsafe(self._cancel)

    def _cancel(self) -> None:
        if not self._handed_over and self._task is not None and not self._task.done():
            self._task.cancel()


TABLE_NOT_UP = (
    "before the table was up: no `table.stopped` is journaled, as the engine never ran (no round was touched); the "
    "next start recovers the journal as this one found it"
)


def stopped_at_start(stop: StoppedAtStart, start: StartSignals, verb: str, left: str = TABLE_NOT_UP) -> int:
    """The one line of a stop before the table was up (`tablectl <verb>`); SIGINT's status is a Ctrl-C's (130), and a
    SIGTERM ends the process by the signal, as it did before the start took it (what systemd and a shell read as
    stopped by it). `start`'s handlers are given back first: the process's own end is the signal's default action.
    `left`: what the stop left (a table's journal as it was; `demo --floor` says what it stopped)."""
    log.warning("stopped while starting: the table was not up", signal=stop.by, stage=stop.stage)
    print(
        f"tablectl {verb}: stopped by {stop.by} while starting ({stop.stage}), {left}",
        file=sys.stderr,
    )
    if stop.by != signal.SIGTERM.name:
        return INTERRUPTED
    start.restore()
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
    return 128 + signal.SIGTERM  # not reached: the process ends by the signal
