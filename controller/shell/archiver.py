"""The daemon's own archiving: with `[journal] keep_rounds = N` the table seals its completed rounds older than the
last N into archive segments itself (controller/store/archive.py; docs/journal.md, "Archiving").

A pass is due at the start, then after every `every` rounds ended (a tenth of N, at most 100), and once more when
the table closes (run_table, after the publisher's last batch was acknowledged). Each segment goes in two parts, on
a thread of their own, never on the event loop:

- sealing (the rows copied into the segment file, fsynced, walked again, renamed): only reads the live journal,
  so under WAL the journal writer never waits for it; it may run while a round is played;
- recording it and deleting its rows: the one transaction that holds the write lock, which the journal writer then
  waits out. It runs only between rounds, the moment the table names by `state.round is None` (the shuffle after a
  round ended, a blocked table, a closed one), asked right before the transaction begins; and it deletes at most
  DAEMON_SEGMENT_ROWS rows, so the wait is short (`bench/archive_wait.py` measures it). A sealed segment whose
  rows changed meanwhile is dropped and sealed again.

A failure (the directory gone or full, a chain that does not verify) is logged and raised as ArchiveFailed: the
supervised task (controller/shell/tasks.py) journals it as `task.failed`, which the floor sees, and retries at once
(with the supervisor's backoff); failing ESCALATE_AFTER times within its window it raises
`tilt:task:journal-archive`. No failure loses a row: every step before the journal's own commit leaves the journal
as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import structlog

from controller.config.table import TableConfig
from controller.engine.state import TableState
from controller.shell.listeners import Listener
from controller.store import archive
from controller.store.archive import ENDS, default_dir
from controller.store.schema import JournalError
from controller.store.segments import Segment

T = TypeVar("T")

log = structlog.get_logger("tablectl.archive")

TASK = "journal-archive"
DAEMON_SEGMENT_ROWS = 2_000  # rows one delete transaction removes while the journal writer may wait
ESCALATE_AFTER = 3  # failed passes in the supervisor's window before the tilt


class ArchiveFailed(RuntimeError):
    """A pass of the daemon's archiving did not complete; the journal still holds every row it did not record."""


def archive_directory(config: TableConfig, journal: Path) -> Path:
    """Where the daemon (and `tablectl journal archive --config` without --to) puts the segments."""
    return Path(config.journal.archive_dir) if config.journal.archive_dir else default_dir(journal)


def every_rounds(keep_rounds: int) -> int:
    """Rounds ended between passes: often enough that the journal stays near N rounds, rarely enough that the
    pass's own reads (the plan walks the journal's rounds) stay a small share of the table's time."""
    return max(1, min(100, keep_rounds // 10))


def between_rounds(state: TableState) -> str | None:
    """None while no round is in progress (the gate is open), else why not."""
    r = state.round
    return None if r is None else f"round {r.round_id} is in progress ({state.phase})"


class Archiver:
    """The supervised task: waits for a due pass, seals each segment at once and commits it between rounds."""

    def __init__(
        self,
        journal: Path,
        table_id: str,
        keep_rounds: int,
        directory: Path,
        state: Callable[[], TableState],
        events: Listener,
        *,
        max_rows: int = DAEMON_SEGMENT_ROWS,
    ) -> None:
        self.journal, self.table_id, self.keep_rounds, self.directory = journal, table_id, keep_rounds, directory
        self._state = state
        self._events = events
        self._max_rows = max_rows
        self._every = every_rounds(keep_rounds)
        self._ended = 0  # rounds ended since the last pass
        self._dropped = events.dropped  # the events the listener lost, as of the last look
        self.due = True  # the first pass after the start; also after a failure (the retry)
        self.passes = 0  # passes completed (the log, the tests)

    def gate(self) -> str | None:
        return between_rounds(self._state())

    async def _next_event(self) -> None:
        ev = await self._events.get()
        if ev.type in ENDS:
            self._ended += 1
        if self._events.dropped != self._dropped:  # rounds may have ended unseen: a pass early rather than late
            self._dropped = self._events.dropped
            self._ended = self._every
        self.due = self.due or self._ended >= self._every

    async def run(self) -> None:
        while True:
            while not self.due:
                await self._next_event()
            await self.run_pass(wait=True)

    async def run_pass(self, wait: bool = True) -> None:
        """One pass: every segment due sealed, each committed between rounds (`wait`) or at once (the close)."""
        started = time.monotonic()
        self._ended = 0
        rows, segs, last = 0, 0, None
        db = await self._off_loop(archive.open_journal, self.journal, self.keep_rounds, self.directory)
        try:
            while True:
                seg = await self._off_loop(
                    archive.seal_next,
                    db,
                    self.journal,
                    self.directory,
                    self.table_id,
                    self.keep_rounds,
                    self._max_rows,
                )
                if seg is None:
                    break
                while True:
                    while wait and self.gate() is not None:
                        await self._next_event()  # every change of the round comes with an event
                    if await self._off_loop(self._commit, db, seg, wait):
                        break
                rows, segs, last = rows + seg.rows, segs + 1, seg.last_seq
            await self._off_loop(db.execute, "PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            db.close()  # no thread holds it (_off_loop)
        self.due = False
        self.passes += 1
        log.info(
            "journal archived",
            moment="between rounds" if wait else "table closed",
            rows=rows,
            segments=segs,
            upto_seq=last,
            seconds=round(time.monotonic() - started, 3),
        )

    async def _off_loop(self, fn: Callable[..., T], *args: object) -> T:
        """`fn` on a worker thread. Cancelled meanwhile (the table closing mid-pass), it first waits for `fn` to
        return: the pass's connection is closed only when no thread is inside it, for closing a connection under a
        running statement crashes the interpreter (SIGSEGV), and the close's own pass must not race this one."""
        running = asyncio.ensure_future(asyncio.to_thread(self._call, fn, *args))
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            while not running.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait({running})
            if not running.cancelled():
                running.exception()  # retrieved: the cancellation is what this task reports
            raise

    def _commit(self, db: sqlite3.Connection, seg: Segment, wait: bool) -> bool:
        """Steps 3 and 4 of `seg`; False when a round began after all (asked again on this thread, right before the
        transaction): the sealed file waits for the next quiet moment."""
        if wait and self.gate() is not None:
            return False
        self._call(archive.commit_sealed, db, self.journal, self.directory, seg)
        return True

    def _call(self, fn: Callable[..., T], *args: object) -> T:
        try:
            return fn(*args)
        except (JournalError, OSError, sqlite3.Error) as err:
            self.due = True  # retried when the supervisor restarts the task
            log.error(
                "journal archive failed: the journal keeps every row",
                journal=str(self.journal),
                directory=str(self.directory),
                error=str(err),
            )
            raise ArchiveFailed(
                f"archiving {self.journal} into {self.directory} failed ({type(err).__name__}: {err}); the journal "
                "keeps every row: fix the directory (space, permissions) or see the error"
            ) from err

    async def at_close(self) -> None:
        """The pass when the table has closed: no round can begin, so nothing waits for a quiet moment."""
        await self.run_pass(wait=False)
