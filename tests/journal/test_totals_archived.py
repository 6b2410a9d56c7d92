"""`tablectl journal totals` counts the rows `journal archive` (and [journal] keep_rounds) sealed into segment files:
a gaming day's totals are the same, to the cent, before and after its older rounds are archived (docs/floor.md,
"Reconciling"; docs/journal.md, "Archiving"). A segment that is missing or altered stops the command with the file
and the fix named, never a smaller total. Before, the archived rows were left out and only stderr said so.

Real parts: 655a rounds played on the real engine (tests/engine's pure table) into a real SQLite journal, archived by
the real `tablectl journal archive`, totalled by the real command; the broker's acknowledgements (archiving takes only
acknowledged rows) are marked on the journal as the publisher marks them.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.store.archive import default_dir
from controller.store.journal import Journal
from tests.engine.mississippi_table import make
from tests.tablectl_runs import tablectl

START = datetime(2026, 11, 21, 7, 0, tzinfo=UTC)  # gaming day 2026-11-21 (06:00 UTC start)
# 655a.7: Antes on three seats, a Three Card Bonus (655a.12(f)) on one: money in, money out, folds.
PLAIN = ((1, "ante", 500), (1, "three_card_bonus", 100), (2, "ante", 1000), (3, "ante", 500))
ROUNDS = 9
ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """`tablectl` as a real process (its stdout is the command's alone: no log lines in the JSON)."""

    return lambda *args: tablectl(*args, cwd=ROOT)


def play(path: Path) -> None:
    """ROUNDS rounds of 655a, each input journaled as one commit a second apart; seat (n % 3) + 1 folds its first
    decision in round n, the others bet the least allowed (655a.9), so the settlements differ round to round."""
    t = make()
    j = Journal(path, "MS-1", "boot-1")
    now = START
    j.append(t.events, now)
    for n in range(ROUNDS):
        now += timedelta(minutes=5)
        for seat, spot, cents in PLAIN:
            j.append(t.wager(seat, spot, cents), now)
        pending = t.press("no_more_bets")
        j.append(pending, now)
        while t.state.phase.value == "decision":
            p = [e for e in pending if e.type == "decision.requested"][-1].payload
            if p["seat"] == n % 3 + 1:
                pending = t.press("fold")
            elif p["kind"] == "wager_or_fold":
                pending = t.wager(p["seat"], p["spot"], p["allowed"][0])
            else:
                pending = t.press("let_it_ride")
            j.append(pending, now)
        assert "round.completed" in t.types(pending)
    j.mark_published(list(range(1, j.last_seq + 1)), replayed=False)  # the broker acknowledged every row
    j.close()


def totals(cli: Callable[..., subprocess.CompletedProcess[str]], *where: str) -> dict[str, Any]:
    done = cli("journal", "totals", *where, "--day", "2026-11-21", "--json")
    assert done.returncode == 0, done.stderr
    (table,) = json.loads(done.stdout)["tables"]
    assert isinstance(table, dict)
    return table


def test_a_days_totals_are_the_same_before_and_after_its_rounds_are_archived(
    tmp_path: Path, cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    path = tmp_path / "ms.sqlite"
    play(path)
    before = totals(cli, "--journal", str(path))
    assert before["rounds"] == ROUNDS and before["handle_cents"] > 0 and before["win_cents"] != 0

    done = cli("journal", "archive", "--journal", str(path), "--keep-rounds", "3")
    assert done.returncode == 0 and "sealed into" in done.stdout, done.stdout + done.stderr
    kept = sqlite3.connect(path)
    live_rounds = kept.execute("SELECT COUNT(*) FROM events WHERE type = 'round.completed'").fetchone()[0]
    kept.close()
    assert 0 < live_rounds < ROUNDS, "the day's rounds must be partly archived for this test"

    after = totals(cli, "--journal", str(path))  # the segments from <journal>.archive, where archive put them
    assert after == before  # every figure, to the cent

    # Moved elsewhere: --archives says where; the config's [journal] archive_dir is where --config looks.
    moved = tmp_path / "vault"
    default_dir(path).rename(moved)
    assert totals(cli, "--journal", str(path), "--archives", str(moved)) == before
    config = tmp_path / "t.toml"
    journal = f'\n[journal]\npath = "{path}"\nkeep_rounds = 3\narchive_dir = "{moved}"\n'
    config.write_text((CONFIGS / "demo.toml").read_text() + journal)
    assert totals(cli, "--config", str(config)) == before


def test_a_missing_or_altered_segment_stops_the_totals_naming_the_file_and_the_fix(
    tmp_path: Path, cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    path = tmp_path / "ms.sqlite"
    play(path)
    assert cli("journal", "archive", "--journal", str(path), "--keep-rounds", "2").returncode == 0
    (seg,) = sorted(default_dir(path).glob("*.segment.sqlite"))

    nowhere = str(tmp_path / "nowhere")
    gone = cli("journal", "totals", "--journal", str(path), "--archives", nowhere, "--day", "2026-11-21")
    assert gone.returncode == 2 and gone.stdout == ""
    assert f"{tmp_path / 'nowhere' / seg.name} is missing" in gone.stderr
    assert "restore the file as sealed from the archive's backup" in gone.stderr and "--archives DIR" in gone.stderr

    db = sqlite3.connect(seg)  # the first $5 Ante made $50 in the sealed file
    first = "SELECT MIN(seq) FROM events WHERE type = 'wager.accepted'"
    changed = db.execute(f"UPDATE events SET payload = replace(payload, '500', '5000') WHERE seq = ({first})")
    assert changed.rowcount == 1
    db.commit()
    db.close()
    altered = cli("journal", "totals", "--journal", str(path), "--day", "2026-11-21", "--json")
    assert altered.returncode == 2 and altered.stdout == ""
    assert f"altered segment at seq 1 (table MS-1): {seg} is not the file archived" in altered.stderr
