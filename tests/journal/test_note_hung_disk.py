"""A real `tablectl run` whose journal's disk hangs while the shell notes something (a supervisor command rejected):
the daemon still answers on the broker, and SIGTERM ends it with status 3, saying what was not written.

Before, `TableService.note` appended on the event loop and took the journal's lock there: the rejection's note, blocked
inside its commit, held the loop, so the command got no reply, and the SIGTERM was never handled (systemd's SIGKILL
would have ended it at TimeoutStopSec). Now the note is committed on the journal's writer thread (controller/shell/
notes.py); the reply waits for it at most NOTE_REPLY_S and goes without its seqs.

Real parts: the real daemon on the demo table's simulated devices (a process of their own), a real mosquitto, its real
journal. What cannot run here is a disk that hangs, nor can the test hold a lock inside the daemon's process: the
daemon runs with the test-only hook of controller/store/hung_disk.py, and each commit blocks in the kernel inside its
transaction (opening a FIFO nobody writes) from the moment the test makes the FIFO (tests/journal/stalled_journal.py).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from controller.shell.runner import STOP_UNWRITTEN
from tests.broker import Mosquitto, Subscribe
from tests.e2e.sim_devices import DEMO, read_until, running_simulators
from tests.journal.stalled_journal import disk_hung, hung_disk_env
from tests.tablectl_runs import TABLECTL

BOUND_S = 60  # a bound on failure only


@pytest.fixture
def simulators(tmp_path: Path) -> Iterator[Path]:
    with running_simulators(tmp_path / "ports.json") as ports:
        yield ports


def types(journal: Path) -> list[str]:
    db = sqlite3.connect(journal)
    try:
        return [str(r[0]) for r in db.execute("SELECT type FROM events ORDER BY seq")]
    finally:
        db.close()


def publish(mosquitto: Mosquitto, topic: str, payload: bytes) -> None:
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"test-hung-{os.getpid()}")
    client.connect(mosquitto.host, mosquitto.port, keepalive=30)
    client.loop_start()
    try:
        client.publish(topic, payload, qos=1).wait_for_publish(BOUND_S)
    finally:
        client.disconnect()
        client.loop_stop()


def test_a_note_on_a_hung_disk_leaves_the_daemon_answering_and_sigterm_exits_3(
    simulators: Path, tmp_path: Path, mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str
) -> None:
    config = tmp_path / "table.toml"
    config.write_text(DEMO.read_text().replace('table_id = "demo-ms-1"', f'table_id = "{unique_id}"'))
    base = f"tablectl/{unique_id}"
    replies, events = subscribe(f"{base}/cmd/reply"), subscribe(f"{base}/event")
    journal, log, fifo = tmp_path / "run.sqlite", tmp_path / "run.log", tmp_path / "hung-disk"
    args = ["--log-json", "run", "--config", str(config), "--ports", str(simulators), "--live-log"]
    with log.open("w") as err:
        proc = subprocess.Popen(
            [*TABLECTL, *args, "--broker", mosquitto.url, "--journal", str(journal)],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            stdin=subprocess.DEVNULL,
            env=hung_disk_env(fifo),
        )
    try:
        read_until(proc, "betting open", [])
        events.wait_until(lambda ms: any(b'"command.listening"' in m.payload for m in ms), BOUND_S, "the listener")
        before = types(journal)
        with disk_hung(fifo):  # every commit from now on blocks inside its transaction
            publish(mosquitto, f"{base}/cmd/close_table", b"not a command")
            replies.wait_until(lambda ms: len(ms) >= 1, BOUND_S, "the rejection's reply")
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    [reply] = [m.json() for m in replies.on(f"{base}/cmd/reply")]
    # Answered while the note was inside the hung commit: rejected, with no seq (nothing journaled it).
    assert reply["outcome"] == "rejected" and reply["event_seqs"] == [], reply
    lines = [json.loads(x) for x in text.splitlines() if x.startswith("{")]
    assert any(x["event"].startswith("command rejections not journaled yet") for x in lines), text[-3000:]
    assert rc == STOP_UNWRITTEN == 3, text[-3000:]
    [said] = [x for x in lines if str(x["event"]).startswith("the stop could not be journaled")]
    assert said["level"] == "error" and said["unwritten"] == "table.stopped" and said["by"] == "SIGTERM", said
    # Neither the rejection nor the stop reached the file: it reads as a crash after what it held before.
    assert types(journal) == before and "command.rejected" not in before
