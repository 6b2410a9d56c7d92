"""A table stopped at once says so in its journal: a real `tablectl run` (the demo table's simulated devices in a
process of their own, the broker unreachable) sent SIGTERM mid-round, as systemd's stop sends it, ends its journal with
`table.stopped` (by SIGTERM, the phase, the round in play, the policy the restart applies: docs/recovery.md), and the
restart's `table.recovered` names it (`after_stop`). A kill -9 at the same point leaves no such event and its restart
no `after_stop`: a crash still reads as a crash. A second Ctrl-C (here `tablectl demo`, whose people play a round the
first Ctrl-C's close then waits for) says `second interrupt`, after the `table.closing` that names the first. Before,
the journal of a stop at once ended on the round's last step, as a crash's does. Synchronised on what the processes
print and journal, bounded by timeouts."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.engine.recovery import POLICIES
from tests.broker import Mosquitto, Subscribe
from tests.e2e.conftest import SmallDisk, table_config
from tests.e2e.sim_devices import DEMO, read_until, running_simulators, started
from tests.tablectl_runs import TABLECTL

pytestmark = pytest.mark.e2e
DEAD_BROKER = "mqtt://127.0.0.1:1"  # nothing listens: the stop must not wait on the broker
STOP_BOUND_S = 20  # systemd/tablectl.service's TimeoutStopSec: the stop ends well within it


@dataclass(frozen=True)
class Row:
    seq: int
    type: str
    payload: dict[str, Any]
    round_id: str | None


def rows(journal: Path) -> list[Row]:
    db = sqlite3.connect(journal)
    try:
        found = db.execute("SELECT seq, type, payload, round_id FROM events ORDER BY seq").fetchall()
    finally:
        db.close()
    return [Row(int(s), str(t), json.loads(p), r) for s, t, p, r in found]


@pytest.fixture
def simulators(tmp_path: Path) -> Iterator[Path]:
    with running_simulators(tmp_path / "ports.json") as ports:
        yield ports


def run(ports: Path, journal: Path, config: Path = DEMO, broker: str = DEAD_BROKER) -> subprocess.Popen[str]:
    args = ["run", "--config", str(config), "--ports", str(ports), "--live-log", "--broker", broker]
    return started([*TABLECTL, *args, "--journal", str(journal)])


def fill(disk: Path) -> None:
    """Every byte left on the tmpfs taken by a file of its own (the journal's own files untouched)."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 512)
    except OSError as err:
        assert err.errno == errno.ENOSPC, err
    finally:
        os.close(fd)


def stopped_with(proc: subprocess.Popen[str], sig: signal.Signals, marker: str) -> int:
    """`sig` once the table printed `marker`, then the exit status (the process killed if the stop overruns)."""
    try:
        read_until(proc, marker, [])
        proc.send_signal(sig)
        return proc.wait(timeout=STOP_BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def restarted(ports: Path, journal: Path, after: int) -> Row:
    """The table started again on `journal`, closed by a first Ctrl-C once betting reopens: its `table.recovered`."""
    assert stopped_with(run(ports, journal), signal.SIGINT, "betting open") == 0
    later = [r for r in rows(journal) if r.seq > after]
    assert later[-1].type == "table.closed" and later[-1].payload.get("by") == "interrupt", later[-1]
    return next(r for r in later if r.type == "table.recovered")


def test_sigterm_mid_round_journals_the_stop_and_the_restart_names_it(simulators: Path, tmp_path: Path) -> None:
    journal = tmp_path / "run.sqlite"
    assert stopped_with(run(simulators, journal), signal.SIGTERM, "betting open") == 0
    journaled = rows(journal)
    opened = [r for r in journaled if r.type == "betting.opened"][-1]
    last = journaled[-1]
    assert last.type == "table.stopped", [r.type for r in journaled[-5:]]
    assert last.payload == {
        "by": "SIGTERM",
        "phase": "betting",
        "round_no": 1,
        "policy": "reopen_betting",
        "what": POLICIES["reopen_betting"],
    }
    assert last.round_id == opened.round_id is not None
    recovered = restarted(simulators, journal, last.seq)
    assert recovered.payload["policy"] == "reopen_betting" and recovered.round_id == opened.round_id
    assert recovered.payload["after_stop"] == {"seq": last.seq, "by": "SIGTERM"}


def test_kill_9_mid_round_still_reads_as_a_crash(simulators: Path, tmp_path: Path) -> None:
    journal = tmp_path / "run.sqlite"
    assert stopped_with(run(simulators, journal), signal.SIGKILL, "betting open") == -signal.SIGKILL
    journaled = rows(journal)
    assert journaled[-1].type == "betting.opened" and "table.stopped" not in {r.type for r in journaled}
    recovered = restarted(simulators, journal, journaled[-1].seq)
    assert recovered.payload["policy"] == "reopen_betting" and "after_stop" not in recovered.payload


def _journaled(journal: Path, proc: subprocess.Popen[bytes], type_: str) -> Row:
    """The first `type_` the demo journals (the journal polled: a condition, not a delay; 60 s bound a failure)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(sqlite3.OperationalError):  # the file made, its schema not yet
            found = [r for r in rows(journal) if r.type == type_] if journal.exists() else []
            if found:
                return found[0]
        time.sleep(0.005)
    raise AssertionError(f"the demo journaled no {type_} (exit {proc.poll()})")


def test_a_second_interrupt_mid_round_journals_the_stop_after_the_first_ones_close(tmp_path: Path) -> None:
    journal = tmp_path / "demo.sqlite"
    # --pace: the simulated players' decisions take a quarter second each, so the round the close waits for is
    # still in play when the second Ctrl-C comes (sent as soon as the journal holds the close).
    args = ["demo", "--pace", "0.25", "--seed", "5", "--quiet", "--broker", DEAD_BROKER, "--journal", str(journal)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", *args, "--config", str(DEMO)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        _journaled(journal, proc, "decision.requested")
        proc.send_signal(signal.SIGINT)
        closing = _journaled(journal, proc, "table.closing")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=STOP_BOUND_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert closing.payload.get("by") == "interrupt", closing.payload
    last = rows(journal)[-1]
    assert last.type == "table.stopped", last
    assert last.payload["by"] == "second interrupt" and last.round_id == closing.round_id is not None
    assert last.payload["phase"] not in ("closed", "betting") and last.payload["policy"] in POLICIES, last.payload


def test_a_full_disk_does_not_hold_the_stop(simulators: Path, tmp_path: Path) -> None:
    """The journal's disk full when SIGTERM comes (a real tmpfs of 768 KiB, tests/e2e/conftest.py SmallDisk): the stop
    goes on at once, exit 0, saying at error level that it could not be journaled; the file then reads as a crash."""
    disk = SmallDisk(tmp_path / "disk", "768k")
    if not disk.mounted:
        pytest.skip("mounting a tmpfs needs root")
    try:
        journal = disk.path / "run.sqlite"
        proc = run(simulators, journal)
        try:
            read_until(proc, "betting open", [])
            fill(disk.path)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=STOP_BOUND_S) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        (disk.path / "filler").unlink()
        assert rows(journal)[-1].type == "betting.opened"
    finally:
        disk.unmount()


def test_sigterm_publishes_the_stop_before_the_table_goes_offline(
    subscribe: Subscribe, mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    """With the broker up, the floor hears the stop: `table.stopped` reaches a subscriber, the journal's last seq."""
    config = table_config(tmp_path, unique_id, unique_id)
    sub = subscribe(f"{unique_id}/{unique_id}/#")
    journal = tmp_path / "run.sqlite"
    with running_simulators(tmp_path / "ports.json", config=config) as ports:
        assert stopped_with(run(ports, journal, config, mosquitto.url), signal.SIGTERM, "betting open") == 0
    last = rows(journal)[-1]
    assert last.type == "table.stopped"
    sub.wait_until(
        lambda msgs: any(m.topic.endswith("/event") and m.json()["seq"] == last.seq for m in msgs),
        timeout=10,
        what="the stop published",
    )
    (published,) = [m.json() for m in sub.on(f"{unique_id}/{unique_id}/event") if m.json()["seq"] == last.seq]
    assert (published["type"], published["payload"]["by"]) == ("table.stopped", "SIGTERM")
