"""The check of a journal file at start, watched while it runs (controller.store.damage's `check_at_open`).

`PRAGMA quick_check` is one blocking SQLite call: 7 s on a warm 100,000-round journal of 2.5 GB, 45-60 s cold
(docs/performance-history.md), and longer for a table that keeps more rounds. Under systemd the start must say it is
making progress meanwhile (EXTEND_TIMEOUT_USEC), or the start timeout kills it and the restart checks again.
SQLite's progress handler cannot be the clock: SQLite 3.40 (Debian 12's, and this Python's) walks every page of
every b-tree inside a single VDBE instruction (OP_IntegrityCk) that calls no progress handler: 40% of the check warm,
90% cold (docs/performance-history.md, extend25); only the row loop after it does. So the check runs on a thread of its
own (Python's sqlite3 lets go of the GIL while SQLite works) and the calling thread reports every EVERY seconds.

Progress is what the check did since the last report: the bytes its thread read (`rchar` of /proc's io file for the
thread: every page SQLite reads is a pread, from the disk or the page cache; its connection caches 64 KiB) or a step
of the row loop (the progress handler). A check that did neither (a read that never returns: a dying disk) is
reported as stalled, so the caller stops extending systemd's timeout and the start fails as it would have.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

# seconds between two reports: a log line and, under systemd, an extension (controller/shell/watchdog.py)
EVERY = 5.0
# SQLite virtual-machine instructions between two calls of the progress handler in the row loop: at 1,000 its
# calls cost nothing measurable (docs/performance-history.md, extend25); it only counts
PROGRESS_OPS = 1000


@dataclass(frozen=True)
class CheckProgress:
    """One report on the check of journal `path` (of `mb` MB with its -wal) as it runs."""

    path: Path
    mb: float
    seconds: float  # since the check began
    read_mb: float | None  # what the check's thread has read; None where the OS does not say (no /proc)
    moving: bool  # it read or stepped since the last report (the first and the last report: True)
    done: bool  # the check ended (sound or not: the caller says which)

    def status(self) -> str:
        """The line `systemctl status` shows while the check runs."""
        size = f"{self.mb:.1f} MB" if self.mb < 10 else f"{self.mb:.0f} MB"  # a small file is not "0 MB"
        line = f"checking the journal file ({size})"
        if self.done:
            return f"journal file checked ({size}, {self.seconds:.0f} s)"
        if not self.moving:
            return f"{line}: no progress for {EVERY:g} s, SQLite is waiting for the disk"
        read = "" if self.read_mb is None else f"{self.read_mb:.0f} MB read, "
        return f"{line}: {read}{self.seconds:.0f} s" if self.seconds > 0 else line


Report = Callable[[CheckProgress], None]


@dataclass(frozen=True)
class Watch:
    """Who hears of a check run for a tool (`tablectl journal verify`), and how often: `every` seconds, EVERY by
    default (a test gives a short one, not a sleep)."""

    report: Report
    every: float | None = None


# Who hears of the check as it runs (the daemon's word to systemd: controller/shell/runner.py), set around the open of
# the journal (`reporting`) rather than passed down through Journal() and the open of its file: nothing else there
# has a use for it. Nobody by default: the tools and the tests open journals without it.
_REPORT: ContextVar[Report | None] = ContextVar("journal_check_report", default=None)


@contextlib.contextmanager
def reporting(report: Report) -> Iterator[None]:
    """Within it, a check of a journal file at its open (controller.store.damage) is reported to `report`."""
    token = _REPORT.set(report)
    try:
        yield
    finally:
        _REPORT.reset(token)


def reported_to() -> Report | None:
    return _REPORT.get()


def read_bytes(thread: int) -> int | None:
    """The bytes thread `thread` (its native id) of this process has read through read() and pread(), or None
    where /proc does not say (no /proc, or the thread has ended). Per thread: the reader's own reads of /proc and
    anything the daemon's other threads read are not the check's progress."""
    try:
        text = Path(f"/proc/self/task/{thread}/io").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "rchar":
            return int(value.strip())
    return None


def watched(
    check: Callable[[], list[str]],
    conn: sqlite3.Connection,
    report: Report,
    begun: CheckProgress,
    every: float | None = None,
) -> list[str]:
    """`check()` (a call on `conn`) on a thread, reported to `report` every `every` seconds (EVERY by default) while
    it runs, once as it begins (`begun`) and once as it ends; its findings, or what it raised."""
    period = EVERY if every is None else every
    outcome: list[list[str]] = []
    failed: list[BaseException] = []
    read: list[int | None] = []
    steps = [0]

    def step() -> int:
        steps[0] += 1
        return 0  # never abort: the check is the daemon's only word on the file

    def run() -> None:
        conn.set_progress_handler(step, PROGRESS_OPS)
        try:
            outcome.append(check())
        except BaseException as err:  # handed to the caller's thread, which raises it
            failed.append(err)
        finally:
            conn.set_progress_handler(None, 0)
            read.append(read_bytes(threading.get_native_id()))  # its /proc entry goes with it

    start = time.monotonic()
    report(begun)
    worker = threading.Thread(target=run, name="journal-check", daemon=True)
    worker.start()
    try:
        last: tuple[int, int | None] = (0, 0)
        worker.join(period)
        while worker.is_alive():
            # Where /proc does not say, the row loop's steps alone: a long page walk is then taken for a stall.
            now = (steps[0], read_bytes(worker.native_id or 0))
            report(_at(begun, start, now[1], moving=now != last, done=False))
            last = now
            worker.join(period)
    except BaseException:  # Ctrl-C while it runs: stop SQLite before the caller closes the connection
        conn.interrupt()
        worker.join()
        raise
    if failed:
        raise failed[0]
    report(_at(begun, start, read[-1], moving=True, done=True))
    return outcome[0]


def _at(begun: CheckProgress, start: float, read: int | None, *, moving: bool, done: bool) -> CheckProgress:
    read_mb = None if read is None else read / 1e6
    return CheckProgress(begun.path, begun.mb, time.monotonic() - start, read_mb, moving, done)
