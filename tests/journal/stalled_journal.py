"""A real journal that notes the thread of each commit, and its lock held from another thread as a slow disk holds a
commit in its fsync: the writer thread's tests use them (tests/journal/test_writer_thread.py), and so do the locks'
(test_locks_before_commit.py); and a real daemon's hung disk (test_note_hung_disk.py). Shared here, so that no test
module imports another."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from controller.core.events import DomainEvent, JournaledEvent
from controller.shell.service import TableService
from controller.shell.writer import Commit
from controller.store import hung_disk
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


class ThrottledJournal(RecordingJournal):
    """A real journal whose next commit, on the thread that makes it, is held first by a slow disk (`throttled`: it
    writes a file beside the journal 4 KiB at a time with a pause between, real write calls that the kernel counts, as
    SQLite's own writes on a disk the kernel throttles) or by a hung one (`stopped`: it waits and does nothing, as a
    write that never returns). What cannot run here is a disk that is slow or hangs (no device-mapper delay target, no
    FUSE server): the writer thread does what such a disk would make it do."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.held = threading.Event()  # the commit is inside the slow or hung disk
        self.release = threading.Event()  # a stopped commit goes on; a bound on failure only for a throttled one
        self._hold: tuple[str, int, float] | None = None
        self.written = 0  # bytes the slow disk took (a throttled commit)

    def throttled(self, chunks: int, pause_s: float) -> None:
        """The next commit first writes `chunks` times 4 KiB, `pause_s` apart."""
        self._hold = ("throttled", chunks, pause_s)

    def stopped(self) -> None:
        """The next commit waits for `release`, doing nothing meanwhile."""
        self._hold = ("stopped", 0, 0.0)

    def append(
        self, events: Sequence[DomainEvent], now: datetime, records: Sequence[Record] = ()
    ) -> list[JournaledEvent]:
        hold, self._hold = self._hold, None
        if hold is not None:
            with self.serialised():
                self.held.set()
                if hold[0] == "stopped":
                    self.release.wait()
                else:
                    with open(f"{self.path}.throttle", "wb", buffering=0) as f:
                        for _ in range(hold[1]):
                            self.written += f.write(b"\0" * 4096) or 0
                            self.release.wait(hold[2])
        return super().append(events, now, records)


def hung_disk_env(fifo: Path) -> dict[str, str]:
    """The environment of a `tablectl run` whose journal's disk `disk_hung(fifo)` can hang (a test-only hook,
    controller/store/hung_disk.py: the lock of a journal in another process cannot be held from here)."""
    return {**os.environ, hung_disk.ENV: str(fifo), "PYTHONUNBUFFERED": "1"}


@contextmanager
def disk_hung(fifo: Path) -> Iterator[None]:
    """From now on every commit of the daemon started with hung_disk_env(fifo) blocks inside its transaction (SQLite's
    write lock and the journal's lock held), as on a disk that does not answer, until the block ends."""
    os.mkfifo(fifo)
    try:
        yield
    finally:
        # Opened for reading and writing, a FIFO never blocks, and the commit blocked opening it goes on.
        fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        os.unlink(fifo)
        os.close(fd)


def submissions(svc: TableService) -> asyncio.Queue[Commit]:
    """Every commit handed to the service's writer thread from now on, in order (the stop's tests wait for the one in
    flight when the disk is stalled)."""
    submitted: asyncio.Queue[Commit] = asyncio.Queue()
    submit = svc._writer.submit

    def spy(events: Sequence[DomainEvent], now: datetime, records: Sequence[Record]) -> Commit:
        commit = submit(events, now, records)
        submitted.put_nowait(commit)
        return commit

    svc._writer.submit = spy  # type: ignore[method-assign]
    return submitted
