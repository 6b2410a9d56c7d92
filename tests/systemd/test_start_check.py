"""The check of the journal file after a crash tells systemd the start is making progress: before READY=1, at least
one EXTEND_TIMEOUT_USEC= (each for a bounded 30 s) with a STATUS= saying what the table is doing, none after it, and
none at all on a start after a clean stop, which does not check. Without them a table keeping more than about 150,000
rounds passed the unit's 90 s start timeout while it checked, was killed, and checked again at the restart.

Real parts: the real `tablectl run` (the unit's ExecStart) on the demo table's simulated devices, a real mosquitto,
a real notification socket bound by the test as systemd binds one (tests/systemd/notify.py), and a journal as a
kill -9 leaves it (tests/journal/torn_files.py). PID 1 here is not systemd, so no unit is started for real."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.shell.watchdog import EXTEND_S
from tests.broker import Mosquitto, fresh_id
from tests.e2e.conftest import table_config
from tests.e2e.sim_devices import running_simulators
from tests.journal.torn_files import journal_with_wal
from tests.systemd.notify import Notification, NotifySocket
from tests.tablectl_runs import TABLECTL

BOUND_S = 60  # a bound on failure only


@pytest.fixture(scope="module")
def simulators(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with running_simulators(tmp_path_factory.mktemp("sims") / "ports.json") as ports:
        yield ports


def started(notify: NotifySocket, config: Path, ports: Path, broker: str, journal: Path) -> list[Notification]:
    """`tablectl run` until READY=1, then stopped as `systemctl stop` does: every notification it sent, in order."""
    env = {k: v for k, v in os.environ.items() if k not in ("WATCHDOG_PID", "JOURNAL_STREAM", "WATCHDOG_USEC")}
    env["NOTIFY_SOCKET"] = notify.address
    command = [*TABLECTL, "--log-format", "journal", "run", "--config", config, "--ports", ports, "--broker", broker]
    run = subprocess.Popen(
        [*map(str, command), "--journal", str(journal)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        notify.wait_for(lambda n: n.get("READY") == "1", BOUND_S, "READY=1")
        run.send_signal(signal.SIGTERM)
        notify.wait_for(lambda n: "STOPPING" in n.fields, BOUND_S, "STOPPING=1")
        _, err = run.communicate(timeout=BOUND_S)
        assert run.returncode == 0, err[-3000:]
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate(timeout=BOUND_S)
    while notify.next(0) is not None:  # whatever it sent before it exited
        pass
    return list(notify.received)


def test_the_check_after_a_crash_extends_the_start_and_a_clean_start_does_not(
    simulators: Path, mosquitto: Mosquitto, notify_socket: NotifySocket, tmp_path: Path
) -> None:
    table_id = fresh_id("sc")
    config = table_config(tmp_path, table_id, table_id)
    journal = journal_with_wal(tmp_path / "state", table_id)  # as a kill -9 left it: the start checks it
    sent = started(notify_socket, config, simulators, mosquitto.url, journal)
    ready = next(i for i, n in enumerate(sent) if n.get("READY") == "1")
    before, after = sent[:ready], sent[ready:]
    extended = [n for n in before if "EXTEND_TIMEOUT_USEC" in n.fields]
    assert extended, f"no EXTEND_TIMEOUT_USEC before READY=1: {[n.fields for n in before]}"
    assert {n.get("EXTEND_TIMEOUT_USEC") for n in extended} == {str(round(EXTEND_S * 1_000_000))}
    # What `systemctl status` shows meanwhile: the check as it begins (the file's size), then that it is done.
    assert extended[0].get("STATUS").startswith("checking the journal file ("), extended[0].fields
    assert extended[-1].get("STATUS").startswith("journal file checked ("), extended[-1].fields
    assert not [n.fields for n in after if "EXTEND_TIMEOUT_USEC" in n.fields]

    # The stop closed the journal cleanly: the next start checks nothing, and asks for no more time.
    notify_socket.received.clear()
    again = started(notify_socket, config, simulators, mosquitto.url, journal)
    assert not [n.fields for n in again if "EXTEND_TIMEOUT_USEC" in n.fields]
    assert not [n.fields for n in again if "journal file" in n.get("STATUS")]
    assert any(n.get("READY") == "1" for n in again)
