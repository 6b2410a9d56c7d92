"""`tablectl` hands each verb to its own module and imports no other: the verb table, the two-pass parse and
what a verb's run costs in imports."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli.main import VERBS, chosen_verb, main

ROOT = Path(__file__).resolve().parents[2]


def test_every_verb_is_a_module_with_add_parser_and_main() -> None:
    for verb in VERBS:
        module = importlib.import_module(verb.path)
        assert callable(module.add_parser), verb.name
        assert callable(module.main), verb.name


@pytest.mark.parametrize("verb", [v.name for v in VERBS])
def test_each_verb_has_its_own_full_help(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([verb, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: tablectl {verb} [-h]")


def test_a_top_level_option_value_that_names_a_verb_is_not_taken_for_the_verb() -> None:
    # systemd/tablectl.service runs `tablectl --log-format journal run --config ...`: "journal" is also a verb.
    assert chosen_verb(["--log-format", "journal", "run", "--config", "x.toml"]) == "run"
    assert chosen_verb(["--log-level", "debug", "journal", "verify", "--journal", "j.sqlite"]) == "journal"


def test_the_run_verb_under_systemd_options_reads_its_own_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "table.toml"
    assert main(["--log-format", "journal", "run", "--config", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tablectl: cannot read config {missing}")


def test_a_verb_run_imports_no_other_verb() -> None:
    probe = (
        "import sys\n"
        "from controller.cli.main import main\n"
        "code = main(['schema', '--list'])\n"
        "print(__import__('json').dumps(sorted(m for m in sys.modules if m.startswith('controller.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60, check=True
    )
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
    others = {v.path for v in VERBS} - {"controller.cli.schema"}
    assert not loaded & others
    # Nor what only other verbs need: the daemon, the simulated people, the supervisor gate.
    assert not {
        m for m in loaded if m.startswith(("controller.shell.runner", "controller.people", "controller.supervisor"))
    }
