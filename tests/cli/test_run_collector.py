"""`tablectl run` keeps the cyclic garbage collector off while it checks the config, builds the drivers and loads the
daemon's modules (controller/cli/run.py; issue 19: start to READY=1). A run that stops before the daemon loads must
leave the collector as it found it: a process whose collector stayed off would grow with every cycle it makes."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@pytest.mark.usefixtures("collector_on")
def test_a_run_refused_by_its_config_check_leaves_the_collector_on(capsys: pytest.CaptureFixture[str]) -> None:
    config = ROOT / "configs" / "let-it-ride.toml"
    assert main(["run", "--config", str(config), "--journal", "/dev/null"]) == 2
    assert "/dev/null is a character device, not a file" in capsys.readouterr().err  # refused where we meant
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_a_run_whose_drivers_cannot_be_built_leaves_the_collector_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused after the config check, when its --ports file cannot be read."""
    config = ROOT / "configs" / "let-it-ride.toml"
    ports = tmp_path / "ports.json"
    ports.write_text("{not json")
    journal = tmp_path / "journal.sqlite"
    assert main(["run", "--config", str(config), "--journal", str(journal), "--ports", str(ports)]) == 2
    assert "ports" in capsys.readouterr().err
    assert gc.isenabled()
    assert not journal.exists()  # stopped before the journal
