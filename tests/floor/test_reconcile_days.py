"""The floor's day report reconciles exactly, per table and figure, with each table's own journal as
`tablectl journal totals` sums it (docs/floor.md, "Reconciling"), across a gaming day's boundary and a table whose
events reach the floor late.

Two 655a tables (optional Three Card Bonus wagers; B with the Progressive Payout Wager and a jackpot validated across
the boundary; a void by 655a.13(a) with its contributions reversed; a royal flush capped by the 655a.12(b) payout
limit) play on the real engine (tests/engine's pure table) into real journal files (controller.store,
SQLite), each input's events journaled as one commit at a clock the test sets: so a round can be dealt before the
gaming day's start hour (06:00 UTC, FLOOR.toml's default) and settled after it, which no wall-clock run can place.
What each journal holds goes through the floor's real archive writer into a real PostgreSQL cluster; table B's
connection drops mid-day: its later events come first, its earlier ones late and flagged replayed (as a table's
outbox replays them, docs/mqtt.md), in batches of their own. The report runs its real SQL; `tablectl journal
totals` runs as a real process on each journal file. The MQTT leg is not repeated here: tests/floor/test_floor_e2e.py
reconciles the same command with real daemons, mosquitto and kills.

Which day owns a round (docs/floor.md): the day it ended. Before, each event counted by its own ts, so the
straddling round's lock-out (its seats and take rates) and its fold (the folded Ante, handle and win) went to the
old day and its settlements and completion to the new one: neither day's figures matched the table's.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.core.cards import STANDARD_DECK
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.spec import MississippiStudSpec
from controller.store import totals as journal_totals
from controller.store.reader import JournalReader
from floor.config import DatabaseSection, GamingDaySection
from floor.days import day_period
from floor.db import connect
from floor.report.build import build
from floor.report.figures import Scope, gather
from tests.engine.conftest import PureTable, arranged_deck, open_table
from tests.floor.archiving import msg, writer
from tests.floor.played import PLAIN, Played
from tests.floor.reconciling import journal_totals_cli, reconcile, totals_run

pytestmark = pytest.mark.floor
DAY = date(2026, 11, 21)
BOUNDARY = datetime(2026, 11, 22, 6, 0, tzinfo=UTC)  # DAY ends, DAY + 1 begins (06:00 UTC)
# Table B offers the Progressive Payout Wager, paytable C (655a.12(c)(1), (3)), $1. Seats 1 and 3 both make a straight
# flush in hearts with the community 9h Th Jh (tests/engine/test_progressive_live.py): two major hits in one round.
PROGRESSIVE = {"progressive_paytable": "C", "progressive_wager_cents": 100}
HITTING = ((1, "ante", 500), (1, "progressive", 100), (3, "ante", 500), (3, "progressive", 100))


def progressive_table() -> PureTable:
    """B's first deck is shuffled at its opening for its first round, the second deals both hits, then any."""
    rules = MississippiStudRules.model_validate(
        {"chapter": "655a", "three_card_bonus_paytable": "A", "six_card_bonus_paytable": "C", **PROGRESSIVE}
    )
    hitting = arranged_deck(["Qh", "Kh", "7h", "8h", "9h", "Th", "Jh"])
    return open_table(MississippiStudSpec(), rules, "automated_shoe", [list(STANDARD_DECK), hitting])


def _rows(path: Path) -> list[dict[str, Any]]:
    with JournalReader(path) as r:
        return list(r.rows())


def _published(row: dict[str, Any], replayed: bool) -> dict[str, Any]:
    keys = ("event_id", "boot_id", "seq", "ts", "table_id", "round_id", "type", "rule", "payload")
    return {**{k: row[k] for k in keys}, "replayed": replayed}


def _report(dsn: str, day: date) -> dict[str, list[dict[str, Any]]]:
    scope = Scope(day_period(day, GamingDaySection()))
    with connect(DatabaseSection(dsn=dsn)) as conn:
        sections: dict[str, list[dict[str, Any]]] = build(gather(conn, scope), scope, "test").to_json()["sections"]
    return {k: [r for r in rows if r.get("scope") == "table"] for k, rows in sections.items()}


