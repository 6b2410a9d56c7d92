"""The WAL's restart done by the writer thread's checkpoint, not by the next step's commit (controller.store.wal).

Real SQLite files. A WAL restart writes a new WAL header (its checkpoint sequence number and salts change, SQLite's
file format section 4.1), which `synchronous=FULL` syncs on its own: the header read before and after the next
commit says which of the two did it.
"""

from __future__ import annotations

import sqlite3
import struct
from datetime import UTC, datetime
from pathlib import Path

from controller.core.events import DomainEvent
from controller.store import manifest
from controller.store.journal import Journal
from controller.store.records import Record

T0 = datetime(2026, 11, 28, 11, 0, tzinfo=UTC)


def ev(n: int) -> DomainEvent:
    return DomainEvent(type="test.event", rule="655a.13(f)", payload={"n": n, "round_no": n}, round_id="r1")


def wal_header(path: Path) -> tuple[int, int, int]:
    """The WAL header's checkpoint sequence number and its two salts."""
    head = path.with_name(path.name + "-wal").read_bytes()[:24]
    seq, salt1, salt2 = struct.unpack(">III", head[12:24])
    return seq, salt1, salt2


def filled(path: Path, commits: int) -> Journal:
    journal = Journal(path, "T1", "boot")
    journal.checkpoint(defer=True)  # as the writer thread starts: the commits do not checkpoint themselves
    for n in range(commits):
        journal.append([ev(n)], T0, [Record("engine", b"state %d" % n)])
    return journal


def test_the_checkpoint_restarts_the_wal_so_the_next_commit_does_not(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal = filled(path, 10)
    before = wal_header(path)
    journal.checkpoint()
    restarted = wal_header(path)
    assert restarted[0] == before[0] + 1, (before, restarted)  # started over by the checkpoint itself
    journal.append([ev(10)], T0, [Record("engine", b"state 10")])
    assert wal_header(path) == restarted  # the step's commit wrote frames after that header, nothing else
    assert [e.seq for e in journal.events()] == list(range(1, 12))
    journal.close()
    with sqlite3.connect(path) as db:
        m = manifest.read(db, "T1")
        # The restart's transaction is not one of the journal's commits: the anchor's count stays the manifest's.
        assert m is not None and m.commits == 11, m
        assert db.execute("PRAGMA user_version").fetchone()[0] > 0
    reopened = Journal(path, "T1", "boot2")
    assert reopened.head_problem is None
    assert reopened.verify().ok
    reopened.close()


def test_a_reader_on_older_frames_leaves_the_restart_to_the_commits(tmp_path: Path) -> None:
    """`tablectl journal` reading the file holds frames the checkpoint cannot move: no restart, no error, and the
    commits after it go on into the same WAL."""
    path = tmp_path / "j.sqlite"
    journal = filled(path, 5)
    reader = sqlite3.connect(path)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM events").fetchone() == (5,)
        journal.append([ev(5)], T0, [Record("engine", b"state 5")])  # a frame the reader's snapshot does not have
        before = wal_header(path)
        journal.checkpoint()
        assert wal_header(path) == before
        journal.append([ev(6)], T0, [Record("engine", b"state 6")])
        assert wal_header(path) == before
    finally:
        reader.close()
    assert [e.seq for e in journal.events()] == list(range(1, 8))
    journal.close()


def test_a_commit_waiting_meanwhile_is_left_the_restart(tmp_path: Path) -> None:
    """The writer thread restarts the WAL only while no commit waits for it (JournalWriter passes its queue's
    `empty`): a waiting commit is not held for the restart's two syncs, and restarts the WAL itself as before."""
    path = tmp_path / "j.sqlite"
    journal = filled(path, 4)
    before = wal_header(path)
    journal.checkpoint(idle=lambda: False)
    assert wal_header(path) == before
    journal.append([ev(4)], T0, [Record("engine", b"state 4")])
    assert wal_header(path)[0] == before[0] + 1
    assert [e.seq for e in journal.events()] == list(range(1, 6))
    journal.close()
