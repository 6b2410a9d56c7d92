"""The daemon's own archiving (`[journal] keep_rounds`, controller/shell/archiver.py) on the real daemon: `tablectl
demo`, the runner of `tablectl run` with its simulated devices and players in the same process, against a real
mosquitto and a real SQLite journal.

- Playing with keep_rounds = 2, the daemon seals old rounds into segments between rounds; killed with SIGKILL
  at seeded instants after a pass (which may land in the next one) and restarted on the same journal, it recovers
  every time, and at the end (a close, which archives once more) the whole chain verifies from genesis through
  every segment, no row is in both places or in neither, round numbering runs on without a gap, and the journal
  keeps only the last rounds.
- An archive directory that cannot be made (a file is in its place) fails every pass: each failure is journaled as
  `task.failed` and the third raises `tilt:task:journal-archive` (the demo then stops, exit 1: nobody in it clears a
  tilt); the journal loses no row.
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.store.chain import GENESIS, row_hash
from controller.store.schema import COLUMNS
from tests.broker import Mosquitto
from tests.e2e.conftest import killed_at_exit, start_demo, table_config

pytestmark = pytest.mark.e2e

PREFIX = "ar"
SEED = 683_2026
BUDGET_SECONDS = 120  # a bound on failure only
KEEP = 2
DEMO = [sys.executable, "-m", "controller.cli", "--log-json", "demo", "--pace", "0", "--quiet"]


def _archives(journal: Path) -> int:
    if not journal.exists():
        return 0
    db = sqlite3.connect(journal)
    try:
        return int(db.execute("SELECT COUNT(*) FROM archives").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet (the schema is made by the daemon's first open)
        return 0
    finally:
        db.close()


def _wait(what: str, done: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path) -> None:
    """Poll the journal file (another process writes it: SQLite has no cross-process notification) until `done`."""
    started = time.monotonic()
    while not done():
        assert proc.poll() is None, f"the daemon exited ({proc.returncode}) before {what}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() - started < BUDGET_SECONDS, f"no {what} within {BUDGET_SECONDS} s"
        time.sleep(0.05)


def _rows(db_path: Path) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(db_path)
    try:
        return list(db.execute(f"SELECT {COLUMNS}, hash FROM events ORDER BY seq"))
    finally:
        db.close()


def _tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_daemon_archives_between_rounds_and_survives_kill_9(
    mosquitto: Mosquitto, tmp_path: Path, table_id: str
) -> None:
    config = table_config(tmp_path, f"arch-k9-{table_id}", PREFIX, f"\n[journal]\nkeep_rounds = {KEEP}\n")
    journal = tmp_path / "table.sqlite"
    directory = tmp_path / "table.sqlite.archive"  # the default: <journal>.archive
    rng = random.Random(SEED)
    kills = 0
    for boot in range(1, 5):
        log = tmp_path / f"boot{boot}.log"
        with killed_at_exit(start_demo(config, journal, mosquitto.url, log, seed=SEED + boot)) as proc:
            before = _archives(journal)

            def one_more(before: int = before) -> bool:
                return _archives(journal) > before

            _wait("a segment sealed by this boot", one_more, proc, log)
            # The kill instant: seeded, a few ms to a few rounds after a pass; some land inside the next pass.
            time.sleep(rng.uniform(0.0, 0.6))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
    # The last boot plays a few rounds and closes the table: the close archives once more, then the daemon exits.
    log = tmp_path / "last.log"
    done = subprocess.run(
        [
            *DEMO,
            "--seed",
            "7",
            "--rounds",
            "3",
            "--journal",
            str(journal),
            "--broker",
            mosquitto.url,
            *("--config", str(config)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
        timeout=BUDGET_SECONDS,
        check=False,
    )
    assert done.returncode == 0, log.read_text()[-3000:]
    assert '"moment": "table closed"' in log.read_text()

    verified = _tablectl("journal", "verify", "--journal", str(journal), "--archives", str(directory))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "intact" in verified.stdout and "checked" in verified.stdout

    # Independently of verify: every segment and the live journal together are one gap-free chain from genesis.
    segments = sorted(directory.glob("*.segment.sqlite"))
    db = sqlite3.connect(journal)
    recorded = [name for (name,) in db.execute("SELECT segment FROM archives ORDER BY last_seq")]
    db.close()
    assert len(recorded) >= kills + 1, recorded
    # A kill between the rename and the journal's commit leaves a file the journal does not record: never used.
    by_name = {p.name: p for p in segments}
    rows = [r for name in recorded for r in _rows(by_name[name])] + _rows(journal)
    prev, seqs = GENESIS, []
    for r in rows:
        seq, event_id, boot_id, ts, tid, round_id, type_, rule, payload, sealed, stored = r
        assert row_hash(prev, seq, event_id, boot_id, ts, tid, round_id, type_, rule, payload, sealed) == stored, seq
        prev = str(stored)
        seqs.append(seq)
    assert seqs == list(range(1, len(seqs) + 1)), "a seq is missing or in both places"
    numbers = [json.loads(str(r[8]))["round_no"] for r in rows if r[6] == "betting.opened"]
    assert sorted(set(numbers)) == list(range(1, max(numbers) + 1)), "round numbering runs on across kills"
    # The journal keeps the last rounds only (those kept, and any not yet acknowledged or not ended when it closed).
    live_rounds = {r[5] for r in _rows(journal) if r[5] is not None}
    assert len(live_rounds) <= KEEP + 1, live_rounds
    archived = sum(1 for name in recorded for _ in _rows(by_name[name]))
    assert archived == len(seqs) - len(_rows(journal)) > 0


def test_an_archive_that_keeps_failing_is_journaled_and_tilts_and_loses_no_row(
    mosquitto: Mosquitto, tmp_path: Path, table_id: str
) -> None:
    blocker = tmp_path / "archive"
    blocker.write_text("a file where the archive directory should be\n")
    extra = f'\n[journal]\nkeep_rounds = 1\narchive_dir = "{blocker}"\n'
    config = table_config(tmp_path, f"arch-fail-{table_id}", PREFIX, extra)
    journal = tmp_path / "table.sqlite"
    log = tmp_path / "boot.log"

    def tilted() -> bool:
        if not journal.exists():
            return False
        db = sqlite3.connect(journal)
        try:
            return bool(
                db.execute(
                    "SELECT 1 FROM events WHERE type = 'tilt.raised' AND payload LIKE '%tilt:task:journal-archive%'"
                ).fetchone()
            )
        except sqlite3.OperationalError:
            return False
        finally:
            db.close()

    with killed_at_exit(start_demo(config, journal, mosquitto.url, log, seed=SEED)) as proc:
        _wait("tilt:task:journal-archive", tilted, proc, log)
        # Only a supervisor clears the tilt, and the demo simulates none: it closes the table and exits 1 by itself,
        # saying why (controller/people/stuck.py), rather than waiting for rounds that never come.
        assert proc.wait(timeout=BUDGET_SECONDS) == 1
    said = log.read_text()
    assert "tablectl demo: the table is blocked, and nobody in the demo can clear it" in said, said[-3000:]
    assert "tilt:task:journal-archive" in said[said.index("nobody in the demo") :]
    db = sqlite3.connect(journal)
    failed = [
        p
        for (p,) in db.execute("SELECT payload FROM events WHERE type = 'task.failed' ORDER BY seq")
        if '"journal-archive"' in p
    ]
    (archived,) = db.execute("SELECT COUNT(*) FROM archives").fetchone()
    db.close()
    assert len(failed) >= 3 and "cannot create the archive directory" in failed[0], failed[:1]
    assert archived == 0
    verified = _tablectl("journal", "verify", "--journal", str(journal))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    seqs = [r[0] for r in _rows(journal)]
    assert seqs == list(range(1, len(seqs) + 1))
