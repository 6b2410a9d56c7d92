"""docs/floor.md, "Retention and export", tells an operator how to release the gaming days retention keeps because
their exports were recorded by the old floor-held key (no signer in `exports`): re-export, a trusted person signs,
record. The steps must be there, in order, and every command they give must be one `tablectl` takes as written."""

from __future__ import annotations

import re
from pathlib import Path

from controller.cli.main import build_parser, chosen_verb

DOC = Path(__file__).resolve().parents[2] / "docs" / "floor.md"
# The placeholders of the steps, as an operator fills them in.
FILLED = {"<export.directory>/": "/srv/floor/exports/", "NAME-D": "floor-2026-11-21", " D`": " 2026-11-21`"}


def _old_key_steps() -> str:
    section = DOC.read_text(encoding="utf-8").split("## Retention and export", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"^- Exports recorded by the old floor-held key.*?(?=^\S|^- |\Z)", section, re.M | re.S)
    assert found, "docs/floor.md, Retention and export: say how to release the days the old floor key's exports keep"
    return found.group(0)


def test_the_release_of_old_key_days_is_documented_in_order() -> None:
    steps = _old_key_steps()
    order = [
        steps.find(f"`tablectl report {what}") for what in ("--config F export --day D", "sign ", "--config F record")
    ]
    assert -1 not in order and order == sorted(order), steps
    assert "trusted_keys" in steps and "retention" in steps


def test_every_command_of_the_steps_parses() -> None:
    commands = re.findall(r"`(tablectl [^`]+)`", _old_key_steps())
    assert len(commands) >= 4, commands
    for command in commands:
        for placeholder, value in FILLED.items():
            command = (command + "`").replace(placeholder, value)[:-1]
        argv = command.split()[1:]
        build_parser(chosen_verb(argv)).parse_args(argv)  # SystemExit (a failed test) if tablectl refuses it
