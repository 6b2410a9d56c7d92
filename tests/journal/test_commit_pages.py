"""What each commit rewrites in place (the chain head, the manifest, the critical state records) on real SQLite files:
the rows stay what INSERT OR REPLACE left, fewer pages are written, and a file written before reads and verifies."""

from __future__ import annotations

import sqlite3
import struct
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from controller.core.events import DomainEvent
from controller.store import manifest
from controller.store.journal import Journal
from controller.store.reader import JournalReader
from controller.store.records import Record
from controller.store.schema import connect

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def ev(n: int) -> DomainEvent:
    return DomainEvent(type="test.event", rule="655a.11(h)(2)", payload={"n": n, "round_no": n}, round_id="r1")


def copies(path: Path, record: str) -> list[tuple[int, bytes, int]]:
    with sqlite3.connect(path) as db:
        return [
            (int(c), bytes(b), int(s))
            for c, b, s in db.execute(
                "SELECT copy, body, seq FROM critical_state WHERE record = ? ORDER BY copy", (record,)
            )
        ]


def test_fewer_copies_than_before_leave_no_stale_copy(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    j = Journal(path, "T1", "boot")
    j.append([ev(1)], T0, [Record("meters", b"two", copies=2)])
    j.append([ev(2)], T0, [Record("meters", b"still two", copies=2)])
    assert copies(path, "meters") == [(0, b"still two", 2), (1, b"still two", 2)]
    j.append([ev(3)], T0, [Record("meters", b"one", copies=1)])
    assert copies(path, "meters") == [(0, b"one", 3)]
    assert [c.copy for c in j.load("meters")] == [0]
    # Named twice in one commit, the second with fewer copies: the manifest says the last, and so does the file.
    j.append([ev(4)], T0, [Record("meters", b"three", copies=3), Record("meters", b"one again", copies=1)])
    assert copies(path, "meters") == [(0, b"one again", 4)]
    j.close()
    with sqlite3.connect(path) as db:
        m = manifest.read(db, "T1")
    assert m is not None and m.records["meters"].copies == 1 and m.commits == 4


def test_a_surplus_copy_the_manifest_does_not_know_is_removed(tmp_path: Path) -> None:
    """A manifest rebuilt from the file (gone or damaged) counts what is stored, so a surplus copy is still found."""
    path = tmp_path / "j.sqlite"
    j = Journal(path, "T1", "boot", anchored=False)
    j.append([ev(1)], T0, [Record("meters", b"two", copies=2)])
    j.close()
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM manifest")
    j = Journal(path, "T1", "boot", anchored=False)
    j.append([ev(2)], T0, [Record("meters", b"one", copies=1)])
    j.close()
    assert copies(path, "meters") == [(0, b"one", 2)]


def wal_frames(path: Path) -> int:
    wal = path.with_name(path.name + "-wal").read_bytes()
    (page_size,) = struct.unpack(">I", wal[8:12])
    return int((len(wal) - 32) // (page_size + 24))


def test_a_commit_rewrites_its_rows_in_place(tmp_path: Path) -> None:
    """An upsert dirties the row's table page alone; INSERT OR REPLACE gave the row a new rowid and dirtied its primary
    key index too (three pages more in every commit's WAL). One event, one record: the events table, its two indexes
    and the outbox index, the head, the record and the manifest: one page each, the time-ordered event ids (a uuid7)
    landing on the last page of their index."""
    path = tmp_path / "j.sqlite"
    j = Journal(path, "T1", "boot")
    assert j._conn is not None
    j._conn.execute("PRAGMA wal_autocheckpoint=0")
    for n in range(20):
        j.append([ev(n)], T0 + timedelta(seconds=n), [Record("engine", b"x" * 1500)])
    j._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    commits = 50
    for n in range(commits):
        j.append([ev(100 + n)], T0 + timedelta(seconds=100 + n), [Record("engine", b"y" * 1500)])
    frames = wal_frames(path)
    j.close()
    # 7 pages a commit and the odd page split; with REPLACE and random (uuid4) event ids it was about 10.
    assert frames <= commits * 7.5, frames / commits
    with sqlite3.connect(path) as db:
        rowids = {r for (r,) in db.execute("SELECT rowid FROM critical_state")}
        assert len(rowids) == 1
        assert db.execute("SELECT seq FROM chain_head").fetchone() == (70,)


def test_a_file_written_with_insert_or_replace_is_appended_to_and_verifies(tmp_path: Path) -> None:
    """The on-disk format is unchanged: rows the old code wrote (REPLACE, new rowids) are updated in place."""
    path = tmp_path / "j.sqlite"
    j = Journal(path, "T1", "boot")
    j.append([ev(1), ev(2)], T0, [Record("engine", b"state 1")])
    j.close()
    db = connect(path)
    # The rows as the old writer left them after many commits: rowids far from 1.
    for table in ("chain_head", "manifest", "critical_state"):
        db.execute(f"UPDATE {table} SET rowid = rowid + 1000")
    db.close()
    j = Journal(path, "T1", "boot-2")
    assert j.head_problem is None
    j.append([ev(3)], T0 + timedelta(seconds=1), [Record("engine", b"state 2")])
    assert [c.body for c in j.load("engine")] == [b"state 2"]
    report = j.verify()
    j.close()
    assert report.ok, report
    with JournalReader(path) as reader:
        assert [row["seq"] for _, row in reader.tail(10)] == [1, 2, 3]


def test_event_ids_are_uuid7_in_time_order(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.sqlite", "T1", "boot")
    ids = [e.event_id for n in range(50) for e in j.append([ev(n), ev(n)], T0)]
    j.close()
    assert len(set(ids)) == len(ids)
    for i in ids:
        u = uuid.UUID(hex=i)
        assert (u.version, u.variant, u.hex) == (7, uuid.RFC_4122, i)
    # Milliseconds first: the ids of later commits never sort before earlier ones' (same millisecond: any order).
    ms = [int(i[:12], 16) for i in ids]
    assert ms == sorted(ms)
    assert abs(ms[-1] / 1000 - time.time()) < 60
