"""What a new operator meets in their first hour, run as they run it: the real CLI in its own process.

Each test is a mistake an operator makes while following README.md (a table's example config started as the daemon
without its simulators, a second daemon on the table's journal, the floor's example password file not written yet)
and asserts the message names the problem and the fix, and the exit status, instead of a daemon that runs on
without its devices, two daemons playing one table, or a bare "does not exist".
"""

from __future__ import annotations

import re
import shlex
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from controller.supervisor.verbs import VERBS, roles_for
from tests.e2e.sim_devices import DEMO, ROOT, read_until, running_simulators, started
from tests.tablectl_runs import TABLECTL

pytestmark = pytest.mark.e2e


def test_run_refuses_ports_only_the_simulators_replace(tmp_path: Path) -> None:
    """configs/demo.toml's ports are 'simulated': `run` on it opened nothing and logged every device offline forever."""
    out = subprocess.run(
        [
            *TABLECTL,
            "run",
            "--config",
            str(DEMO),
            "--journal",
            str(tmp_path / "t.sqlite"),
            "--broker",
            "mqtt://127.0.0.1:1",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 2, out.stderr[-2000:]
    assert "shuffler" in out.stderr and "'simulated'" in out.stderr
    assert "tablectl sim-devices" in out.stderr and "--ports" in out.stderr
    assert not (tmp_path / "t.sqlite").exists()  # refused before the journal was made


def test_a_second_daemon_on_the_same_journal_is_refused(tmp_path: Path) -> None:
    """Two `run`s of one table: the second took the first's serial ports and played the same journal's rounds."""
    journal = tmp_path / "table.sqlite"
    command = [*TABLECTL, "run", "--config", str(DEMO), "--journal", str(journal), "--broker", "mqtt://127.0.0.1:1"]
    with running_simulators(tmp_path / "ports.json") as ports:
        first = started([*command, "--ports", str(ports), "--live-log"])
        lines: list[str] = []
        try:
            read_until(first, "betting open", lines)
            second = subprocess.run(
                [*command, "--ports", str(ports)],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        finally:
            first.send_signal(signal.SIGINT)
            assert first.wait(timeout=20) == 0
    assert second.returncode == 2, second.stderr[-2000:]
    assert str(journal) in second.stderr and f"pid {first.pid}" in second.stderr
    assert "device online" not in second.stderr  # refused before it opened the first daemon's ports


def test_floor_names_the_fix_for_a_missing_password_file(tmp_path: Path) -> None:
    """configs/floor.toml names /etc/tablectl/floor-db.password; README's first `floor ... status` meets it absent."""
    secret = tmp_path / "floor-db.password"
    config = tmp_path / "floor.toml"
    config.write_text(
        f'[database]\ndsn = "host=127.0.0.1 port=1 dbname=floor user=floor"\npassword_file = "{secret}"\n'
    )
    out = subprocess.run(
        [*TABLECTL, "floor", "--config", str(config), "status"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 2
    assert f"database.password_file: cannot read {secret}: does not exist" in out.stderr
    assert "put the database password on its first line" in out.stderr and "remove password_file" in out.stderr


def test_readme_keygen_makes_the_key_its_send_line_signs_with(tmp_path: Path) -> None:
    """README's "Supervisor commands": the entry keygen printed named key_id "anna" while the send line signed as
    "floor-anna", so the table rejected the README's own command as an unknown key; then keygen's default role
    (floorperson) may not send the README's verb (mark_out_of_order): rejected as role_not_allowed."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8").replace("\\\n", " ")
    keygen = next(line for line in readme.splitlines() if line.startswith(".venv/bin/tablectl command keygen"))
    send = next(line for line in readme.splitlines() if line.startswith(".venv/bin/tablectl command send"))
    args = shlex.split(keygen.split("#")[0])[1:]
    out = subprocess.run([*TABLECTL, *args], cwd=tmp_path, capture_output=True, text=True, timeout=30, check=False)
    assert out.returncode == 0, out.stderr
    printed = re.search(r'^key_id = "([^"]+)"$', out.stdout, re.MULTILINE)
    role = re.search(r'^role = "([^"]+)"$', out.stdout, re.MULTILINE)
    signed = re.search(r"--key-id ([^ ]+)", send)
    assert printed is not None and signed is not None and role is not None
    assert printed.group(1) == signed.group(1)
    verb = next(word for word in shlex.split(send) if word in VERBS)
    assert role.group(1) in roles_for(verb), f"keygen's entry has role {role.group(1)}, which may not {verb}"


def test_a_second_demo_on_the_same_journal_is_refused(tmp_path: Path) -> None:
    """`python3 dev.py demo` in two terminals: both played the default journal, the second restoring the first's
    round mid-way ("4 rounds so far at this table" after three)."""
    journal = tmp_path / "demo.sqlite"
    command = [*TABLECTL, "demo", "--broker", "mqtt://127.0.0.1:1", "--journal", str(journal), "--seed", "7"]
    first = started(command)
    lines: list[str] = []
    try:
        read_until(first, "betting open", lines)
        second = subprocess.run(
            [*command, "--rounds", "1"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    finally:
        first.send_signal(signal.SIGINT)
        first.send_signal(signal.SIGINT)  # the second Ctrl-C stops at once, mid-round
        first.wait(timeout=20)
    assert second.returncode == 2, second.stderr[-2000:]
    assert f"the journal {journal} is in use by another tablectl (pid {first.pid}" in second.stderr


def test_devices_says_how_to_probe_a_simulated_port() -> None:
    """`tablectl devices --config configs/demo.toml`: each row said "cannot open simulated: [Errno 2] ...", no fix."""
    out = subprocess.run(
        [*TABLECTL, "devices", "--config", str(DEMO)], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 1
    shuffler = next(line for line in out.stdout.splitlines() if line.startswith("shuffler "))
    assert "offline" in shuffler and "tablectl sim-devices" in shuffler and "--ports ports.json" in shuffler


def test_sim_devices_checks_the_ports_file_before_starting(tmp_path: Path) -> None:
    """A --ports-file in a directory that is not there: every simulator started and printed its port first, then
    the command ended with exit 1 and a bare "No such file or directory"."""
    where = tmp_path / "absent" / "ports.json"
    out = subprocess.run(
        [*TABLECTL, "sim-devices", "--config", str(DEMO), "--ports-file", str(where)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 2, out.stderr
    assert f"the directory {where.parent} does not exist: create it" in out.stderr
    assert "shuffler" not in out.stdout  # refused before a simulator started


def test_floor_demo_names_a_console_address_in_use() -> None:
    """A second `python3 dev.py demo --floor` (or one beside a floor service) ended on "[Errno 98] error while
    attempting to bind on address ('127.0.0.1', 8480): address already in use", with no word of --http."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run(
            [*TABLECTL, "demo", "--floor", "--rounds", "1", "--http", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    assert out.returncode == 1, out.stderr[-2000:]
    assert f"the console's address 127.0.0.1:{port} is in use" in out.stderr and "--http HOST:PORT" in out.stderr


def test_settle_says_which_of_its_round_options_is_wrong() -> None:
    """A ROUND.json and --journal together were refused with "give a ROUND.json, or --journal FILE with --round",
    to an operator who had given a ROUND.json."""
    example = ROOT / "docs" / "examples" / "let-it-ride--progressive-envy.settle.json"
    config = ROOT / "configs" / "let-it-ride.toml"
    both = subprocess.run(
        [*TABLECTL, "settle", "--config", str(config), str(example), "--journal", "table.sqlite"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert both.returncode == 2 and f"give {example} or --journal with --round, not both" in both.stderr
    alone = subprocess.run(
        [*TABLECTL, "settle", "--config", str(config), "--journal", "table.sqlite"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert alone.returncode == 2 and "--journal table.sqlite needs --round ROUND_ID" in alone.stderr
