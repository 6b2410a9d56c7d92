"""A journal of trimmed 655a rounds to archive, and every row's hash wherever the archive put it (the live journal
or a recorded segment): `tablectl journal archive`'s tests use them (tests/journal/test_archive.py), and so do the
daemon's archiver's (test_archive_daemon.py). Shared here, so that neither test module imports the other."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from controller.core.events import DomainEvent
from controller.store.journal import Journal
from controller.store.segments import recorded

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
TABLE = "T1"
# A round as 655a journals it, trimmed: started, a wager, the settlement, then a round-less event between rounds.
PER_ROUND = 4


def play_round(j: Journal, n: int, ended: bool = True) -> None:
    rid = f"{TABLE}-r{n:06d}"
    events = [
        DomainEvent("round.started", "655a.5(a)", {"round_no": n}, rid),
        DomainEvent("wager.accepted", "655a.7(a)", {"seat": 1, "spot": "ante", "amount_cents": 500}, rid),
    ]
    if ended:
        events.append(DomainEvent("round.completed", "655a.12", {"round_no": n}, rid))
        events.append(DomainEvent("table.idle", None, {}))
    j.append(events, T0)


def make(path: Path, rounds: int, published: bool = True) -> None:
    j = Journal(path, TABLE, "boot-a")
    for n in range(1, rounds + 1):
        play_round(j, n)
    if published:
        j.mark_published(list(range(1, j.last_seq + 1)), replayed=False)
    j.close()


def all_rows(path: Path, directory: Path) -> dict[int, str]:
    """seq -> stored hash of every row: the live journal's and every recorded segment's."""
    db = sqlite3.connect(path)
    rows = dict(db.execute("SELECT seq, hash FROM events WHERE table_id = ?", (TABLE,)).fetchall())
    segs = recorded(db, TABLE)
    db.close()
    for s in segs:
        seg = sqlite3.connect(directory / s.segment)
        archived = dict(seg.execute("SELECT seq, hash FROM events").fetchall())
        seg.close()
        assert not set(archived) & set(rows), f"{s.segment} overlaps the live journal"
        rows.update(archived)
    return rows
