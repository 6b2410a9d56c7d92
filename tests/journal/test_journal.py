"""The journal on real SQLite files: durability settings, gap-free numbering, the outbox."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from controller.core.events import DomainEvent
from controller.store.journal import Journal
from controller.store.schema import connect

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def ev(n: int, *, sealed: Mapping[str, Any] | None = None) -> DomainEvent:
    return DomainEvent(type="test.event", rule="655a.11(h)(2)", payload={"n": n}, round_id="r1", sealed=sealed)


def pragmas(conn: sqlite3.Connection) -> tuple[str, int]:
    return conn.execute("PRAGMA journal_mode").fetchone()[0], conn.execute("PRAGMA synchronous").fetchone()[0]


def test_every_connection_is_wal_and_synchronous_full(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "journal.db"  # parent dirs are created
    j = Journal(path, "T1", "boot-a")
    assert j._conn is not None
    assert pragmas(j._conn) == ("wal", 2)  # 2 == FULL
    # synchronous is per connection: a second connection made through connect() must also get FULL.
    other = connect(path)
    assert pragmas(other) == ("wal", 2)
    # A plain connection shows the file itself stays in WAL mode.
    plain = sqlite3.connect(path)
    assert plain.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    for c in (other, plain):
        c.close()
    j.close()


def test_seq_is_gap_free_across_appends_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    j = Journal(path, "T1", "boot-a")
    assert j.last_seq == 0
    first = j.append([ev(1), ev(2), ev(3)], T0)
    second = j.append([ev(4)], T0 + timedelta(seconds=1))
    assert j.append([], T0) == []
    assert [e.seq for e in first + second] == [1, 2, 3, 4]
    assert j.last_seq == 4
    j.close()

    j2 = Journal(path, "T1", "boot-b")
    assert j2.last_seq == 4
    third = j2.append([ev(5), ev(6)], T0 + timedelta(seconds=2))
    assert [e.seq for e in third] == [5, 6]
    assert {e.boot_id for e in third} == {"boot-b"}
    all_events = j2.events()
    assert [e.seq for e in all_events] == [1, 2, 3, 4, 5, 6]
    assert [e.payload["n"] for e in all_events] == [1, 2, 3, 4, 5, 6]
    assert len({e.event_id for e in all_events}) == 6
    j2.close()


def test_tables_are_numbered_independently(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    a, b = Journal(path, "A", "boot"), Journal(path, "B", "boot", anchored=False)  # the anchor file is A's
    a.append([ev(1), ev(2)], T0)
    assert [e.seq for e in b.append([ev(1)], T0)] == [1]
    assert [e.seq for e in a.append([ev(3)], T0)] == [3]
    assert [e.table_id for e in b.events()] == ["B"]
    a.close()
    b.close()


def test_append_stamps_and_round_trips_fields(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db", "T1", "boot-a")
    eastern = timezone(timedelta(hours=-4))
    [je] = j.append(
        [
            DomainEvent(
                type="round.settled",
                rule="655a.11(h)(3)",
                payload=MappingProxyType({"paid": 1500, "nested": MappingProxyType({"k": [1, 2]})}),
                round_id="r9",
                sealed={"cards": ["AS", "KD"]},
            )
        ],
        datetime(2024, 5, 1, 8, 0, 0, tzinfo=eastern),
    )
    assert je.ts == "2024-05-01T12:00:00.000000Z"
    assert datetime.fromisoformat(je.ts) == datetime(2024, 5, 1, 12, tzinfo=UTC)
    assert len(je.event_id) == 32 and int(je.event_id, 16) >= 0
    [stored] = j.events()
    assert stored == je
    assert stored.payload == {"paid": 1500, "nested": {"k": [1, 2]}}
    assert stored.sealed == {"cards": ["AS", "KD"]}
    assert "sealed" not in stored.public() and "cards" not in str(stored.public())
    j.close()


def test_append_is_one_transaction(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db", "T1", "boot-a")
    j.append([ev(1)], T0)
    bad = DomainEvent(type="x", rule=None, payload={"obj": object()})
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        j.append([ev(2), bad], T0)
    with pytest.raises(ValueError, match="timezone-aware"):
        j.append([ev(2)], datetime(2024, 5, 1))
    assert [e.seq for e in j.events()] == [1]
    assert [e.seq for e in j.append([ev(2)], T0)] == [2]  # no gap left by the failed batches
    j.close()


def test_outbox_order_and_mark_published(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    j = Journal(path, "T1", "boot-a")
    j.append([ev(i) for i in range(1, 6)], T0)
    assert [e.seq for e in j.unpublished()] == [1, 2, 3, 4, 5]
    assert [e.seq for e in j.unpublished(limit=2)] == [1, 2]
    j.mark_published([1, 2], replayed=False)
    j.mark_published([3], replayed=True)
    assert [e.seq for e in j.unpublished()] == [4, 5]
    assert [e.seq for e in j.events(after_seq=2, limit=2)] == [3, 4]
    j.close()

    # The outbox state is durable: reopening sees the same backlog, and the flags were stored.
    j2 = Journal(path, "T1", "boot-b")
    assert [e.seq for e in j2.unpublished()] == [4, 5]
    rows = connect(path).execute("SELECT seq, published_at IS NOT NULL, replayed FROM events ORDER BY seq").fetchall()
    assert rows == [(1, 1, 0), (2, 1, 0), (3, 1, 1), (4, 0, 0), (5, 0, 0)]
    j2.close()


def test_concurrent_writers_never_duplicate_a_seq(tmp_path: Path) -> None:
    # Two Journal objects on one file is a misconfiguration, but it must not corrupt numbering.
    path = tmp_path / "j.db"
    Journal(path, "T1", "boot").close()
    errors: list[BaseException] = []

    def writer() -> None:
        j = Journal(path, "T1", "boot")
        try:
            for i in range(50):
                j.append([ev(i), ev(i)], T0)
        except BaseException as exc:
            errors.append(exc)
        finally:
            j.close()

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    j = Journal(path, "T1", "boot")
    assert [e.seq for e in j.events()] == list(range(1, 201))
    j.close()


def test_closed_journal_refuses_use(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db", "T1", "boot")
    j.close()
    j.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        j.append([ev(1)], T0)


def test_last_round_no_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    j = Journal(path, "T1", "boot")
    assert j.last_round_no() == 0
    j.append([DomainEvent(type="betting.opened", rule=None, payload={"round_no": 1})], T0)
    j.append([DomainEvent(type="betting.opened", rule=None, payload={"round_no": 2}), ev(7)], T0)
    j.close()
    j2 = Journal(path, "T1", "boot2")
    assert j2.last_round_no() == 2
    j2.close()
