"""The journal's hash chain on real SQLite files: built on append, migrated from schema 1, verified.

The chain is checked against an independent implementation of the recipe in docs/journal.md (hashlib and json
here, not controller.store.chain.row_hash), so a change of the encoding cannot pass unnoticed.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from controller.core.events import DomainEvent
from controller.store.chain import GENESIS
from controller.store.journal import Journal
from controller.store.reader import JournalReader
from controller.store.records import Record
from controller.store.schema import SCHEMA_VERSION, JournalError, connect
from controller.store.verify import verify_connection

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
V1_SCHEMA = """
CREATE TABLE events (
    table_id TEXT NOT NULL, seq INTEGER NOT NULL, event_id TEXT NOT NULL UNIQUE, boot_id TEXT NOT NULL,
    ts TEXT NOT NULL, round_id TEXT, type TEXT NOT NULL, rule TEXT, payload TEXT NOT NULL, sealed TEXT,
    published_at TEXT, replayed INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (table_id, seq));
CREATE INDEX events_outbox ON events (table_id, seq) WHERE published_at IS NULL;
PRAGMA user_version=1;
"""


def ev(n: int, sealed: dict[str, object] | None = None) -> DomainEvent:
    return DomainEvent("test.event", "655a.11(h)(2)", {"n": n, "café": "é"}, f"r{n % 3}", sealed)


def independent_chain(path: Path, table_id: str) -> list[tuple[int, str, str]]:
    """(seq, stored hash, hash computed by the docs' recipe) for every row of a table."""
    db = sqlite3.connect(path)
    prev = "0" * 64
    out = []
    rows = db.execute(
        "SELECT seq, event_id, boot_id, ts, table_id, round_id, type, rule, payload, sealed, hash "
        "FROM events WHERE table_id = ? ORDER BY seq",
        (table_id,),
    ).fetchall()
    for *fields, stored in rows:
        enc = json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        prev = hashlib.sha256(bytes.fromhex(prev) + enc).hexdigest()
        out.append((fields[0], stored, prev))
    db.close()
    return out


def journal_with(path: Path, n: int, table_id: str = "T1") -> Journal:
    j = Journal(path, table_id, "boot-a")
    for i in range(1, n + 1, 3):
        j.append(
            [ev(k, {"cards": ["Ah"]} if k % 2 else None) for k in range(i, min(i + 3, n + 1))],
            T0 + timedelta(seconds=i),
        )
    return j


def test_every_row_is_chained_by_the_documented_recipe_across_reopens(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal_with(path, 10).close()
    j = Journal(path, "T1", "boot-b")  # a second boot chains on from the first one's last row
    j.append([ev(11), ev(12)], T0 + timedelta(minutes=1))
    chain = independent_chain(path, "T1")
    assert [s for s, _, _ in chain] == list(range(1, 13))
    assert all(stored == computed for _, stored, computed in chain)
    head = sqlite3.connect(path).execute("SELECT seq, hash FROM chain_head WHERE table_id = 'T1'").fetchone()
    assert head == (12, chain[-1][2])
    report = j.verify()
    assert report.ok and report.rows_checked == 12 and report.tables == {"T1": 12} and report.first_break is None
    assert j.head_problem is None
    j.close()


def test_tables_in_one_file_have_their_own_chains(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    # The anchor file beside the journal is one table's (a daemon's): the second table keeps none.
    a, b = Journal(path, "A", "boot"), Journal(path, "B", "boot", anchored=False)
    a.append([ev(1), ev(2)], T0)
    b.append([ev(1)], T0)
    a.append([ev(3)], T0)
    assert independent_chain(path, "B")[0][1] == independent_chain(path, "B")[0][2]
    assert all(s == c for _, s, c in independent_chain(path, "A"))
    report = a.verify()
    assert report.ok and report.tables == {"A": 3, "B": 1}
    a.close()
    b.close()


def tamper(path: Path, sql: str, *args: object) -> None:
    db = sqlite3.connect(path)
    db.execute(sql, args)
    db.commit()
    db.close()


@pytest.mark.parametrize(
    ("sql", "what", "seq"),
    [
        ("UPDATE events SET payload = '{\"n\":999}' WHERE seq = 5", "altered row", 5),
        ("UPDATE events SET rule = '655a.13(c)' WHERE seq = 1", "altered row", 1),
        ("UPDATE events SET sealed = NULL WHERE seq = 7", "altered row", 7),
        ("UPDATE events SET ts = '2024-05-01T12:00:00.000001Z' WHERE seq = 9", "altered row", 9),
        ("DELETE FROM events WHERE seq IN (4, 5)", "missing seq", 4),
        ("DELETE FROM events WHERE seq >= 8", "head mismatch", 7),
        ("UPDATE chain_head SET hash = '00' WHERE table_id = 'T1'", "head mismatch", 10),
        ("DELETE FROM chain_head", "head mismatch", None),
    ],
)
def test_verify_finds_the_first_break(tmp_path: Path, sql: str, what: str, seq: int | None) -> None:
    path = tmp_path / "j.sqlite"
    journal_with(path, 10).close()
    tamper(path, sql)
    with JournalReader(path) as reader:
        report = reader.verify()
    assert not report.ok
    first = report.first_break
    assert first is not None and (first.what, first.seq, first.table_id) == (what, seq, "T1"), report.breaks
    assert str(first).startswith(what)
    # One altered row is one finding: the rows after it are checked against its stored hash.
    if what == "altered row":
        assert len(report.breaks) == 1 and report.rows_checked == 10


def test_a_truncated_tail_is_found_at_open_and_not_covered_over(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal_with(path, 10).close()
    tamper(path, "DELETE FROM events WHERE seq > 6")
    j = Journal(path, "T1", "boot-b")
    assert j.head_problem is not None and "seq 10" in j.head_problem and "seq 6" in j.head_problem
    assert "removed" in j.head_problem
    j.close()


def test_a_v1_file_is_chained_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(V1_SCHEMA)
    for table_id, n in (("T1", 5), ("T2", 2)):
        for seq in range(1, n + 1):
            db.execute(
                "INSERT INTO events (table_id, seq, event_id, boot_id, ts, round_id, type, rule, payload, "
                "sealed, published_at) VALUES (?, ?, ?, 'b1', '2024-05-01T12:00:00.000000Z', NULL, "
                "'x.y', NULL, ?, NULL, ?)",
                (table_id, seq, f"{table_id}-{seq}", json.dumps({"n": seq}), "t" if seq < 3 else None),
            )
    db.commit()
    db.close()
    with JournalReader(path) as reader:  # read-only: not migrated, and says so
        assert reader.version == 1
        unchained = reader.verify()
        assert not unchained.ok and unchained.first_break is not None
        assert unchained.first_break.what == "unchained"
    j = Journal(path, "T1", "boot-2")
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert all(s == c for _, s, c in independent_chain(path, "T1"))
    assert all(s == c for _, s, c in independent_chain(path, "T2"))
    assert [e.seq for e in j.unpublished()] == [3, 4, 5]  # the outbox survives the migration
    j.append([ev(6)], T0)
    assert j.verify().ok and j.verify().tables == {"T1": 6, "T2": 2}
    j.close()


def test_a_newer_schema_and_a_foreign_file_are_refused_with_the_fix(tmp_path: Path) -> None:
    newer = tmp_path / "newer.sqlite"
    db = sqlite3.connect(newer)
    db.execute("PRAGMA user_version=99")
    db.close()
    for opener in (lambda p: Journal(p, "T1", "b"), JournalReader):
        with pytest.raises(JournalError, match=r"schema version 99, newer than this software.*upgrade tablectl"):
            opener(newer)
    text = tmp_path / "notes.txt"
    text.write_text("not a database at all\n" * 100)
    with pytest.raises(JournalError, match="not a tablectl journal"):
        JournalReader(text)
    with pytest.raises(JournalError, match="not a tablectl journal"):
        Journal(text, "T1", "b")
    with pytest.raises(JournalError, match=r"no journal at .*--journal"):
        JournalReader(tmp_path / "absent.sqlite")
    assert not (tmp_path / "absent.sqlite").exists()  # reading never creates a file
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(JournalError, match="no events table"):
        JournalReader(other)


@settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(flips=[(7_760_899_451, 128)])  # a damaged schema whose SQLite error text was not UTF-8
@given(
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=255)), min_size=1, max_size=8)
)
def test_verify_never_raises_on_a_damaged_file(
    tmp_path_factory: pytest.TempPathFactory, flips: list[tuple[int, int]]
) -> None:
    path = tmp_path_factory.mktemp("dmg") / "j.sqlite"
    j = journal_with(path, 30)
    j.close()
    raw = bytearray(path.read_bytes())
    for offset, mask in flips:
        raw[offset % len(raw)] ^= mask
    path.write_bytes(bytes(raw))
    try:
        reader = JournalReader(path)
    except JournalError as err:  # damage in the header: refused at open, with the reason
        assert str(path) in str(err)
        return
    with reader:
        report = reader.verify()  # must not raise, whatever the damage
    assert isinstance(report.ok, bool)
    if report.ok:
        # Damage that leaves every row intact (free pages, indexes, slack) is no finding.
        assert report.rows_checked == 30


def test_critical_state_records_are_written_with_the_events_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    j = Journal(path, "T1", "boot")
    j.append([ev(1)], T0, [Record("engine", b'{"a":1}'), Record("meters", b'{"m":5}', copies=2)])
    j.save([Record("engine", b'{"a":2}')], T0)  # a state change without an event
    [engine] = j.load("engine")
    assert (engine.body, engine.seq, engine.intact) == (b'{"a":2}', 1, True)
    meters = j.load("meters")
    assert [(c.copy, c.body, c.intact) for c in meters] == [(0, b'{"m":5}', True), (1, b'{"m":5}', True)]
    assert j.load("absent") == []
    # A bad payload fails the whole step: neither the events nor the state are stored.
    with pytest.raises(TypeError):
        j.append([ev(2), DomainEvent("x", None, {"o": object()})], T0, [Record("engine", b'{"a":3}')])
    assert j.load("engine")[0].body == b'{"a":2}' and j.last_seq == 1
    j.close()
    tamper(path, "UPDATE critical_state SET body = ? WHERE record = 'meters' AND copy = 1", b'{"m":6}')
    j = Journal(path, "T1", "boot")
    assert [c.intact for c in j.load("meters")] == [True, False]  # the damaged copy is told from the good one
    j.close()


def test_every_connection_keeps_wal_and_full_sync(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal_with(path, 3).close()
    with JournalReader(path) as reader:
        conn = reader._conn
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    c = connect(path)
    assert verify_connection(c, str(path)).ok
    c.close()
    assert GENESIS == "0" * 64
