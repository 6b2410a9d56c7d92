"""The journal's writer thread: a step's commit (and its fsync) runs off the event loop.

While the disk syncs, the loop keeps reading the devices, ACKing their frames and queueing their inputs, which
the service then steps and commits together in the next transaction (group commit). Nothing else changes:
the service awaits the commit before it takes the new state, tells anyone, or sends a device command, so
nothing leaves the process before the journal holds the events that decided it (DESIGN.md, "journal first").

Events the shell journals itself (`TableService.note`) go through the same journal lock; a note that lands
while a step's commit is in flight is ordered after it, and that commit's events are announced first, so the
listeners still see every event in seq order.

The moment a commit is durable the writer thread hands its events to `on_durable` on the loop (the publisher's
`offer`, docs/mqtt.md "Latency"): one call_soon_threadsafe, ahead of the service resuming, announcing and waking
anyone, and without the loop reading the events back from the file under the journal's lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

from controller.core.events import DomainEvent, JournaledEvent
from controller.store.journal import Journal
from controller.store.records import Record


@dataclass(eq=False)
class Commit:
    """One step batch's commit: set by the writer thread under the journal's lock, read by the loop."""

    journaled: list[JournaledEvent] | None = None
    announced: bool = False
    finished: threading.Event = field(default_factory=threading.Event)
    running: asyncio.Future[None] | None = None


class JournalWriter:
    """Runs Journal.append on one thread of its own, one commit at a time (the service steps one batch at a time)."""

    def __init__(self, journal: Journal, on_durable: Callable[[list[JournaledEvent]], None] | None = None) -> None:
        self._journal = journal
        self._on_durable = on_durable
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal-writer")
        self.in_flight: Commit | None = None

    def submit(self, events: Sequence[DomainEvent], now: datetime, records: Sequence[Record]) -> Commit:
        """Hand a commit to the writer thread now (not when a task first runs, so a cancellation cannot leave it
        unsubmitted yet waited for); `wait` for it."""
        commit = Commit()
        self.in_flight = commit
        loop = asyncio.get_running_loop()
        on_durable = self._on_durable

        def work() -> None:
            with self._journal.serialised():
                try:
                    commit.journaled = self._journal.append(events, now, records)
                    # The anchor's fdatasync here too, not on the loop when the publisher reads these events out
                    # (Journal.outbox makes it durable first): the loop keeps reading the devices meanwhile.
                    self._journal.make_durable()
                    if on_durable is not None and commit.journaled:
                        # A loop already closed has nobody left to publish to: the events wait in the outbox.
                        with contextlib.suppress(RuntimeError):
                            loop.call_soon_threadsafe(on_durable, commit.journaled)
                finally:
                    # Before the lock goes: a note that appends next must find this commit finished.
                    commit.finished.set()

        commit.running = loop.run_in_executor(self._thread, work)
        return commit

    async def wait(self, commit: Commit) -> None:
        """Return once the commit is durable, or raise what the journal raised. Cancelled meanwhile, it first waits
        for the commit to finish: what the journal holds and what the service believes must not part."""
        assert commit.running is not None
        try:
            await asyncio.shield(commit.running)
        except asyncio.CancelledError:
            commit.finished.wait()
            raise
        finally:
            if self.in_flight is commit and commit.finished.is_set():
                self.in_flight = None

    def close(self) -> None:
        self._thread.shutdown(wait=True)
