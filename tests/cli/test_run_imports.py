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
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

# Modules of the run's own packages that a table started without --live-log never uses: the console's readable log and
# the journal's verification walk (issue 19: each loaded where it is used).
NOT_ON_RUNS_PATH = {"controller.shell.console", "controller.store.verify", "controller.store.walk"}

# Arguments: config, journal, config, journal, ... Besides the modules, it reports every dataclass that a module
# of controller/ or drivers/ defines (at its top level or inside a class) with its __doc__.
PROBE = """
import json, sys
from pathlib import Path
import controller.cli.main  # the `tablectl` entry point's module, as `python -m controller.cli` and the script load it
import controller.cli.run
from controller.cli.preflight import load_for_run
from controller.shell.runner import build_devices
devices = {}
for config, journal in zip(sys.argv[1::2], sys.argv[2::2]):
    devices[config] = sorted(build_devices(load_for_run(Path(config), Path(journal))))
ours = ("controller", "drivers")
docs, seen = {}, set()
todo = [m for n, m in list(sys.modules.items()) if m is not None and n.partition(".")[0] in ours]
while todo:
    for v in list(vars(todo.pop()).values()):
        if isinstance(v, type) and v not in seen and v.__module__.partition(".")[0] in ours:
            seen.add(v)
            todo.append(v)
            if "__dataclass_fields__" in v.__dict__:
                docs[f"{v.__module__}.{v.__qualname__}"] = v.__doc__
print(json.dumps({"devices": devices, "modules": sorted(sys.modules), "dataclasses": docs}))
"""


def probe(configs: Sequence[Path], journals: Path) -> dict[str, Any]:
    """The probe's findings after it went through `run`'s entry for each of `configs`, in one interpreter."""
    args = [str(a) for c in configs for a in (c, journals / f"{c.stem}.sqlite")]
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return out


def loaded_by_run(config: str, journal: Path) -> tuple[list[str], set[str]]:
    path = ROOT / "configs" / config
    out = probe([path], journal.parent)
    return out["devices"][str(path)], set(out["modules"])


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
    # Nor what only supervisor commands need (the gate, the verbs' models, replay, resend): the "commands" task loads
    # the listener once the table is ready, after READY=1 (controller/shell/supervised.py).
    assert [m for m in modules if m == "controller.supervisor" or m.startswith("controller.supervisor.")] == []
    # Nor what only other paths use: the readable live log (`--live-log`, the demo) and the hash chain's walk
    # (`tablectl journal verify`); each is loaded where it is used (issue 19).
    assert not modules & NOT_ON_RUNS_PATH


# What `tablectl run` loads only once the devices are started (controller/cli/run.py loads controller.shell.runner in a
# thread while the lines carry the identifies): the round engine, the journal and SQLite, the service, the publisher
# and its MQTT client. Loaded by the config check instead, each would delay every device's first identify, and on one
# multi-drop bus line READY=1 with it (issue 19; docs/performance-history.md, Part 11).
AFTER_THE_DEVICES = (
    "controller.engine.round",
    "controller.engine.context",
    "controller.engine.inputs",
    "controller.engine.state",
    "controller.store.schema",
    "controller.store.outbox",
    "controller.store.journal",
    "controller.store.snapshot",
    "sqlite3",
    "controller.shell.service",
    "controller.shell.runner",
    "controller.mqtt.publisher",
    "aiomqtt",
    "paho",
)

# `run`'s own path up to its devices' start: the entry point, the verb's module, the config check, the drivers built
# (controller.shell.configured, as controller/cli/run.py does: not through controller.shell.runner).
BEFORE_DEVICES = """
import json, sys
from pathlib import Path
import controller.cli.main
import controller.cli.run
from controller.cli.preflight import load_for_run
from controller.shell.configured import build_devices, playable
config = load_for_run(Path(sys.argv[1]), Path(sys.argv[2]))
assert playable(config) is None
devices = sorted(build_devices(config))
print(json.dumps({"devices": devices, "modules": sorted(sys.modules)}))
"""