async def test_day_reports_equal_each_tables_journal_totals_across_the_boundary_and_a_late_table(
    floor_dsn: str, tmp_path: Path
) -> None:
    """A royal flush on a $100 Ante and $100 Streets is capped at the $50,000 aggregate payout limit (655a.12(b)), and
    the reports carry the capped amount."""
    a = Played(tmp_path / "ms-a.sqlite", "ms-a", BOUNDARY - timedelta(hours=2))
    b = Played(tmp_path / "ms-b.sqlite", "ms-b", BOUNDARY - timedelta(hours=2), progressive_table())
    a.round(BOUNDARY - timedelta(minutes=50))
    a.voided_round(BOUNDARY - timedelta(minutes=40))
    # Dealt and locked at 05:59:5x, seat 2 folding its $10 Ante before 06:00, settled after it.
    a.t.decks.append(arranged_deck(["As", "Ks", "Qs", "Js", "Ts"]))  # shuffled after the next round: seat 1's royal
    straddling = a.round(BOUNDARY - timedelta(seconds=8), fold=2, jump=(2, BOUNDARY + timedelta(seconds=30)))
    # A royal flush on $100 Ante and $100 Streets (500 to 1: $200,000) is capped at the $50,000 limit of 655a.12(b).
    royal = a.round(BOUNDARY + timedelta(minutes=10), wagers=((1, "ante", 10_000),))
    a.round(BOUNDARY + timedelta(minutes=20))
    b.round(BOUNDARY - timedelta(minutes=30), wagers=(*PLAIN, (2, "progressive", 100)))
    # Both hits at 05:59:5x, validated by the floorperson at 06:00:10: paid, and the round completed, in the new day.
    jackpot = b.round(BOUNDARY - timedelta(seconds=20), wagers=HITTING, validate_at=BOUNDARY + timedelta(seconds=10))
    b.voided_round(BOUNDARY + timedelta(minutes=20), (1, "progressive", 100))
    b.round(BOUNDARY + timedelta(minutes=30))
    for p in (a, b):
        p.journal.close()

    rows_a, rows_b = _rows(tmp_path / "ms-a.sqlite"), _rows(tmp_path / "ms-b.sqlite")
    lock = next(r for r in rows_a if r["round_id"] == straddling and r["type"] == "no_more_bets")
    fold = next(r for r in rows_a if r["round_id"] == straddling and r["type"] == "seat.folded")
    done = next(r for r in rows_a if r["round_id"] == straddling and r["type"] == "round.completed")
    assert journal_totals.parse_ts(lock["ts"]) < BOUNDARY <= journal_totals.parse_ts(done["ts"])
    assert journal_totals.parse_ts(fold["ts"]) < BOUNDARY, "the fold must fall in the old day for this scenario"

    # B's broker connection dropped at 05:45: what it journaled after comes first, what it held back comes late.
    cut = next(i for i, r in enumerate(rows_b) if journal_totals.parse_ts(r["ts"]) >= BOUNDARY - timedelta(minutes=15))
    w = await writer(floor_dsn)
    for batch in (
        [_published(r, False) for r in rows_a],
        [_published(r, False) for r in rows_b[:cut][:5]],
        [_published(r, False) for r in rows_b[cut:]],
        [_published(r, True) for r in rows_b[5:cut]],
    ):
        result = await w.write([msg(m) for m in batch])
        assert result.events_new == len(batch)

    for day in (DAY, DAY + timedelta(days=1)):
        report = _report(floor_dsn, day)
        for path in (tmp_path / "ms-a.sqlite", tmp_path / "ms-b.sqlite"):
            reconcile(report, journal_totals_cli(path, "--day", str(day)))

    hit = next(r for r in rows_b if r["round_id"] == jackpot and r["type"] == "progressive.hit")
    paid = [r for r in rows_b if r["round_id"] == jackpot and r["type"] == "progressive.paid"]
    assert journal_totals.parse_ts(hit["ts"]) < BOUNDARY <= min(journal_totals.parse_ts(r["ts"]) for r in paid)
    old_b, new_b = (journal_totals_cli(tmp_path / "ms-b.sqlite", "--day", str(d)) for d in (DAY, DAY + timedelta(1)))
    assert old_b["jackpots"] == {}
    assert new_b["jackpots"] == {"major": {"hits": 2, "paid_cents": sum(r["payload"]["amount"] for r in paid)}}
    # The jackpot round's $2 of contributions went with it; the void's $1 was reversed: one $1 wager in the old day.
    assert {lv: c["wagered_cents"] for lv, c in old_b["contributions"].items()} == {
        "mega": 100,
        "major": 100,
        "minor": 100,
    }
    assert {lv: c["wagered_cents"] for lv, c in new_b["contributions"].items()} == {
        "mega": 200,
        "major": 200,
        "minor": 200,
    }

    # The straddling round is wholly the new day's: its three seats, its fold and its settlements.
    old, new = (journal_totals_cli(tmp_path / "ms-a.sqlite", "--day", str(d)) for d in (DAY, DAY + timedelta(1)))
    assert (old["rounds"], old["voided"], old["seats_playing"]) == (1, 1, 3 + 2)
    assert (new["rounds"], new["voided"], new["seats_playing"]) == (3, 0, 3 + 1 + 3)
    assert new["wagers"]["ante"]["settled"] == 3 + 1 + 3  # the fold's Ante (655a.11(b)) counts with its round
    (capped,) = [r["payload"] for r in rows_a if r["round_id"] == royal and r["type"] == "hand.settled"]
    assert (capped["hand"], capped["payout_limited"], capped["paid"]) == ("royal_flush", True, 5_000_000)
    assert old["wagers"]["ante"]["settled"] == 3
    assert old["irregularities"] == [
        {"type": "card.face_up_discarded", "rule": "655a.13(a)", "count": 1},
        {"type": "round.voided", "rule": "655a.13(a)", "count": 1},
    ]


def test_journal_totals_refuses_bad_arguments_naming_the_fix(tmp_path: Path) -> None:
    p = Played(tmp_path / "t.sqlite", "t", BOUNDARY)
    p.journal.close()

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return totals_run(tmp_path / "t.sqlite", *argv)

    for argv, says in (
        (["--day", "2026-13-01"], "no such date"),
        (["--day", "21/11/2026"], "write YYYY-MM-DD"),
        (["--day", "\uff12\uff10\uff12\uff16-11-21"], "write YYYY-MM-DD"),
        (["--day", "2026-11-21", "--starts-at", "25:00"], "HH:MM"),
        (["--day", "2026-11-21", "--timezone", "Mars/Olympus"], "unknown time zone"),
        ([], "say which gaming day"),
        (["--from", "2026-11-21"], "both --from and --to"),
        (["--from", "2026-11-22", "--to", "2026-11-21"], "before --from"),
    ):
        done = run(*argv)
        assert done.returncode == 2, (argv, done.stdout, done.stderr)
        assert says in done.stderr, (argv, done.stderr)
        assert "Traceback" not in done.stderr
    done = run("--day", "2026-11-21")
    assert done.returncode == 0, done.stderr
    assert "no events in this period" in done.stdout
