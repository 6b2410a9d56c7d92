"""What a test of the command gate hands it: the table and the instant it checks at, a gate over the seeded keys of
tests/commands/conftest.py, a signed envelope as the payload bytes the broker delivers, and a table config listing
supervisors. Shared by tests/commands/test_gate.py and test_resend_gate.py, so that neither imports the other."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.config.table import CommandSettings, Supervisor, TableConfig, parse_config
from controller.supervisor.gate import CommandGate
from controller.supervisor.replay import ReplayStore
from tests.commands.conftest import Key

NOW = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
TABLE = "t1"


def make_gate(path: Path, keys: dict[str, Key]) -> CommandGate:
    sups = [Supervisor.model_validate(keys[r].entry()) for r in ("floorperson", "supervisor", "technician")]
    return CommandGate(TABLE, sups, CommandSettings(), ReplayStore(path, TABLE))


def raw(envelope: dict[str, Any]) -> bytes:
    return json.dumps(envelope).encode()


def config_with(supervisors: list[dict[str, Any]], **commands: object) -> TableConfig:
    return parse_config(
        {
            "table_id": "t1",
            "game": {"chapter": "655a"},
            "supervisors": supervisors,
            **({"commands": commands} if commands else {}),
        },
        "t1.toml",
    )
