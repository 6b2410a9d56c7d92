"""`tablectl sim-devices`, `tablectl devices` and `tablectl run --ports`, as an operator runs them.

Three real processes: the simulators on real ptys, the probe, and the controller pointed at the ptys.
Synchronisation is on what the processes print (bounded by timeouts), never on sleeps.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.sim_devices import DEMO, ROOT, read_until, running_simulators, started
from tests.tablectl_runs import TABLECTL

pytestmark = pytest.mark.e2e


@pytest.fixture
def simulators(tmp_path: Path) -> Iterator[Path]:
    with running_simulators(tmp_path / "ports.json") as ports:
        yield ports


def test_devices_probes_the_simulators(simulators: Path) -> None:
    out = subprocess.run(
        [*TABLECTL, "devices", "--config", str(DEMO), "--ports", str(simulators), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert {d["driver"] for d in report["installed_drivers"]} >= {
        "reference-shuffler",
        "reference-shoe",
        "reference-wager-station",
        "reference-dealer-panel",
    }
    devices = {d["device"]: d for d in report["devices"]}
    # shuffler, shoe, dealer panel, six wager stations and the progressive sign (configs/demo.toml)
    assert len(devices) == 10 and all(d["state"] == "online" for d in devices.values())
    assert devices["shoe"]["model"] == "SIM-SHOE" and devices["shoe"]["firmware_hash"]


def test_devices_reports_absent_devices_and_exits_1() -> None:
    out = subprocess.run(
        [*TABLECTL, "devices", "--config", str(ROOT / "configs/mississippi-stud.toml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 1
    assert "shuffler" in out.stdout and "offline" in out.stdout and "/dev/tablectl/shuffler" in out.stdout


def test_run_drives_the_simulators_and_stops_cleanly(simulators: Path, tmp_path: Path) -> None:
    journal = tmp_path / "run.sqlite"
    proc = started(
        [
            *TABLECTL,
            "run",
            "--config",
            str(DEMO),
            "--ports",
            str(simulators),
            "--live-log",
            "--broker",
            "mqtt://127.0.0.1:1",
            "--journal",
            str(journal),
        ]
    )
    lines: list[str] = []
    try:
        read_until(proc, "betting open", lines)
    finally:
        proc.send_signal(signal.SIGINT)  # betting is open and nobody has wagered: the table closes at once
        assert proc.wait(timeout=20) == 0
    types = [t for (t,) in sqlite3.connect(journal).execute("select type from events order by seq")]
    assert types.count("device.online") == 10
    assert [t for t in types if not t.startswith("device.")] == [
        "software.checked",  # 605a.4(c): every start's first event (docs/software.md)
        "meter.seeded",
        "meter.seeded",
        "meter.seeded",  # 655a.12(c)(3) paytable C: mega, major, minor
        "table.opened",
        "shuffle.started",
        "shuffle.completed",
        "betting.opened",
        "table.closed",
    ]


def test_bad_ports_file_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "ports.json"
    bad.write_text("[1, 2]")
    out = subprocess.run(
        [*TABLECTL, "devices", "--config", str(DEMO), "--ports", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 2 and "must be a JSON object of device id to port path" in out.stderr


BUS_CONFIG = """
table_id = "bus-table"

[game]
chapter = "655a"
seats = 6

[devices.shuffler]
driver = "reference-shuffler"
port = "simulated"

[devices.shoe]
driver = "reference-shoe"
port = "simulated"

[devices.dealer_panel]
driver = "reference-dealer-panel"
port = "simulated"

[devices.wager_bus]
driver = "reference-wager-bus"
port = "simulated"
stations = [{seat = 1, address = 11}, {seat = 2, address = 12}, {seat = 3, address = 13},
            {seat = 4, address = 14}, {seat = 5, address = 15}, {seat = 6, address = 16}]

[devices.progressive_sign]
driver = "reference-progressive-sign"
port = "simulated"

[[devices.wager_terminals]]
driver = "reference-wager-terminal"
port = "simulated"
seat = 1

[[devices.wager_terminals]]
driver = "reference-wager-terminal"
port = "simulated"
seat = 2
"""


def test_simulators_follow_the_config_bus_sign_and_terminals(tmp_path: Path) -> None:
    """A table whose stations share one multi-drop line, with a progressive sign and two terminals."""
    config = tmp_path / "bus.toml"
    config.write_text(BUS_CONFIG)
    with running_simulators(tmp_path / "ports.json", config=config) as ports:
        assert {"wager_bus", "progressive_sign", "wager_terminal_1"} <= set(json.loads(ports.read_text()))
        out = subprocess.run(
            [*TABLECTL, "devices", "--config", str(config), "--ports", str(ports), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        report = {d["device"]: d for d in json.loads(out.stdout)["devices"]}
        assert all(d["state"] == "online" for d in report.values()), report
        assert {f"wager_station_{n}" for n in range(1, 7)} | {"progressive_sign", "wager_terminal_2"} <= set(report)
