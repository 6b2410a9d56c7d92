"""`tablectl demo --floor --rounds N` from the command line: simulated tables, the link controller, the floor service
and its console on a private PostgreSQL and mosquitto it starts; it prints the console's URL and exits 0 once the floor
archived every table's N rounds, with the link's reconciliation (issue 17 item 7, issue 15 item 4)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.floor, pytest.mark.e2e]
ROOT = Path(__file__).resolve().parents[2]


def test_demo_floor_plays_n_rounds_and_exits_0() -> None:
    argv = ["demo", "--floor", "--rounds", "3", "--seed", "3", "--http", "127.0.0.1:0"]
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "tablectl demo --floor: link floor-demo-mega open: ms-1 and ms-2 on one linked progressive" in out
    assert "open http://127.0.0.1:" in out
    assert "every table played 3 round(s); the floor archived them" in out
    # The link's reconciliation (`tablectl link report`): both linked tables fed the one meter, lir-1 did not.
    summary = re.search(
        r"^link floor-demo-mega open: progressive \$([\d,.]+); contributions (.*?); hits (.*)$", out, re.M
    )
    assert summary is not None, out[-3000:]
    contributed = dict(re.findall(r"(\S+) \$([\d,.]+)", summary.group(2)))
    assert set(contributed) == {"ms-1", "ms-2"}
    # Each linked wager is $5 at 21 % (655a.12(c)(3) paytable A): whole multiples of $1.05, at least one a table.
    for dollars in contributed.values():
        cents = round(float(dollars.replace(",", "")) * 100)
        assert cents > 0 and cents % 105 == 0, summary.group(0)
    # Seed 3 puts a progressive wager on a thirteen-hearts deal at both linked tables: each hit was claimed from the
    # link, validated at its table by the simulated floorperson, and reported paid by the table (no signature at the
    # link), so none is left pending on the signs.
    hits = re.findall(r"(ms-[12]) seat \d \$[\d,.]+ \(([^)]*)\)", summary.group(3))
    assert {t for t, _ in hits} == {"ms-1", "ms-2"}, summary.group(0)
    assert all(state == f"paid, validated by demo-floorperson at {t}" for t, state in hits), summary.group(0)
    assert "the link's books balance" in out


def test_http_without_floor_is_a_usage_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", "demo", "--http", "127.0.0.1:9"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "--http is for the console of `tablectl demo --floor`" in done.stderr
