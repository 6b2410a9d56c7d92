"""`tablectl check-config` warns when the interpreter runs optimised, as systemd/tablectl.service runs the table,
and a module it loaded has no fresh bytecode for that level: the hardened service cannot write it, so each start would
compile the module from source (controller/cli/bytecode.py). Real files: a module imported from a temporary
directory without bytecode, then compiled, then edited."""

from __future__ import annotations

import importlib.util
import os
import py_compile
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from controller.cli.bytecode import missing_bytecode, uncompiled

ROOT = Path(__file__).resolve().parents[2]


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # imported with no bytecode written
    source = tmp_path / "tablectl_probe_mod.py"
    source.write_text("X = 1\n")
    return load(source)


def test_a_module_without_bytecode_is_named_with_the_fix(module: ModuleType) -> None:
    assert module.__spec__ is not None and module.__spec__.cached is not None
    assert not Path(module.__spec__.cached).exists()
    assert uncompiled([module, sys, os]) == ["tablectl_probe_mod"]  # built-in sys: no file to compile
    found = missing_bytecode(level=2, modules=[module])
    assert found is not None
    problem, fix = found
    assert "PYTHONOPTIMIZE=2, as systemd/tablectl.service runs the table" in problem and "1 module(s)" in problem
    assert "tablectl_probe_mod" in problem
    assert "-OO -m compileall" in fix and "systemd/README.md" in fix


def test_compiled_bytecode_passes_until_the_source_changes(module: ModuleType) -> None:
    assert module.__spec__ is not None and module.__spec__.origin is not None and module.__spec__.cached is not None
    source = Path(module.__spec__.origin)
    py_compile.compile(str(source), cfile=module.__spec__.cached, doraise=True)
    assert uncompiled([module]) == [] and missing_bytecode(level=2, modules=[module]) is None
    source.write_text("X = 12\n")  # a new size: the pyc's stamp no longer matches
    assert uncompiled([module]) == ["tablectl_probe_mod"]


def test_an_unoptimised_interpreter_is_not_warned(module: ModuleType) -> None:
    assert missing_bytecode(level=0, modules=[module]) is None  # pip compiled the plain level


def test_check_config_run_optimised_without_the_bytecode_warns(tmp_path: Path) -> None:
    """End to end: the unit's ExecStartPre= on a tree with no -OO bytecode (PYTHONPYCACHEPREFIX points the
    interpreter at an empty cache, and PYTHONDONTWRITEBYTECODE keeps it empty, as the hardened unit does)."""
    env = {
        **os.environ,
        "PYTHONOPTIMIZE": "2",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPYCACHEPREFIX": str(tmp_path / "empty-cache"),
    }
    out = subprocess.run(
        [sys.executable, "-m", "controller.cli", "check-config", str(ROOT / "configs" / "demo.toml")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr  # a warning: the table still runs, only slower to start
    assert "warning: bytecode: python runs optimised (PYTHONOPTIMIZE=2" in out.stdout
    assert "controller.cli.main" in out.stdout or "more): the hardened service" in out.stdout


@pytest.mark.parametrize(
    ("verb", "unit"), [("floor", "systemd/tablectl-floor.service"), ("link", "systemd/tablectl-link.service")]
)
def test_the_floor_and_link_check_config_warn_optimised_without_the_bytecode(
    verb: str, unit: str, tmp_path: Path
) -> None:
    """The floor's and the link's units run optimised too, and their ExecStartPre= is `check-config --offline`: it
    warns as the table's does, naming its own unit, and still passes (exit 0)."""
    env = {
        **os.environ,
        "PYTHONOPTIMIZE": "2",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPYCACHEPREFIX": str(tmp_path / "empty-cache"),
    }
    config = ROOT / "configs" / f"{verb}.toml"
    out = subprocess.run(
        [sys.executable, "-m", "controller.cli", verb, "--config", str(config), "check-config", "--offline"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"{config}: the config is valid")
    [warning] = [line for line in lines if "bytecode" in line]
    assert warning.startswith(f"{config}: warning: bytecode: python runs optimised (PYTHONOPTIMIZE=2, as {unit} ")
    assert "-OO -m compileall" in warning and "systemd/README.md" in warning
    # The service's own modules were among those checked: they are what each start would compile.
    assert f"{verb}.cli.{verb}" in warning or "more): the hardened service" in warning
