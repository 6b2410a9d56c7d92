"""A demo whose deck has been in play its hours (655a.3(c)(2), and each chapter's .3(c)) plays on: its simulated
floorperson verifies a new deck (.4(a)) with a signed command. Before, the table blocked between rounds and the demo
waited for ever with nothing on the terminal (found following the README: a demo journal begun in the morning, the demo
run again that evening); then only the progressive and terminal tables had a floorperson, so `tablectl demo --config
configs/let-it-ride.toml` (no sign, no terminals) still waited for ever on `TABLE BLOCKED: ...`. Every table config
in configs/ is played here. With --human-floor nobody simulated verifies the deck: the demo says what to run.

Real ptys, a real SQLite journal; no broker (the table journals and plays on without one). The engine reads no clock,
only the shell's ticks, so the test moves it on by a tick nine hours ahead instead of waiting eight hours.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import sqlite3
from collections.abc import Callable, Coroutine, MutableMapping
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from controller.config.table import TableConfig, demo_config, load_config
from controller.core.events import JournaledEvent
from controller.engine.inputs import Tick
from controller.people.demo import play
from controller.people.signers import DemoSigners
from controller.shell.service import TableService, utc_now

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
NO_BROKER = "mqtt://127.0.0.1:1"
FAILURE_BOUND = 90.0  # failure bound only: without the floorperson's new deck the demo never ends
# Every table config a user may hand `tablectl demo --config` (floor.toml and link.toml are not tables).
TABLE_CONFIGS = sorted(p.name for p in (ROOT / "configs").glob("*.toml") if p.name not in ("floor.toml", "link.toml"))


def _events(journal: Path, type_: str) -> list[tuple[str | None, dict[str, object]]]:
    with sqlite3.connect(journal) as db:
        rows = db.execute("SELECT rule, payload FROM events WHERE type = ? ORDER BY seq", (type_,)).fetchall()
    return [(r, json.loads(p)) for r, p in rows]


def _nine_hours_on(services: list[TableService]) -> Callable[[JournaledEvent], None]:
    """After round 1, a tick nine hours on: every deck in play is due for a change (.3(c): 8 hours, 4 by hand)."""

    def on_event(ev: JournaledEvent) -> None:
        if ev.type == "round.completed" and ev.payload.get("round_no") == 1:
            services[0].submit(Tick(utc_now() + dt.timedelta(hours=9)))

    return on_event


def _two_rounds(
    config: TableConfig, journal: Path, out: io.StringIO, services: list[TableService], *, human_floor: bool = False
) -> Coroutine[Any, Any, int]:
    """The demo's two rounds, the engine's clock moved nine hours on after the first."""
    return play(
        config,
        rounds=2,
        broker=NO_BROKER,
        seed=3,
        journal_path=journal,
        out=out,
        on_event=_nine_hours_on(services),
        on_service=services.append,
        human_floor=human_floor,
    )


async def _demo(config: TableConfig, journal: Path, out: io.StringIO) -> int:
    return await asyncio.wait_for(_two_rounds(config, journal, out, []), FAILURE_BOUND)


def _assert_replaced_by_the_floorperson(journal: Path, text: str, chapter: str) -> None:
    # Each chapter's own citation (684a's names the step the others cite, its own being unavailable here).
    due = [str(rule) for rule, _ in _events(journal, "deck.change_due")]
    assert len(due) == 1 and due[0].startswith(chapter) and ".3(c)" in due[0], due
    verified = [(str(rule), p["by"]) for rule, p in _events(journal, "deck.verified")]
    assert len(verified) == 1 and verified[0][0].startswith(chapter) and ".4(a)" in verified[0][0], verified
    assert verified[0][1] == "floorperson"
    accepted = [(p["verb"], p["key_id"]) for _, p in _events(journal, "command.accepted")]
    assert ("verify_deck", "demo-floorperson") in accepted
    # The block, the new deck and the round that followed are on the terminal, in that order.
    assert text.index("TABLE BLOCKED: ") < text.index("verified by the floorperson")
    assert text.index("verified by the floorperson") < text.index("round 2 complete")


async def test_a_deck_due_for_a_change_is_replaced_by_the_demos_floorperson(tmp_path: Path) -> None:
    journal = tmp_path / "demo.sqlite"
    out = io.StringIO()
    assert await _demo(demo_config(), journal, out) == 2
    _assert_replaced_by_the_floorperson(journal, out.getvalue(), "655a")


@pytest.mark.parametrize("name", TABLE_CONFIGS)
async def test_every_configs_demo_plays_on_past_a_deck_due(name: str, tmp_path: Path) -> None:
    """`tablectl demo --config configs/X --rounds 2` on a journal whose deck is due: two rounds, the deck replaced."""
    config = load_config(ROOT / "configs" / name)
    journal = tmp_path / "demo.sqlite"
    out = io.StringIO()
    assert await _demo(config, journal, out) == 2
    _assert_replaced_by_the_floorperson(journal, out.getvalue(), config.game.chapter)


async def test_with_human_floor_the_demo_says_what_to_run_and_a_persons_verify_deck_plays_on(tmp_path: Path) -> None:
    """--human-floor: nobody simulated brings the deck. The demo names the command; the person's signed verify_deck
    (here a key of the test's, listed in the config as an operator would) lets round 2 play."""
    base = load_config(ROOT / "configs" / "let-it-ride.toml")
    person = DemoSigners(base, tmp_path / "person-replay.sqlite")
    config = base.model_copy(update={"supervisors": [*base.supervisors, *person.supervisors]})
    journal = tmp_path / "demo.sqlite"
    services: list[TableService] = []
    hinted = asyncio.Event()
    hints: list[MutableMapping[str, Any]] = []

    def watch(logger: object, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        if str(event.get("event", "")).startswith("the table waits for a floorperson"):
            hints.append({**event, "log_level": method})
            hinted.set()
        return event

    out = io.StringIO()
    with capture_logs() as logs:
        structlog.configure(processors=[watch, *structlog.get_config()["processors"]])
        demo = asyncio.create_task(_two_rounds(config, journal, out, services, human_floor=True))
        try:
            await asyncio.wait_for(hinted.wait(), FAILURE_BOUND)
            assert not demo.done()  # it waits for the person
            events = await person.command(services[0], "verify_deck", {"note": "the person at the table"})
            assert "deck.verified" in [e.type for e in events]
            assert await asyncio.wait_for(demo, FAILURE_BOUND) == 2
        finally:
            demo.cancel()
    assert [h["log_level"] for h in hints] == ["warning"]
    remedy = str(hints[0]["remedy"])
    assert "tablectl command send --config CONFIG.toml --key KEY.pem --key-id KEY_ID verify_deck" in remedy
    assert "without --human-floor" in remedy
    assert not [e for e in logs if e["log_level"] in ("error", "critical")]
    verified = [(rule, p["by"]) for rule, p in _events(journal, "deck.verified")]
    assert verified == [("643a.4(a)", "floorperson")]
