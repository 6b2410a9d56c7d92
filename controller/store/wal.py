"""The journal's WAL checkpoint, and the WAL's restart done with it rather than by the next step's commit.

A checkpoint that moved every frame into the database file lets the next write transaction start the WAL from its
beginning again, and with `synchronous=FULL` SQLite syncs the new WAL header on its own before it writes that
transaction's frames and syncs them: the first commit after each checkpoint paid two fdatasyncs instead of one (strace
of Journal.append; bench/event_latency.py). The writer thread checkpoints between commits every CHECKPOINT_EVERY (64)
commits (controller/shell/writer.py), so one commit in 64 carried a step's events a second sync late: about 1.6 % of the
commits, near the p99 issue 19 measures. Here the restart is done at once, in the checkpoint's own idle moment (only
while no commit waits: one that arrives during it waits for its two syncs; docs/performance-history.md, the lat26 part,
weighs the two), by a transaction that writes the database header's user_version back unchanged (page 1 into the new
WAL); the next step's commit then syncs its own frames once. Nothing is weakened: that transaction is as durable as any
(`synchronous=FULL`, DESIGN.md "Persistence, recovery, integrity"), changes no row, and is not one of the journal's
commits (the manifest does not count it: controller.store.manifest).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from controller.store.rows import rollback_open


def checkpoint(db: sqlite3.Connection, defer_pages: int | None = None, idle: Callable[[], bool] = lambda: True) -> None:
    """A PASSIVE checkpoint, then the WAL's restart when it moved every frame and `idle()` says no commit waits for
    this thread meanwhile (else that commit restarts it, as before: the restart's two syncs are not added to its
    wait); with `defer_pages`, none now and the commits' own only past that many pages (Journal.checkpoint)."""
    if defer_pages is not None:
        db.execute(f"PRAGMA wal_autocheckpoint={defer_pages}").fetchone()
        return
    busy, logged, moved = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    # A reader still on older frames (`tablectl journal` on the file) keeps the WAL from restarting: nothing to do.
    if busy == 0 and logged > 0 and moved == logged and idle():
        restart(db)


def restart(db: sqlite3.Connection) -> None:
    """Start the WAL over now (its header synced), with a transaction that changes nothing."""
    db.execute("BEGIN IMMEDIATE")
    try:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        db.execute(f"PRAGMA user_version={version}")
        db.execute("COMMIT")
    except BaseException:
        rollback_open(db)
        raise
