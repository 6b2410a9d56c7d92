"""Who asked a close that waits for the round is kept in the journal's stored state (a real SQLite file) and read back
by the service's start: a closing state stored by older software (no `closing_by`) starts with none, and the start
says so once in the log."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from controller.config.table import demo_config
from controller.engine.inputs import CloseTable
from controller.engine.state import TableState
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.spec import MississippiStudSpec
from controller.shell.service import TableService
from controller.store import snapshot
from controller.store.journal import Journal
from tests.engine.conftest import open_table

T0 = datetime(2026, 11, 28, 6, 0, tzinfo=UTC)
BY = "supervisor super-bob"


def closing(table_id: str) -> TableState:
    """The pure engine's 655a table (tests/engine/conftest.py), closing after its round in play; no meters stored."""
    rules = {"chapter": "655a", "three_card_bonus_paytable": "A", "six_card_bonus_paytable": "C"}
    t = open_table(MississippiStudSpec(), MississippiStudRules.model_validate(rules))
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    t.feed(CloseTable(by=BY))
    return replace(t.state, table_id=table_id, meters=None)


def started_on(path: Path, body: bytes) -> tuple[TableState, list[MutableMapping[str, Any]]]:
    config = demo_config()
    with Journal(path, config.table_id, "before") as j:
        j.save([snapshot.record(body)], T0)
    ticks = iter(T0 + timedelta(seconds=i) for i in range(1000))
    journal = Journal(path, config.table_id, "again")
    try:
        with capture_logs() as logs:
            service = TableService(config, {}, journal, clock=lambda: next(ticks))
        return service.state, [e for e in logs if "who asked" in str(e.get("event"))]
    finally:
        journal.close()


def test_the_start_reads_who_asked_the_close(tmp_path: Path) -> None:
    state, said = started_on(tmp_path / "j.sqlite", snapshot.encode(closing(demo_config().table_id)))
    assert state.closing and state.closing_by == BY and said == []


def test_a_close_stored_by_older_software_starts_with_nobody_named_said_once(tmp_path: Path) -> None:
    doc = json.loads(snapshot.encode(closing(demo_config().table_id)))
    del doc["state"]["closing_by"]
    state, said = started_on(tmp_path / "j.sqlite", json.dumps(doc).encode())
    assert state.closing and state.closing_by is None
    assert [e["log_level"] for e in said] == ["warning"]
