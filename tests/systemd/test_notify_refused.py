"""A NOTIFY_SOCKET the daemon cannot use (not a unix socket: a VM's vsock address) is said once, with what this run
will not send systemd; the table runs all the same. The daemon reads it twice (for the journal check's progress at
the open, then for the supervisor), and said it twice.

Real parts: the real `tablectl demo` (a table on simulated devices over real ptys) as a child process, its log as an
operator reads it. No broker listens at the URL it is given: the table journals locally either way, and the test
needs none."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from structlog.testing import capture_logs

from controller.shell.sdnotify import SdNotify
from tests.broker import fresh_id
from tests.tablectl_runs import NO_STATE, TABLECTL

BOUND_S = 120  # a bound on failure only


def test_an_unusable_notify_socket_is_said_once_with_what_is_not_sent(tmp_path: Path) -> None:
    env = {**os.environ, **NO_STATE, "NOTIFY_SOCKET": "vsock:2:1234"}
    env.pop("WATCHDOG_USEC", None)
    command = [*TABLECTL, "--log-json", "demo", "--pace", "0", "--quiet", "--rounds", "1"]
    run = subprocess.run(
        [*command, "--journal", str(tmp_path / "j.sqlite"), "--broker", "mqtt://127.0.0.1:9"],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=BOUND_S,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    logged = [json.loads(line) for line in run.stderr.splitlines() if line.startswith("{")]
    refused = [e for e in logged if e["event"] == "cannot notify systemd"]
    assert len(refused) == 1, refused
    assert refused[0]["level"] == "warning" and "vsock:2:1234" in refused[0]["error"]
    assert refused[0]["not_sent"].startswith("READY=1, STATUS=, the watchdog's pings and the journal check's progress")
    assert any(e["event"] == "journal opened" for e in logged)  # the table ran


def test_each_unusable_address_is_said_once_in_a_process() -> None:
    address, other = f"vsock:2:{fresh_id('n')}", f"vsock:3:{fresh_id('n')}"
    with capture_logs() as logs:
        assert SdNotify.from_environment({"NOTIFY_SOCKET": address}) is None
        assert SdNotify.from_environment({"NOTIFY_SOCKET": address}) is None
        assert SdNotify.from_environment({"NOTIFY_SOCKET": other}) is None
    said = [e["error"] for e in logs if e["event"] == "cannot notify systemd"]
    assert len(said) == 2 and address in said[0] and other in said[1]
