"""A real journal that notes the thread of each commit, and its lock held from another thread as a slow disk holds a
commit in its fsync: the writer thread's tests use them (tests/journal/test_writer_thread.py), and so do the locks'
(test_locks_before_commit.py). Shared here, so that neither test module imports the other."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from controller.core.events import DomainEvent, JournaledEvent
from controller.store.journal import Journal
from controller.store.records import Record


class RecordingJournal(Journal):
    """A real journal that notes, for each commit, the thread it ran on and how many events it held."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commits: list[tuple[str, list[str]]] = []  # (thread, each event's payload detail)

    def append(
        self, events: Sequence[DomainEvent], now: datetime, records: Sequence[Record] = ()
    ) -> list[JournaledEvent]:
        out = super().append(events, now, records)
        if events:
            details = [str(e.payload.get("detail", "")) for e in events]
            self.commits.append((threading.current_thread().name, details))
        return out


@contextmanager
def disk_stalled(journal: Journal) -> Iterator[threading.Event]:
    """Hold the journal's lock from another thread (a commit stuck in its fsync) until the yielded event is set."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with journal.serialised():
            held.set()
            release.wait()

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait()
    try:
        yield release
    finally:
        release.set()
        thread.join()
