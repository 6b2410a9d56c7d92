"""The table as systemd/tablectl.service runs it: `PYTHONOPTIMIZE=2` (python -OO: no `assert`, no docstrings) and
`PYTHONNODEBUGRANGES=1` (no column tables), issue 19's memory. The daemon relies on neither: no package module
asserts (tests/test_no_asserts.py) and nothing it runs reads a docstring, so the demo plays its rounds end to end
(its devices simulated on real ptys, its journal a real SQLite file, its events through a real mosquitto), `run`
opens a table on `sim-devices`' ptys, and the verbs an operator runs beside it print what they print unoptimised.
The one verb that needs docstrings, `tablectl schema` (its descriptions are the models'), says so instead."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker import Mosquitto
from tests.e2e.conftest import table_config
from tests.e2e.optimised import env
from tests.e2e.sim_devices import DEMO, running_simulators
from tests.tablectl_runs import TABLECTL

pytestmark = pytest.mark.e2e


def test_the_units_settings_strip_asserts_docstrings_and_column_tables(tmp_path: Path) -> None:
    """What the other tests here rest on: the interpreter they start is the optimised one."""
    probe = (
        "import sys\n"
        "def f():\n    'doc'\n    assert False\n"
        "f()\n"  # the assert is gone
        "code = compile('x = 1', 's', 'exec')\n"
        "print(sys.flags.optimize, f.__doc__, {p[2:] for p in code.co_positions()})\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env(tmp_path), check=True)
    assert out.stdout.split(" ", 2) == ["2", "None", "{(None, None)}\n"]
    plain = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env(tmp_path, False))
    assert plain.returncode == 1 and "AssertionError" in plain.stderr  # and the probe can fail


def test_the_demo_plays_rounds_optimised(mosquitto: Mosquitto, tmp_path: Path, table_id: str) -> None:
    # A table of its own on the shared broker: another test's retained anchor for demo-ms-1 would be a rollback here.
    config = table_config(tmp_path, table_id, f"opt-{table_id}")
    journal = tmp_path / "demo.sqlite"
    args = ["demo", "--config", str(config), "--rounds", "2", "--seed", "7", "--pace", "0", "--journal", str(journal)]
    args += ["--broker", mosquitto.url]
    proc = subprocess.run(
        [*TABLECTL, *args], capture_output=True, text=True, timeout=120, env=env(tmp_path), stdin=subprocess.DEVNULL
    )
    assert proc.returncode == 0, proc.stderr
    assert "round 2 complete" in proc.stdout and "2 round(s) played" in proc.stderr
    db = sqlite3.connect(journal)
    types = [t for (t,) in db.execute("select type from events order by seq")]
    assert types.count("round.completed") == 2 and types[-1] == "table.closed"
    assert "critical_state.invalid" not in types  # no tilt:invariant (nor any other) on the way
    assert {"wager.accepted", "lockout.confirmed", "hand.settled", "meter.contributed"} <= set(types)
    # Every event reached the broker, and the chain of hashes holds (checked optimised too).
    assert db.execute("select count(*) from events where published_at is null").fetchone() == (0,)
    verify = subprocess.run(
        [*TABLECTL, "journal", "verify", "--journal", str(journal)],
        capture_output=True,
        text=True,
        env=env(tmp_path),
        timeout=60,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.fixture
def simulators(tmp_path: Path) -> Iterator[Path]:
    with running_simulators(tmp_path / "ports.json", env(tmp_path)) as ports:
        yield ports


def test_run_opens_the_table_optimised_and_stops_cleanly(simulators: Path, tmp_path: Path) -> None:
    journal = tmp_path / "run.sqlite"
    args = ["run", "--config", str(DEMO), "--ports", str(simulators), "--live-log", "--journal", str(journal)]
    proc = subprocess.Popen(
        [*TABLECTL, *args, "--broker", "mqtt://127.0.0.1:1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env(tmp_path),
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if "betting open" in line:
                break
    finally:
        proc.send_signal(signal.SIGINT)  # nobody has wagered: the table closes at once
        assert proc.wait(timeout=20) == 0
    types = [t for (t,) in sqlite3.connect(journal).execute("select type from events order by seq")]
    assert types.count("device.online") == 10
    assert types[0] == "software.checked" and "betting.opened" in types and types[-1] == "table.closed"


@pytest.mark.parametrize(
    "args",
    [["--help"], ["run", "--help"], ["check-config", "--help"], ["check-config", str(DEMO)], ["schema", "--list"]],
)
def test_the_operators_verbs_say_the_same_optimised(args: list[str], tmp_path: Path) -> None:
    """argparse's help, pydantic's messages and the config check's report are strings of their own, not docstrings."""

    def said(optimised: bool) -> tuple[int, str, str]:
        out = subprocess.run([*TABLECTL, *args], capture_output=True, text=True, env=env(tmp_path, optimised))
        return out.returncode, out.stdout, out.stderr

    plain = said(False)
    assert plain[0] == 0 and plain[1]
    assert said(True) == plain


def test_a_bad_config_is_named_the_same_optimised(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(DEMO.read_text().replace("seats = 6", "seats = 9", 1))
    outs = [
        subprocess.run([*TABLECTL, "check-config", str(bad)], capture_output=True, text=True, env=env(tmp_path, o))
        for o in (False, True)
    ]
    assert outs[0].returncode == 1 and "game.seats: Input should be less than or equal to 6" in outs[0].stdout
    assert (outs[1].returncode, outs[1].stdout, outs[1].stderr) == (outs[0].returncode, outs[0].stdout, outs[0].stderr)


def test_schema_says_it_needs_the_docstrings(tmp_path: Path) -> None:
    out = subprocess.run([*TABLECTL, "schema", "event"], capture_output=True, text=True, env=env(tmp_path))
    assert out.returncode == 2 and out.stdout == ""
    assert "strips the models' docstrings" in out.stderr and "without -OO and PYTHONOPTIMIZE" in out.stderr
