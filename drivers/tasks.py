"""Task helpers shared by the link, the drivers and the simulators."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, TypeVarTuple

import structlog

log = structlog.get_logger(__name__)

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


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


async def ended_after_cancel(tasks: Iterable[asyncio.Task[Any]], *, again_after: float) -> None:
    """Return once every one of `tasks`, cancelled already, has ended; one still running `again_after` seconds
    later swallowed its cancel (as cancel_and_wait says) and is cancelled again, said at warning level. Slower than
    cancel_and_wait's turn, so that a task's own cleanup after its cancel is not cut short."""
    pending = {t for t in tasks if not t.done()}
    while pending:
        _, pending = await asyncio.wait(pending, timeout=again_after)
        for task in pending:
            log.warning(
                "a task went on after its cancel; cancelling it again", task=task.get_name(), after_s=again_after
            )
            task.cancel()


# Tasks a watch over a driver's lifetime (controller/shell/supervised.py, which finds a driver's tasks by the name
# "<role>:<device id>") must leave out, with why: each ends as a normal stop, not as the driver failing.
#  - a session's task (a link's reader): it ends with its session, when the device is unplugged or goes silent; the
#    driver's supervisor, which the watch does watch, reports the device offline (the real event) and reconnects.
#  - a simulator's task (drivers/sim): the far end of the cable, not a driver's, though the demo runs it in the
#    table's process; an unplug stops it on purpose.
_UNWATCHED: weakref.WeakKeyDictionary[asyncio.Task[Any], str] = weakref.WeakKeyDictionary()


def session_task(task: asyncio.Task[T]) -> asyncio.Task[T]:
    """Mark `task` as living for one session with the device only (see _UNWATCHED)."""
    return _unwatched(task, "session")


def simulator_task(task: asyncio.Task[T]) -> asyncio.Task[T]:
    """Mark `task` as a simulator's, not a driver's (see _UNWATCHED)."""
    return _unwatched(task, "simulator")


def unwatched(task: asyncio.Task[Any]) -> str | None:
    """Why a driver watch leaves `task` out ("session", "simulator"), or None: it is the driver's for its lifetime."""
    return _UNWATCHED.get(task)


def _unwatched(task: asyncio.Task[T], why: str) -> asyncio.Task[T]:
    _UNWATCHED[task] = why
    task.add_done_callback(_ended)
    return task


def _ended(task: asyncio.Task[Any]) -> None:
    # Cancelled (an unplug, a stop) or returned (its line closed) is a normal stop; an error is not, and with no
    # watch over it, it is said here so that it does not die unnoticed.
    if not task.cancelled() and task.exception() is not None:
        log.error("task failed", task=task.get_name(), kind=_UNWATCHED.get(task), error=repr(task.exception()))


class BlockingCalls:
    """A driver's blocking calls (a vendor library such as pyusb), one at a time, each in a thread named `name`.

    The event loop never blocks on them, and stop() can wait for the call in progress with join(). Cancelling
    the task that awaits call() does not stop the call: the callee must watch a stop flag of its own.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._thread: threading.Thread | None = None
        self._in_call = False  # fn is running (its thread may outlive it by a moment)

    async def call(self, fn: Callable[[*Ts], T], *args: *Ts) -> T:
        previous = self._thread
        if previous is not None and previous.is_alive():
            if self._in_call:
                raise RuntimeError(f"{self.name}: a blocking call is still running")
            # The last call returned its result and its thread is on its way out: one thread at a time.
            await asyncio.to_thread(previous.join)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def settle(outcome: Callable[[], None]) -> None:
            if not future.done():  # the caller may have been cancelled meanwhile
                outcome()

        def run() -> None:
            try:
                result = fn(*args)
            except BaseException as exc:  # whatever it is, the caller must not wait forever
                outcome = functools.partial(future.set_exception, exc)
            else:
                outcome = functools.partial(future.set_result, result)
            finally:
                self._in_call = False
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
                loop.call_soon_threadsafe(settle, outcome)

        self._in_call = True
        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()
        return await future

    async def join(self, within: float) -> bool:
        """Wait (without blocking the loop) for the call in progress; False if it still runs `within` s later."""
        thread = self._thread
        if thread is None:
            return True
        await asyncio.to_thread(thread.join, within)
        if thread.is_alive():
            log.error("blocking call did not end", thread=self.name, waited=within)
            return False
        self._thread = None
        return True
