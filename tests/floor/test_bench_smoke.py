"""The floor's benchmarks still run: each at its smallest prints its figures against its baseline (never a speed
asserted; the figures come from full runs, README "Benchmarks")."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.floor]
BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench(script: str, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_the_ingest_bench_reports_against_the_commit_rate() -> None:
    out = _bench(
        "floor_ingest.py", "--tables", "10", "--events", "2000", "--publishers", "2", "--batch", "500", "--pairs", "1"
    )
    assert "baseline: PostgreSQL one-row INSERT + COMMIT" in out and "x baseline" in out
    assert "backlog drain" in out
    # The trigger's time is read from the server's counters: a zero would mean they were read before being flushed.
    # One pair of writer runs prints it as three did (the default, for the figures).
    share = re.search(r"the round summary's cost to the writer \(1 runs each.* the trigger's own time ([0-9.]+)%", out)
    assert share is not None and float(share[1]) > 0


def test_the_report_bench_reports_against_a_scan() -> None:
    out = _bench("floor_report.py", "--tables", "5", "--hours", "1", "--filler", "2", "--neighbours", "--pairs", "1")
    assert "baseline: a full scan of the day's partition" in out and "x the scan" in out
    assert "with main's look-ups in the events" in out


def test_the_console_bench_reports_against_a_bare_relay() -> None:
    out = _bench("console_updates.py", "--tables", "5", "--probes", "5", "--rate", "20")
    assert "baseline: a bare MQTT-to-SSE relay" in out and "x baseline" in out and "update size" in out


def test_the_ts_index_build_bench_reports_ingest_against_the_writer_alone() -> None:
    out = _bench("ts_index_live.py", "--builds", "2", "--days-per-build", "1", "--per-day", "5000", "--seconds", "0.5")
    assert re.search(r"ingest while building: [0-9.]+x the writer alone \(median of 2 builds, baseline: ", out), out
    # Each older day built and attached, in order, with the writes its ATTACH overlapped.
    days = re.findall(r"events_(2026010[12])_ts_brin: CREATE INDEX CONCURRENTLY [0-9.]+ s, ATTACH PARTITION", out)
    assert days == ["20260101", "20260102"], out


def test_the_service_footprint_bench_reports_optimised_against_unoptimised() -> None:
    """One round of each at its smallest, without compiling first (the figures come from full runs: Part 16). Not
    with --uncompiled: its third variant (the optimised start with an empty PYTHONPYCACHEPREFIX) was never asserted
    here and took a third of the run (10 of 30 s at load 5). The link idles 0.2 s, not 2: the figure after it is
    printed, not asserted."""
    out = _bench("service_footprint.py", "--trials", "1", "--events", "50", "--no-compile", "--link-idle", "0.2")
    assert "RSS after 0.2 s idle" in out, out
    for service in ("floor", "link"):
        assert f"{service} (1 alternating rounds)" in out
    ratios = re.findall(r"RSS at READY=1: unoptimised [0-9.]+ MB .*?; optimised [0-9.]+ MB .*?: ([0-9.]+)x", out)
    assert len(ratios) == 2 and all(float(r) > 0 for r in ratios), out


# The older day's size for the stop benches' smokes: the fewest events whose index build (0.14 s idle) or a table's
# summary statement a 10 ms poll still sees under way at load 11 (8 of 8 stops of each step); 300,000 cost the template
# 4-6 s more. Too small a day, the build ends unseen and the bench fails after its 120 s wait.
STOP_DAY = "100000"


def test_the_ts_index_stop_bench_reports_a_stop_against_a_baseline_checkout() -> None:
    root = str(BENCH.parent)  # this checkout as its own baseline: the bench runs, whatever the figures
    out = _bench("ts_index_stop.py", "--base", root, "--per-day", STOP_DAY, "--runs", "1")
    assert re.search(r"^run 1 \(load [0-9.]+\): baseline [0-9.]+ s \(the index left unbuilt, exit 0\)", out, re.M), out
    assert re.search(r"^median: baseline [0-9.]+ s, this [0-9.]+ s, this/baseline [0-9.]+", out, re.M), out


def test_the_ts_index_stop_bench_reports_a_stop_during_the_summary_against_a_baseline_checkout() -> None:
    root = str(BENCH.parent)
    out = _bench(
        "ts_index_stop.py", "--base", root, "--per-day", STOP_DAY, "--runs", "1", "--step", "summary", "--tables", "4"
    )
    # The stop reaches a table's statement, which it cancels: the day is left pending.
    said = r"[0-9.]+ s \(the day left pending, [0-9,]+ round-days committed, exit 0\)"
    assert re.search(rf"^run 1 \(load [0-9.]+\): baseline {said}, this {said}", out, re.M), out


@pytest.mark.parametrize("mode", ["refused", "dark"])
def test_the_outage_stop_bench_reports_a_stop_against_a_baseline_checkout(mode: str) -> None:
    root = str(BENCH.parent)  # this checkout as its own baseline: the bench runs, whatever the figures
    out = _bench("floor_outage_stop.py", "--base", root, "--runs", "1", "--mode", mode)
    # Each side stopped in order, saying what it left for the broker to redeliver (some of the 50 events in flight).
    said = r"[0-9.]+ s \(exit 0, left [1-9][0-9]*\)"
    assert re.search(rf"^run 1 \(load [0-9.]+\): baseline {said}, this {said}", out, re.M), out
    assert re.search(r"^median: baseline [0-9.]+ s, this [0-9.]+ s, this/baseline [0-9.]+", out, re.M), out


@pytest.mark.parametrize(("service", "mode"), [("floor", "dark-start"), ("link", "dark"), ("link", "dark-start")])
def test_the_outage_stop_bench_reports_a_dark_start_and_the_link(service: str, mode: str) -> None:
    root = str(BENCH.parent)
    out = _bench("floor_outage_stop.py", "--base", root, "--runs", "1", "--mode", mode, "--service", service)
    # Nothing taken from the broker yet (a start) or nothing the link keeps for it: each side says it left nothing.
    said = r"[0-9.]+ s \(exit 0, left -\)"
    assert re.search(rf"^run 1 \(load [0-9.]+\): baseline {said}, this {said}", out, re.M), out


def test_the_console_s_round_in_play_bench_reports_against_the_last_lines_read() -> None:
    out = _bench(
        "console_this_round.py", "--tables", "2", "--days", "2", "--hours", "1", "--taps", "300", "--runs", "3"
    )
    assert "baseline: the last 200 lines of the table" in out and "x baseline" in out
    assert "the last 200 lines now (the journal's start, then through event_keys):" in out
    # The plans themselves are the planner's choice at this size (the full run's are in docs/performance-history.md).
    assert all(
        f"the read of {what}: its plan" in out
        for what in ("the mark", "the close asked", "the close done since", "the last lines before (main's)",
                     "the last lines now")
    )  # fmt: skip
