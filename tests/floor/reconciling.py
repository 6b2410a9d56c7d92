"""Reconciling the floor's report with a table's own journal (docs/floor.md, "Reconciling"): `tablectl journal
totals` on the journal file (through the console script's main(): the command, not its process, is what is checked),
and every figure of the report's table rows held against it, exactly. Used by test_reconcile_days.py (a round across
the day's start, a late table) and test_floor_e2e.py (real daemons, mosquitto, kills, jackpots); shared here, so that
no test module imports another."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.tablectl_runs import here


def totals_run(path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`tablectl journal totals --journal PATH ARGV...` as an auditor runs it, through the console script's main()."""
    return here("journal", "totals", "--journal", path, *argv)


def journal_totals_cli(path: Path, *period: str) -> dict[str, Any]:
    done = totals_run(path, *period, "--json")
    assert done.returncode == 0, done.stderr
    (table,) = json.loads(done.stdout)["tables"]
    assert isinstance(table, dict)
    return table


def reconcile(report: dict[str, list[dict[str, Any]]], mine: dict[str, Any]) -> None:
    """Every figure of the report's table rows against the journal's, exactly (integer cents)."""
    tid = mine["table_id"]

    def of(section: str) -> list[dict[str, Any]]:
        return [r for r in report[section] if r["id"] == tid]

    assert [(r["rounds"], r["voided"]) for r in of("rounds")] == [(mine["rounds"], mine["voided"])]
    got = {
        r["wager"]: {
            "settled": r["settled"],
            "handle_cents": r["handle_cents"],
            "collected_cents": r["collected_cents"],
            "paid_cents": r["paid_cents"],
            "win_cents": r["win_cents"],
        }
        for r in of("wagers")
    }
    assert got == mine["wagers"]
    assert {r["wager"]: (r["seats_placing"], r["seats_playing"]) for r in of("take_rates")} == {
        w: (n, mine["seats_playing"]) for w, n in mine["seats_placing"].items()
    }
    assert {r["level"]: (r["hits"], r["paid_cents"]) for r in of("jackpots")} == {
        lv: (j["hits"], j["paid_cents"]) for lv, j in mine["jackpots"].items()
    }
    assert {
        r["level"]: (r["wagers"], r["wagered_cents"], r["contributed_micro_cents"]) for r in of("contributions")
    } == {
        lv: (c["wagers"], c["wagered_cents"], c["contributed_micro_cents"]) for lv, c in mine["contributions"].items()
    }
    irregular = {(r["kind"], r["rule"]): r["count"] for r in of("irregularities")}
    assert irregular == {(i["type"], i["rule"]): i["count"] for i in mine["irregularities"]}
