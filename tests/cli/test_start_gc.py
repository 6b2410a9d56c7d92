"""`tablectl` loads its verb with the cyclic garbage collector off, then freezes what loading made and turns the
collector on again before the verb runs (issue 19: start to READY). Run in-process, as the script runs it
(main() with no argv reads sys.argv)."""

from __future__ import annotations

import gc
import sys

import pytest

from controller.cli import main as cli


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
