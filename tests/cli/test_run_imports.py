"""`tablectl run` imports only what the configured table needs (issue 19: start to READY in 0.3 s, 45 MB resident).

Each probe is a fresh interpreter (this test process has imported everything) that goes through the daemon's own
entry as far as it goes without a device or a broker: the `tablectl` package, the `run` verb's module, the config
check `run` makes first (controller.cli.preflight.load_for_run) and building the configured drivers, then reads
sys.modules. What must not be there is what only another verb or an unconfigured feature needs: the par sheets
and numpy, the floor and link services with PostgreSQL, aiohttp and matplotlib, the simulators and simulated
people, cryptography (no key configured), `rich` (the test extras' terminal renderer) and difflib (the "did you
mean" of a config with a mistake).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

NEVER = (
    "numpy",
    "controller.par",
    "aiohttp",
    "psycopg",
    "psycopg_pool",
    "matplotlib",
    "floor",
    "link",
    "drivers.sim",
    "controller.people",
    "cryptography",
    "rich",
    "hypothesis",
    "difflib",  # "did you mean" for a config with a mistake only
)

PROBE = """
import json, sys
from pathlib import Path
import controller.cli.main  # the `tablectl` entry point's module, as `python -m controller.cli` and the script load it
import controller.cli.run
from controller.cli.preflight import load_for_run
from controller.shell.runner import build_devices
config = load_for_run(Path(sys.argv[1]), Path(sys.argv[2]))
devices = build_devices(config)
print(json.dumps({"devices": sorted(devices), "modules": sorted(sys.modules)}))
"""


def loaded_by_run(config: str, journal: Path) -> tuple[list[str], set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / "configs" / config), str(journal)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    return out["devices"], set(out["modules"])


def offenders(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(f"{n}.") for n in NEVER))


@pytest.mark.parametrize(
    "config",
    ["let-it-ride.toml", "mississippi-stud-progressive.toml", "cajun-stud.toml", "three-card-prime.toml", "demo.toml"],
)
def test_run_imports_nothing_another_verb_or_an_unconfigured_feature_needs(config: str, tmp_path: Path) -> None:
    devices, modules = loaded_by_run(config, tmp_path / "journal.sqlite")
    assert "shuffler" in devices and "dealer_panel" in devices  # the probe got as far as the drivers
    assert "controller.shell.runner" in modules and "drivers.reference.shuffler" in modules
    assert offenders(modules) == []
    # Nor the parts of features these configs do not turn on: [journal] keep_rounds, [progressive.link].
    assert not modules & {"controller.shell.archiver", "controller.store.archive", "controller.shell.link_client"}


def test_the_probe_sees_a_module_that_is_there(tmp_path: Path) -> None:
    """The check itself can fail: a probe that imports one of the forbidden modules is reported."""
    _, modules = loaded_by_run("let-it-ride.toml", tmp_path / "journal.sqlite")
    assert offenders(modules | {"controller.par.analyse", "floor"}) == ["controller.par.analyse", "floor"]