def loaded_before_the_devices(config: str, journal: Path) -> tuple[list[str], set[str]]:
    args = [str(ROOT / "configs" / config), str(journal)]
    done = subprocess.run(
        [sys.executable, "-c", BEFORE_DEVICES, *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return out["devices"], set(out["modules"])


def early(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(f"{n}.") for n in AFTER_THE_DEVICES))


@pytest.mark.parametrize("config", ["let-it-ride.toml", "mississippi-stud-progressive.toml", "cajun-stud.toml"])
def test_run_starts_its_devices_before_it_loads_the_engine_the_journal_and_mqtt(config: str, tmp_path: Path) -> None:
    devices, modules = loaded_before_the_devices(config, tmp_path / "journal.sqlite")
    assert "shuffler" in devices and "dealer_panel" in devices  # the probe got as far as the drivers
    # The config check did run: the chapter's rules and the birth's size check (controller.mqtt.birth) are loaded.
    assert "controller.games.registry" in modules and "controller.mqtt.birth" in modules
    assert early(modules) == []


def test_the_early_check_names_a_module_loaded_too_soon() -> None:
    """The check itself can fail: the engine's round, SQLite or aiomqtt among the modules are named."""
    assert early({"controller.games.registry", "controller.engine.round", "sqlite3", "aiomqtt.client", "paho_x"}) == [
        "aiomqtt.client",
        "controller.engine.round",
        "sqlite3",
    ]


def test_the_probe_sees_a_module_that_is_there(tmp_path: Path) -> None:
    """The check itself can fail: a probe that imports one of the forbidden modules is reported."""
    _, modules = loaded_by_run("let-it-ride.toml", tmp_path / "journal.sqlite")
    assert offenders(modules | {"controller.par.analyse", "floor"}) == ["controller.par.analyse", "floor"]


# Every table's config: configs/ (not the floor's and the link's) and the one bench/restart.py starts.
TABLE_CONFIGS = [
    *sorted(p for p in (ROOT / "configs").glob("*.toml") if "table_id" in tomllib.loads(p.read_text())),
    ROOT / "bench" / "seven-seats.toml",
]


def undocumented(docs: Mapping[str, str | None]) -> list[str]:
    """The dataclasses (by qualified name) whose __doc__ is the one `dataclasses` made up: `Name(field: type, ...)`."""
    return sorted(n for n, doc in docs.items() if doc is None or doc.startswith(f"{n.rpartition('.')[2]}("))


def test_every_dataclass_a_table_start_imports_has_a_docstring(tmp_path: Path) -> None:
    """Python 3.11's `dataclasses` gives a class without a docstring one built from `inspect.signature(cls)` when the
    class is created, paid at every start: 35 such classes, about 40 us each on the 2-core reference machine, were
    1.3-1.6 ms of `tablectl run`'s start to READY=1 (issue 19: 0.3 s, bench/restart.py). A one-line docstring that
    says what the class is costs nothing; this names any dataclass of controller/ or drivers/ a table's start imports
    without one."""
    assert len(TABLE_CONFIGS) >= 10  # the glob found the configs
    docs = probe(TABLE_CONFIGS, tmp_path)["dataclasses"]
    assert "controller.engine.state.TableState" in docs and "drivers.interfaces.WagerDetected" in docs
    missing = undocumented(docs)
    assert not missing, f"give each a one-line docstring saying what it is (import-time cost): {missing}"


def test_the_docstring_check_names_a_dataclass_without_one() -> None:
    """The check itself can fail: a dataclass without a docstring is named, one with a docstring is not."""

    @dataclass(frozen=True, slots=True)
    class Bare:
        seat: int

    @dataclass
    class Said:
        """A seat, said."""

        seat: int

    found = {"drivers.x.Bare": Bare.__doc__, "controller.y.Said": Said.__doc__, "controller.y.Outer.Bare": Bare.__doc__}
    assert undocumented(found) == ["controller.y.Outer.Bare", "drivers.x.Bare"]
