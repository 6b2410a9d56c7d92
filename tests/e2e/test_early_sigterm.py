"""A SIGTERM that reaches `tablectl run` before its handlers are installed (its first ~2 s: imports, the software
check, the journal's open and restore, the retained anchor's read, the devices' start) ends the process by the
signal's default action, exit status -15, with no orderly stop. That is a kill -9 at the same instant: Python runs no
code of the process after it (no `finally`, no atexit), and the table is built to lose nothing to one (SQLite's
atomic commits, the anchor checked at the next start; tests/e2e/test_kill9_recovery.py). Held here at each point of
the start a log line marks: the real daemon (`tablectl demo`, its simulated devices in the process) is stopped there,
and every start after restores the journal with its chain intact, every event journaled before it unchanged, no
tilt, and goes on playing. docs/supervision.md, "A SIGTERM before the handlers"."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.broker import Mosquitto

pytestmark = pytest.mark.e2e
CONFIGS = Path(__file__).resolve().parents[2] / "configs"
# The lines the start logs, in order, before the handlers are installed (controller/shell/runner.py, run_table; the
# software check says "software verified", "software not verified" or "software check failed"):
# each is a point the SIGTERM is sent at.
POINTS = ("software ", "journal opened", "journal anchor", "device online", "mqtt connected")
READY = "command listener subscribed"  # logged once the service runs: the handlers are in


class Demo:
    def __init__(self, tmp: Path, broker: str, table_id: str) -> None:
        self.journal = tmp / "journal.sqlite"
        self.config = tmp / "table.toml"
        text = (CONFIGS / "demo.toml").read_text().replace('table_id = "demo-ms-1"', f'table_id = "{table_id}"', 1)
        self.config.write_text(text.replace('prefix = "tablectl"', f'prefix = "{table_id}"'))
        self.broker = broker
        self.logs = tmp
        self.boots = 0
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.boots += 1
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "controller.cli", "--log-json", "demo", "--pace", "0", "--quiet"),
                *("--seed", str(self.boots), "--journal", str(self.journal)),
                *("--broker", self.broker, "--config", str(self.config)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=(self.logs / f"boot{self.boots}.log").open("wb"),
            stdin=subprocess.DEVNULL,
        )

    def said(self) -> list[str]:
        lines = (self.logs / f"boot{self.boots}.log").read_text(errors="replace").splitlines()
        return [str(json.loads(line).get("event")) for line in lines if line.startswith("{")]

    def stop_when(self, reached: Callable[[], bool], what: str) -> int:
        """SIGTERM once `reached()` (polled: a condition, not a delay), then the exit status."""
        proc = self.proc
        if proc is None:
            raise AssertionError("not started")
        deadline = time.monotonic() + 60
        while not reached():
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"boot {self.boots} did not reach {what}: {self.said()}")
            time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()

    def events(self) -> list[tuple[int, str, str]]:
        db = sqlite3.connect(self.journal)
        try:
            return [
                (int(s), str(t), str(h)) for s, t, h in db.execute("SELECT seq, type, hash FROM events ORDER BY seq")
            ]
        finally:
            db.close()

    def verify(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "controller.cli", "journal", "verify", "--journal", str(self.journal)],
            capture_output=True,
            text=True,
            timeout=60,
        )


def _played(demo: Demo, after: int) -> Callable[[], bool]:
    """True once the journal holds a round completed past seq `after` (the table plays again)."""

    def check() -> bool:
        return READY in demo.said() and any(
            t == "round.completed" and s > after for s, t, _ in demo.events() if demo.journal.exists()
        )

    return check


def test_a_sigterm_at_each_point_of_the_start_loses_nothing_the_next_start_needs(
    mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    demo = Demo(tmp_path, mosquitto.url, unique_id)
    demo.start()
    assert demo.stop_when(_played(demo, 0), "a first round") == 0
    before = demo.events()
    statuses = {}
    for point in POINTS:
        demo.start()
        statuses[point] = demo.stop_when(lambda p=point: any(p in e for e in demo.said()), point)  # type: ignore[misc]
        assert demo.said()[-1:] != [READY], f"{point}: the service was running already; the point is not early"
        after = demo.events()
        assert after[: len(before)] == before, f"{point}: an event journaled before changed or went"
        assert demo.verify().returncode == 0, f"{point}: {demo.verify().stdout}"
        before = after
    # The default action (exit -15) before the handlers; an orderly 0 once installed: each point is one of the two.
    assert set(statuses.values()) <= {0, -signal.SIGTERM}, statuses
    assert -signal.SIGTERM in statuses.values(), statuses
    demo.start()
    assert demo.stop_when(_played(demo, before[-1][0]), "a round after the early stops") == 0
    after = demo.events()
    assert after[: len(before)] == before
    assert demo.verify().returncode == 0, demo.verify().stdout
    assert not [e for e in after if e[1] == "tilt.raised"], [e for e in after if e[1].startswith("tilt")]
    assert [s for s, _, _ in after] == list(range(1, len(after) + 1))
