"""The floor's shift reports reconcile exactly, per table and figure, with each table's own journal as `tablectl
journal totals --shift NAME=HH:MM-HH:MM --day D` sums it (docs/floor.md, "Reconciling"), across the changes of
shift.

Two 655a tables play on the real engine into real journal files (tests/floor/played.py: each input journaled at a
clock the test sets). Table A deals a round at 13:59:5x, seat 2 folds its $10 Ante before 14:00 and the round is
settled after it: which shift owns the round (docs/floor.md, "Which day owns a round": the period it ended in) is the
swing shift, wholly, lock-out and fold included. Another round crosses 22:00 (swing to grave), and one crosses the
gaming day's end (grave's end, 06:00: it is the next day's). What the journals hold goes through the floor's real
archive writer into a real PostgreSQL cluster; the report runs its real SQL for each shift of FLOOR.toml's example
(configs/floor.toml: day 06:00-14:00, swing 14:00-22:00, grave 22:00-06:00); `tablectl journal totals` runs as a
real process on each journal file with the same shift given as a flag (the table does not know the floor's shifts,
as it does not know its gaming day).
"""

from __future__ import annotations

import subprocess
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.store import totals as journal_totals
from controller.store.reader import JournalReader
from floor.config import DatabaseSection, GamingDaySection, Shift
from floor.days import shift_period
from floor.db import connect
from floor.report.build import build
from floor.report.figures import Scope, gather
from tests.floor.archiving import msg, writer
from tests.floor.played import Played
from tests.floor.reconciling import journal_totals_cli, reconcile, totals_run

pytestmark = pytest.mark.floor
DAY = date(2026, 11, 21)
SHIFTS = (
    Shift(name="day", start="06:00", end="14:00"),
    Shift(name="swing", start="14:00", end="22:00"),
    Shift(name="grave", start="22:00", end="06:00"),
)
SWING = datetime(2026, 11, 21, 14, 0, tzinfo=UTC)
GRAVE = datetime(2026, 11, 21, 22, 0, tzinfo=UTC)
NEXT_DAY = datetime(2026, 11, 22, 6, 0, tzinfo=UTC)


def _report(dsn: str, shift: Shift) -> dict[str, list[dict[str, Any]]]:
    scope = Scope(shift_period(DAY, shift, GamingDaySection()))
    with connect(DatabaseSection(dsn=dsn)) as conn:
        sections: dict[str, list[dict[str, Any]]] = build(gather(conn, scope), scope, "test").to_json()["sections"]
    return {k: [r for r in rows if r.get("scope") == "table"] for k, rows in sections.items()}


def _flag(shift: Shift) -> str:
    return f"{shift.name}={shift.start}-{shift.end}"


def _rows(path: Path) -> list[dict[str, Any]]:
    with JournalReader(path) as r:
        return list(r.rows())


