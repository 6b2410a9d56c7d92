"""`tablectl` loads its verb with the cyclic garbage collector off, then freezes what loading made and turns the
collector on again before the verb runs (issue 19: start to READY). Run in-process, as the script runs it
(main() with no argv reads sys.argv)."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

from controller.cli import main as cli
from controller.cli import preflight
from controller.config.table import TableConfig

ROOT = Path(__file__).resolve().parents[2]


def test_the_collector_runs_again_once_the_verb_is_loaded(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[bool] = []
    real = cli.load_verb

    def load_verb(name: str) -> object:
        seen.append(gc.isenabled())  # while `tablectl` loads the verb's module
        return real(name)

    monkeypatch.setattr(cli, "load_verb", load_verb)
    monkeypatch.setattr(sys, "argv", ["tablectl", "schema", "--list"])
    assert gc.isenabled()
    try:
        assert cli.main() == 0
        assert seen and not any(seen)  # off while loading
        assert gc.isenabled()  # and on again
        assert gc.get_freeze_count() > 0  # what loading made is out of the collector's generations
    finally:
        gc.enable()
        gc.unfreeze()
    assert capsys.readouterr().out  # the verb ran: it listed the schemas


def test_a_caller_passing_argv_keeps_its_collector_as_it_was() -> None:
    before = gc.get_freeze_count()
    assert cli.main(["schema", "--list"]) == 0
    assert gc.isenabled()
    assert gc.get_freeze_count() == before


# `tablectl run` keeps the collector off further, through its config check, its drivers and the daemon's modules loading
# (controller/cli/run.py: 38 collections over what they make). A run that stops before the daemon loads leaves the
# collector on: a process whose collector stayed off would grow with every cycle it makes.
LET_IT_RIDE = str(ROOT / "configs" / "let-it-ride.toml")


def test_run_checks_its_config_with_the_collector_off_and_turns_it_on_when_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[bool] = []
    real = preflight.load_for_run

    def load_for_run(path: Path, journal: Path | None = None) -> TableConfig:
        seen.append(gc.isenabled())
        return real(path, journal)

    monkeypatch.setattr(preflight, "load_for_run", load_for_run)
    assert gc.isenabled()
    assert cli.main(["run", "--config", LET_IT_RIDE, "--journal", "/dev/null"]) == 2
    assert "/dev/null is a character device, not a file" in capsys.readouterr().err  # refused where we meant
    assert seen == [False]
    assert gc.isenabled()


def test_a_run_whose_ports_file_is_unreadable_turns_the_collector_on_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused after the config check, before any driver is built or the journal opened."""
    ports = tmp_path / "ports.json"
    ports.write_text("{not json")
    journal = tmp_path / "journal.sqlite"
    assert cli.main(["run", "--config", LET_IT_RIDE, "--journal", str(journal), "--ports", str(ports)]) == 2
    assert "ports" in capsys.readouterr().err
    assert gc.isenabled()
    assert not journal.exists()
