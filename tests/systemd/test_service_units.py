"""The floor service's and the link controller's units (tablectl-floor, tablectl-link), each checked with
tests/systemd's helpers as the table's unit is: `systemd-analyze verify` silent (it exits 0 on unknown keys, so
stderr must be empty too) and `systemd-analyze security --offline=true` at most 2.0; the sysusers file accepted by
systemd-sysusers."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.optimised import UNIT
from tests.systemd.unit_checks import INSTALLED_AT, MAX_EXPOSURE, tool, verify

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ["tablectl-floor", "tablectl-link"]


def _unit(name: str) -> Path:
    return ROOT / "systemd" / f"{name}.service"


def _unit_here(tmp_path: Path, name: str, text: str | None = None) -> Path:
    installed = shutil.which("tablectl", path=str(Path(sys.executable).parent)) or shutil.which("tablectl")
    assert installed, "the tablectl console script is not installed in this environment (pip install -e .)"
    unit = tmp_path / f"{name}.service"
    unit.write_text((text or _unit(name).read_text()).replace(INSTALLED_AT, installed))
    return unit


@pytest.mark.parametrize("name", SERVICES)
def test_the_unit_verifies_without_a_word(tmp_path: Path, name: str) -> None:
    proc = verify(_unit_here(tmp_path, name))
    assert (proc.returncode, proc.stderr, proc.stdout) == (0, "", ""), proc.stderr


@pytest.mark.parametrize("name", SERVICES)
def test_verify_would_catch_a_misspelt_key(tmp_path: Path, name: str) -> None:
    proc = verify(_unit_here(tmp_path, name, _unit(name).read_text().replace("WatchdogSec=60", "WatchdogSecs=60")))
    assert proc.returncode == 0 and "Unknown key 'WatchdogSecs'" in proc.stderr


@pytest.mark.parametrize("name", SERVICES)
def test_the_unit_is_type_notify_and_its_exposure_at_most_2(tmp_path: Path, name: str) -> None:
    text = _unit(name).read_text()
    assert "Type=notify" in text and "WatchdogSec=" in text and "check-config --offline" in text
    proc = subprocess.run(
        [
            tool("systemd-analyze"),
            "security",
            "--offline=true",
            f"--threshold={int(MAX_EXPOSURE * 10)}",
            str(_unit_here(tmp_path, name)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", proc.stdout)
    assert found, proc.stdout + proc.stderr
    assert float(found.group(1)) <= MAX_EXPOSURE, proc.stdout


@pytest.mark.parametrize("name", SERVICES)
def test_the_sysusers_file_is_accepted(tmp_path: Path, name: str) -> None:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    proc = subprocess.run(
        [tool("systemd-sysusers"), f"--root={root}", str(ROOT / "systemd" / f"{name}.sysusers")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{name}:" in (root / "etc" / "passwd").read_text()


@pytest.mark.parametrize("name", ["tablectl", *SERVICES])
def test_each_unit_runs_optimised_as_the_optimised_tests_run_it(name: str) -> None:
    """The table, the floor and the link run `python -OO -X no_debug_ranges` (systemd/README.md, "Optimised
    bytecode"), in exactly the environment tests/e2e/optimised.py gives the processes of the tests that play, archive
    and link under it (tests/e2e/test_optimised_e2e.py, tests/floor/test_optimised_floor.py,
    tests/link/test_optimised_link.py)."""
    settings = [line.removeprefix("Environment=") for line in _unit(name).read_text().splitlines()]
    [environment] = [s for s in settings if s.startswith("PYTHON")]
    assert dict(pair.split("=", 1) for pair in environment.split()) == UNIT