def _published(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("event_id", "boot_id", "seq", "ts", "table_id", "round_id", "type", "rule", "payload")
    return {**{k: row[k] for k in keys}, "replayed": False}


async def test_shift_reports_equal_each_tables_journal_totals_across_the_changes_of_shift(
    floor_dsn: str, tmp_path: Path
) -> None:
    a = Played(tmp_path / "ms-a.sqlite", "ms-a", SWING - timedelta(hours=1))
    b = Played(tmp_path / "ms-b.sqlite", "ms-b", SWING - timedelta(hours=1))
    a.round(SWING - timedelta(minutes=30))
    # Locked at 13:59:5x, seat 2 folding its $10 Ante before 14:00; the rest decided and settled at 14:00:30.
    crossing = a.round(SWING - timedelta(seconds=8), fold=2, jump=(2, SWING + timedelta(seconds=30)))
    a.voided_round(SWING + timedelta(minutes=20))
    a.round(GRAVE - timedelta(seconds=8), fold=3, jump=(2, GRAVE + timedelta(seconds=40)))
    a.round(GRAVE + timedelta(hours=2))
    a.round(NEXT_DAY - timedelta(seconds=8), jump=(2, NEXT_DAY + timedelta(seconds=20)))  # the next day's
    b.round(SWING - timedelta(minutes=10))
    b.round(SWING + timedelta(hours=1))
    b.round(GRAVE + timedelta(minutes=5))
    for p in (a, b):
        p.journal.close()

    rows_a = _rows(tmp_path / "ms-a.sqlite")
    fold = next(r for r in rows_a if r["round_id"] == crossing and r["type"] == "seat.folded")
    lock = next(r for r in rows_a if r["round_id"] == crossing and r["type"] == "no_more_bets")
    done = next(r for r in rows_a if r["round_id"] == crossing and r["type"] == "round.completed")
    ts = journal_totals.parse_ts
    assert ts(lock["ts"]) < ts(fold["ts"]) < SWING <= ts(done["ts"]), "the round must cross 14:00 for this test"

    w = await writer(floor_dsn)
    for path in (tmp_path / "ms-a.sqlite", tmp_path / "ms-b.sqlite"):
        batch = [_published(r) for r in _rows(path)]
        assert (await w.write([msg(m) for m in batch])).events_new == len(batch)

    mine: dict[tuple[str, str], dict[str, Any]] = {}
    for shift in SHIFTS:
        report = _report(floor_dsn, shift)
        for table in ("ms-a", "ms-b"):
            mine[(shift.name, table)] = journal_totals_cli(
                tmp_path / f"{table}.sqlite", "--day", str(DAY), "--shift", _flag(shift)
            )
            reconcile(report, mine[(shift.name, table)])

    # The crossing rounds are wholly the later shift's: the lock-out's three seats and the fold's Ante with them.
    day, swing, grave = (mine[(s, "ms-a")] for s in ("day", "swing", "grave"))
    assert (day["rounds"], day["voided"], day["seats_playing"]) == (1, 0, 3)
    assert (swing["rounds"], swing["voided"], swing["seats_playing"]) == (1, 1, 3 + 2)
    assert (grave["rounds"], grave["voided"], grave["seats_playing"]) == (2, 0, 3 + 3)
    assert day["wagers"]["ante"]["settled"] == 3
    assert swing["wagers"]["ante"]["settled"] == 3  # the voided round's Antes were returned, not settled
    assert swing["wagers"]["ante"]["collected_cents"] >= 1000  # seat 2's folded $10 Ante (655a.11(b))
    # The three shifts make the gaming day, figure by figure; the round across 06:00 is in none of them.
    whole = journal_totals_cli(tmp_path / "ms-a.sqlite", "--day", str(DAY))
    assert whole["rounds"] == 4 and whole["voided"] == 1
    for key in ("rounds", "voided", "seats_playing", "handle_cents", "win_cents", "events"):
        assert sum(s[key] for s in (day, swing, grave)) == whole[key], key
    assert [mine[(s, "ms-b")]["rounds"] for s in ("day", "swing", "grave")] == [1, 1, 1]


def test_journal_totals_shift_is_worded_as_the_floor_and_refuses_bad_shifts(tmp_path: Path) -> None:
    p = Played(tmp_path / "t.sqlite", "t", SWING - timedelta(minutes=5))
    p.round(SWING - timedelta(minutes=4))
    p.journal.close()

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return totals_run(tmp_path / "t.sqlite", *argv)

    for argv, says in (
        (["--day", "2026-11-21", "--shift", "swing"], "write NAME=HH:MM-HH:MM"),
        (["--day", "2026-11-21", "--shift", "swing=14:00"], "write NAME=HH:MM-HH:MM"),
        (["--day", "2026-11-21", "--shift", "swing=14:00-24:00"], "HH:MM"),
        (["--day", "2026-11-21", "--shift", "sw ing=14:00-22:00"], "write NAME=HH:MM-HH:MM"),
        (["--shift", "swing=14:00-22:00"], "a shift is of one gaming day"),
        (["--from", "2026-11-21", "--to", "2026-11-22", "--shift", "day=06:00-14:00"], "a shift is of one gaming day"),
    ):
        done = run(*argv)
        assert done.returncode == 2, (argv, done.stdout, done.stderr)
        assert says in done.stderr, (argv, done.stderr)
        assert "Traceback" not in done.stderr
    done = run("--day", "2026-11-21", "--shift", "day=06:00-14:00")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "Totals from the journal, shift day (06:00-14:00 UTC) of gaming day 2026-11-21 (from 06:00 UTC)\n"
    )
    assert "table t (chapter 655a): 1 rounds completed, 0 voided" in done.stdout
    assert "no events in this period" in run("--day", "2026-11-21", "--shift", "swing=14:00-22:00").stdout
