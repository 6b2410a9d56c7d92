"""A demo whose deck has been in play its hours (655a.3(c)(2)) plays on: its simulated floorperson verifies a new deck
(655a.4(a)) with a signed command. Before, the table blocked between rounds and the demo waited for ever with nothing
on the terminal (found following the README: a demo journal begun in the morning, the demo run again that evening).

Real ptys, a real SQLite journal; no broker (the table journals and plays on without one). The engine reads no clock,
only the shell's ticks, so the test moves it on by a tick nine hours ahead instead of waiting eight hours.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import sqlite3
from pathlib import Path

import pytest

from controller.config.table import demo_config
from controller.core.events import JournaledEvent
from controller.engine.inputs import Tick
from controller.people.demo import play
from controller.shell.service import TableService, utc_now

pytestmark = pytest.mark.e2e

NO_BROKER = "mqtt://127.0.0.1:1"
FAILURE_BOUND = 90.0  # failure bound only: without the floorperson's new deck the demo never ends


def _events(journal: Path, type_: str) -> list[tuple[str | None, dict[str, object]]]:
    with sqlite3.connect(journal) as db:
        rows = db.execute("SELECT rule, payload FROM events WHERE type = ? ORDER BY seq", (type_,)).fetchall()
    return [(r, json.loads(p)) for r, p in rows]


async def test_a_deck_due_for_a_change_is_replaced_by_the_demos_floorperson(tmp_path: Path) -> None:
    journal = tmp_path / "demo.sqlite"
    services: list[TableService] = []

    def nine_hours_on(ev: JournaledEvent) -> None:
        if ev.type == "round.completed" and ev.payload.get("round_no") == 1:
            services[0].submit(Tick(utc_now() + dt.timedelta(hours=9)))

    out = io.StringIO()
    played = await asyncio.wait_for(
        play(
            demo_config(),
            rounds=2,
            broker=NO_BROKER,
            seed=3,
            journal_path=journal,
            out=out,
            on_event=nine_hours_on,
            on_service=services.append,
        ),
        FAILURE_BOUND,
    )
    assert played == 2
    assert [rule for rule, _ in _events(journal, "deck.change_due")] == ["655a.3(c)(2)"]
    assert [(rule, p["by"]) for rule, p in _events(journal, "deck.verified")] == [("655a.4(a)", "floorperson")]
    accepted = [(p["verb"], p["key_id"]) for _, p in _events(journal, "command.accepted")]
    assert ("verify_deck", "demo-floorperson") in accepted
    # The block, the new deck and the round that followed are on the terminal, in that order.
    text = out.getvalue()
    assert text.index("TABLE BLOCKED: ") < text.index("new deck A verified by the floorperson")
    assert text.index("new deck A verified by the floorperson") < text.index("round 2 complete")
