"""`tablectl demo --floor --rounds N` from the command line: simulated tables, the floor service and its console on
a private PostgreSQL and mosquitto it starts; it prints the console's URL and exits 0 once the floor archived
every table's N rounds (issue 17 item 7)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.floor, pytest.mark.e2e]
ROOT = Path(__file__).resolve().parents[2]


def test_demo_floor_plays_n_rounds_and_exits_0() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", "demo", "--floor", "--rounds", "2", "--http", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "open http://127.0.0.1:" in done.stdout
    assert "every table played 2 round(s); the floor archived them" in done.stdout


def test_http_without_floor_is_a_usage_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", "demo", "--http", "127.0.0.1:9"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "--http is for the console of `tablectl demo --floor`" in done.stderr
