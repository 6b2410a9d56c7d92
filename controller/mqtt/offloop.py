"""The publisher's journal work off the event loop: its outbox reads and its outbox marks, one at a time, in the order
asked, on a thread of its own (docs/journal.md, "A disk that hangs").

Each of them takes the journal's lock, which the writer thread holds through a commit (controller/shell/writer.py).
Made on the loop, a read waiting behind a commit that never returns (a hung disk) stopped the whole loop with it,
before the stop's bound could act: no signal handled, no MQTT keepalive, no device frame answered. Here the loop awaits
a future while this thread waits on the lock. The order is the one the loop gave: a read asked after a mark sees it (a
new session's outbox read after the marks the last one left), and every read sees what was committed before it was
asked, as on the loop. A daemon thread: one stuck inside a hung disk does not hold the process's exit (the stop at once
ends with status 3 then, controller/shell/runner.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

import structlog

from controller.core.events import DomainEvent, JournaledEvent
from controller.store.journal import Journal

T = TypeVar("T")

_Job = Callable[[], None]


def _serve(work: queue.SimpleQueue[_Job | None]) -> None:
    while (job := work.get()) is not None:
        job()


def _settle(done: asyncio.Future[T], result: T | None, error: BaseException | None) -> None:
    if done.done():  # its waiter was cancelled meanwhile: the outcome is nobody's
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)  # type: ignore[arg-type]


class JournalThread:
    """Runs the callables it is given on one thread, in order, each result handed back on the caller's loop."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._work: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def post(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        """`fn` queued behind what was posted before; its outcome in the returned future (on this loop)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()

        def job() -> None:
            result: T | None = None
            error: BaseException | None = None
            try:
                result = fn()
            except BaseException as err:  # handed to the waiter on the loop
                error = err
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody is left to tell
                loop.call_soon_threadsafe(_settle, done, result, error)

        if self._thread is None or not self._thread.is_alive():
            self._work = queue.SimpleQueue()
            self._thread = threading.Thread(target=_serve, args=(self._work,), name=self._name, daemon=True)
            self._thread.start()
        self._work.put(job)
        return done

    async def call(self, fn: Callable[[], T]) -> T:
        return await self.post(fn)

    def close(self) -> None:
        """The thread ends once what was posted before is done (a later `post` starts another)."""
        if self._thread is not None:
            self._work.put(None)
            self._thread = None


def append_later(
    thread: JournalThread, journal: Journal, events: list[DomainEvent], log: structlog.typing.FilteringBoundLogger
) -> None:
    """`events` appended on `thread`, behind what was posted before (a publisher's note without a service): a failure
    is logged, nobody awaits it."""
    done = thread.post(lambda: journal.append(events, datetime.now(UTC)))

    def said(f: asyncio.Future[list[JournaledEvent]]) -> None:
        if not f.cancelled() and f.exception() is not None:
            log.error("a note could not be journaled", error=str(f.exception()))

    done.add_done_callback(said)
