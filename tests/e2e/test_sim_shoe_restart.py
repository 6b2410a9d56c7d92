"""The simulated shoe keeps its cards across a restart, as a real shoe does (docs/recovery.md, "betting").

A real dealing shoe still holds the undealt cards when the table's daemon (and the computer it runs on) restarts: the
round in betting is dealt from them, the cards the card-reading shuffler reported. The simulated shoe started a new,
empty shoe with every start of the simulators (`tablectl demo` runs them in its own process, so a restart of the
daemon restarted them too), so that round asked an empty shoe for a stack and was voided (.13(f)) where a real table
deals it. With a state file (`play(sim_state=...)`, `tablectl demo --sim-state`, `tablectl sim-devices
--state-file`) the shoe's cards come back with the simulators.

The whole table runs through `controller.people.demo.play` on real ptys with a real journal; no broker is needed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from controller.config.table import TableConfig, demo_config
from controller.core.cards import STANDARD_DECK
from controller.core.events import JournaledEvent
from controller.people.demo import ScriptedPolicy, ScriptedRound, play
from tests.e2e.attending import journal_events

pytestmark = pytest.mark.e2e

NO_BROKER = "mqtt://127.0.0.1:1"
FAILURE_BOUND = 60.0  # failure bound only; a round takes well under a second
TOP = ["Ah", "Ad", "9c", "4d", "Qs", "Js", "Ks", "Ts", "9s", "2d", "Ac", "7h", "7s"]
DECK = TOP + [c for c in STANDARD_DECK if c not in TOP]
ROUND = ScriptedRound(wagers={1: {"ante": 1000}, 2: {"ante": 500}}, decisions={})


def _config() -> TableConfig:
    data = demo_config().model_dump()
    data["table_id"] = "sim-shoe-restart"
    return TableConfig.model_validate(data)


async def _stopped_in_betting(journal: Path, state: Path) -> str:
    """Round 1 shuffled from DECK (the shoe loaded with it) and in betting; then the daemon stops at once, as
    SIGTERM or a power cut stops it: cancelled as it journals `betting.opened`, before a card can leave the shoe (a
    round stopped while dealing is voided by the chapter, .13(f), whatever the shoe holds). Returns the round's id."""
    opened: list[str] = []

    def heard(event: JournaledEvent) -> None:
        if event.type == "betting.opened" and event.round_id is not None and not opened:
            opened.append(event.round_id)
            first.cancel()

    first = asyncio.create_task(
        play(
            _config(),
            rounds=2,
            broker=NO_BROKER,
            seed=5,
            journal_path=journal,
            policy=ScriptedPolicy([ROUND]),
            decks=[DECK],
            on_event=heard,
            sim_state=state,
        )
    )
    done, _ = await asyncio.wait([first], timeout=FAILURE_BOUND)
    assert done and first.cancelled() and opened, "betting never opened"
    return opened[0]


async def test_a_round_in_betting_at_a_restart_is_dealt_from_the_cards_the_shoe_held(tmp_path: Path) -> None:
    journal, state = tmp_path / "j.sqlite", tmp_path / "sim-state.json"
    round_id = await _stopped_in_betting(journal, state)
    before = len(journal_events(journal))
    # The second boot scripts no deck: a new shuffle would deal the seeded simulator's own order, not DECK's.
    second = play(
        _config(),
        rounds=1,
        broker=NO_BROKER,
        seed=6,
        journal_path=journal,
        policy=ScriptedPolicy([ROUND]),
        sim_state=state,
    )
    await asyncio.wait_for(second, FAILURE_BOUND)  # its count is of the rounds it began: the resumed one is not
    events = journal_events(journal)[before:]
    types = [e["type"] for e in events]
    assert "round.voided" not in types, [e["payload"] for e in events if e["type"] == "round.voided"]
    completed = [e for e in events if e["type"] == "round.completed"]
    assert [e["round_id"] for e in completed][:1] == [round_id], "the round in betting at the restart completes"
    dealt = [
        card
        for e in events
        if e["round_id"] == round_id and e["type"].endswith(".dealt")
        for card in e["sealed"].get("cards", [])
    ]
    assert dealt and sorted(dealt) == sorted(DECK[: len(dealt)]), f"dealt {dealt}, not the top of the shoe's deck"
    assert "shuffle.completed" not in types[: types.index("round.completed")], "no new deck before that round"
