"""A journal file that is damaged rather than an earlier state of itself (docs/recovery.md, "A damaged journal file").

A kill -9 (or a power cut) in the middle of a WAL checkpoint leaves the main file with some of the -wal's pages and
not the rest; only the -wal can finish it. With the -wal then lost, the main file is torn: SQLite reads what it can
and fails ("database disk image is malformed") wherever a torn page is touched, which at start may be nowhere, so the
table would play on from a file that has lost rows in the middle. A truncated file, a page the disk never wrote and
a damaged header are the same kind of fault. Unlike a journal taken back in time as a whole (a rollback: the anchors
find it and the table goes on after them, controller.store.integrity), nothing in such a file can be trusted or
continued: the daemon refuses to start on it, and never starts a fresh journal in its place.

SQLite's own `PRAGMA quick_check` is the test: every page of every b-tree read and checked (not the indexes against
their tables, which `integrity_check` adds at several times the cost). The daemon runs it when it opens the journal,
before anything is written to it, unless the daemon before it closed the file cleanly (the anchor file's `closed`,
written once SQLite had checkpointed the -wal into the file and removed it, cleared by the next commit): the file
then is as SQLite left it, and the check would cost a restart some 45 s on a 100,000-round journal of 2.5 GB
(docs/performance-history.md). After a crash or a power cut, a -wal lost or not, the whole file is checked.
`tablectl journal verify` always runs it. While it runs, the daemon reports every few seconds (the log, and under
systemd the start's progress: controller.store.check_watch), and `journal verify` on stderr
(controller.cli.journal_check).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import structlog

from controller.store.anchor import read_sidecar, sidecar_path
from controller.store.check_watch import CheckProgress, reported_to, watched

log = structlog.get_logger(__name__)

# quick_check's first findings shown (it stops after this many): enough to say where, short enough for one line.
SHOWN = 3


def quick_check(conn: sqlite3.Connection) -> list[str]:
    """SQLite's findings on the file behind `conn` (read through its -wal, if any); empty when it is sound."""
    try:
        found = [str(row[0]) for row in conn.execute(f"PRAGMA quick_check({SHOWN})").fetchall()]
    except sqlite3.DatabaseError as err:  # too damaged to check at all (its schema page, its header)
        return [str(err)]
    return [] if found == ["ok"] else found


def check_at_open(conn: sqlite3.Connection, path: Path) -> list[str]:
    """The daemon's check of journal `path` as it opens it (`conn`, nothing written yet): quick_check's findings,
    none when the daemon before it closed the file cleanly (module docstring). Logged as it runs, and reported to
    whom `check_watch.reporting` names (the daemon's word to systemd) as it begins, every few seconds while it
    runs, and as it ends; never when it does not run."""
    found = read_sidecar(path)
    if found.claim is not None and found.claim.closed:
        return []
    size = path.stat().st_size if path.exists() else 0
    wal = Path(f"{path}-wal")
    if size == 0 and not wal.exists():
        return []  # a new journal (an emptied one is the anchors' to find: controller.store.integrity)
    mb = (size + (wal.stat().st_size if wal.exists() else 0)) / 1e6
    # Said apart: a file no run has closed yet (a new journal's first start) is not one a crash left.
    why = "no run has closed it yet" if found.claim is None else "the last run stopped without closing it"
    log.info(f"checking the journal file: {why}", path=str(path), mb=round(mb, 1))

    report = reported_to()

    def told(progress: CheckProgress) -> None:
        _logged(progress)
        if report is not None:
            report(progress)

    start = time.monotonic()
    findings = watched(lambda: quick_check(conn), conn, told, CheckProgress(path, mb, 0.0, 0.0, True, False))
    log.info("journal file checked", path=str(path), seconds=round(time.monotonic() - start, 3), sound=not findings)
    return findings


def _logged(progress: CheckProgress) -> None:
    """The check's progress in the log: an operator watching `journalctl -f` sees it is not stuck (or that it is)."""
    read = None if progress.read_mb is None else round(progress.read_mb, 1)
    fields = {"path": str(progress.path), "mb": round(progress.mb, 1), "read_mb": read}
    if progress.done:
        return  # check_at_open says it, with what SQLite found
    if not progress.moving:
        log.warning(
            "the journal file check made no progress: SQLite is waiting for the disk (dmesg may say why)",
            seconds=round(progress.seconds, 1),
            **fields,
        )
    elif progress.seconds > 0:
        log.info("checking the journal file", seconds=round(progress.seconds, 1), **fields)


def was_journal(path: Path) -> bool:
    """Whether `path` was a table's journal, whatever it holds now: the daemon keeps its anchor file beside it from
    the first open (controller.store.anchor). A file without one that SQLite cannot read is not a journal at all."""
    return sidecar_path(path).exists()


def damaged(path: Path, findings: list[str]) -> str:
    """The one line an operator reads: the file, what SQLite found, why it is not a rollback, and the fix."""
    found = "; ".join(f.replace("\n", " ") for f in findings[:SHOWN]) or "SQLite cannot read it"
    return (
        f"journal {path} is damaged (SQLite says: {found}): a torn or corrupt file, not an earlier state of the "
        "journal (a kill -9 or a power cut while SQLite copied its -wal into it, the -wal then lost; a truncated "
        "file; a disk fault). The table will not start on it, nor on a fresh journal in its place: keep the file as "
        f"it is for the investigation, check it with `tablectl journal verify --journal {path}`, and restore the "
        "journal from the last backup; what it held is in the archive segments and the floor's copy of the events "
        '(docs/recovery.md, "A damaged journal file")'
    )
