"""The demo's other stops (controller/people/stuck.py): a chip count that does not match the wagers accepted waits for a
floorperson's decision (.8(b)), and a table with no usable dealing method for a device back in service (.13(g),
`no_method`); the demo simulates neither person, so it closes the table and raises TableStuck, whose message
`tablectl demo` prints before exiting 1 (tests/e2e/test_demo_stuck.py runs that for a tilt and a removed deck). The
chip count holds its round open, and a table closes only between rounds: before, the demo's close waited for that
round for ever; now the demo stops the table as a second Ctrl-C does and says the round stays open. Each stop is
journaled (`demo.stopped`, naming the block and whether the table closes): before, a chip count's journal ended in
`table.closing` with the round open, as a table that died mid-round reads.

Driven in-process as tests/e2e/test_scripted_clear_e2e.py plays a table: `play(...)` with scripted players and a
scripted action (the dealer keying a wrong count, a technician's signed mark_out_of_order), real ptys and a real
SQLite journal; no broker (the table journals and plays on without one) but for the floor's test, on the suite's
mosquitto."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import TableConfig, demo_config, load_config
from controller.mqtt.contract import TableEvent
from controller.people.actions import Action, ActionScript, Command, Key
from controller.people.demo import ScriptedPolicy, ScriptedRound, play
from controller.people.stuck import TableStuck
from floor.live import TableLive
from tests.broker import Mosquitto, Subscribe, fresh_id
from tests.e2e.sim_devices import ROOT
from tests.tablectl_runs import tablectl

pytestmark = pytest.mark.e2e

FAILURE_BOUND = 90.0  # failure bound only: each run takes a few seconds; a demo that waits for ever fails here
NO_BROKER = "mqtt://127.0.0.1:1"


def _types(journal: Path) -> list[str]:
    with sqlite3.connect(journal) as db:
        return [t for (t,) in db.execute("SELECT type FROM events ORDER BY seq")]


def _stops(journal: Path) -> list[tuple[str | None, dict[str, Any]]]:
    """Each `demo.stopped` event's round id and payload, in seq order."""
    with sqlite3.connect(journal) as db:
        rows = db.execute("SELECT round_id, payload FROM events WHERE type = 'demo.stopped' ORDER BY seq")
        return [(r, json.loads(p)) for r, p in rows]


async def _stuck(
    config: TableConfig, journal: Path, policy: ScriptedPolicy, script: ActionScript, sim_state: Path | None = None
) -> str:
    played = play(
        config, rounds=3, broker=NO_BROKER, seed=1, journal_path=journal, policy=policy, script=script,
        sim_state=sim_state,
    )  # fmt: skip
    with pytest.raises(TableStuck) as stuck:
        async with asyncio.timeout(FAILURE_BOUND):
            await played
    return str(stuck.value)


def _with(config: TableConfig, **game: Any) -> TableConfig:
    data = config.model_dump()
    data["table_id"] = fresh_id()
    data["game"] |= game
    return TableConfig.model_validate(data)


async def test_a_chip_count_that_does_not_match_stops_the_demo_naming_the_floorpersons_decision(
    tmp_path: Path,
) -> None:
    """643a with the Five Card Bonus on a table game system: the dealer counts the round's chips before any card
    (643a.8(b)(1)); keyed wrong, the count waits for a floorperson's decision, which nobody in the demo makes."""
    config = _with(load_config(ROOT / "configs/let-it-ride.toml"), five_card_bonus_table_game_system=True)
    wagers = {"bet_1": 500, "bet_2": 500, "bet_3": 500, "five_card_bonus": 100}
    policy = ScriptedPolicy([ScriptedRound(wagers={2: wagers})])
    wrong = Action("chip_count.requested", 1, Key("chips", 2), instead=True)  # two chips, for the one accepted
    journal = tmp_path / "j.sqlite"
    said = await _stuck(config, journal, policy, ActionScript(rounds={1: [wrong]}))
    assert said.startswith("the table is blocked, and nobody in the demo can clear it:")
    assert "  chip_count: " in said
    assert "what to do: a floorperson's decision on the chip count (`floorperson_decision`, docs/commands.md)" in said
    assert f"tablectl journal tail --journal {journal}" in said and "tilt" not in said
    # The close waits for the round in play, which waits for the decision: the demo stops the table without it.
    assert "the round in play stays open in the journal" in said
    types = _types(journal)
    assert "round.completed" not in types and "cards.dealt" not in types and "table.closed" not in types
    # The journal says why it ends here: the demo stopped the table on purpose, the round open for the floorperson's
    # decision; no close was asked that could not come (before: `table.closing` last, as a table that died reads), and
    # no money moved without the decision (.8(b)): no wager returned, no void.
    assert types[-1] == "demo.stopped" and types.index("chip_count.mismatch") < types.index("demo.stopped")
    assert "table.closing" not in types and "wager.returned" not in types and "round.voided" not in types
    ((round_id, stop),) = _stops(journal)
    assert round_id is not None and round_id.endswith("-r000001")
    assert stop["closes"] is False and stop["round_no"] == 1 and stop["phase"] == "reconciling"
    assert list(stop["blocks"]) == ["chip_count"] and stop["awaiting"] == {
        "chip_count": "a floorperson's decision on the chip count (`floorperson_decision`, docs/commands.md)"
    }
    assert "the round stays open" in stop["remedy"]
    # Every reader of the file: `journal verify` finds it intact (it checks the chain, not the rounds).
    verified = tablectl("journal", "verify", "--journal", journal, timeout=FAILURE_BOUND)
    assert verified.returncode == 0 and ": intact: " in verified.stdout, verified.stdout + verified.stderr
    # Stopped, not killed: the same journal opens again, the round is recovered still waiting for the decision, and
    # the demo stops again at once (before, it waited for ever: only `table.recovered` says the block then).
    again = await _stuck(config, journal, policy, ActionScript())
    assert "  chip_count: " in again and "the round in play stays open in the journal" in again
    types = _types(journal)
    assert types.count("table.recovered") == 1 and "cards.dealt" not in types and "table.closed" not in types
    assert types.index("demo.stopped") < types.index("table.recovered") and types[-1] == "demo.stopped"
    assert [(r, s["closes"], s["phase"]) for r, s in _stops(journal)] == [(round_id, False, "reconciling")] * 2
    # The restart says it follows a stop on purpose, and which event recorded it (a crash leaves no such field).
    with sqlite3.connect(journal) as db:
        (stop_seq,) = db.execute("SELECT seq FROM events WHERE type = 'demo.stopped' ORDER BY seq").fetchone()
        (recovered,) = db.execute("SELECT payload FROM events WHERE type = 'table.recovered'").fetchone()
    after = json.loads(recovered)
    assert after["policy"] == "await_chip_decision" and after["after_stop"] == {"seq": stop_seq, "by": "tablectl demo"}


async def test_a_table_started_again_on_a_chip_count_stop_plays_on_once_the_floorperson_decides(
    tmp_path: Path,
) -> None:
    """The stop asked no close, so the journal promises none: started again with a floorperson (scripted, signing
    `floorperson_decision` at the recovery), the held round is dealt and settled after the decision and the table plays
    on. Before, the stop had journaled `table.closing`, kept with the state, and the table closed after that round."""
    config = _with(load_config(ROOT / "configs/let-it-ride.toml"), five_card_bonus_table_game_system=True)
    wagers = {"bet_1": 500, "bet_2": 500, "bet_3": 500, "five_card_bonus": 100}
    policy = ScriptedPolicy([ScriptedRound(wagers={2: wagers})])
    wrong = Action("chip_count.requested", 1, Key("chips", 2), instead=True)
    journal, shoe = tmp_path / "j.sqlite", tmp_path / "sim-state.json"  # the shoe keeps its cards, as a real one
    await _stuck(config, journal, policy, ActionScript(rounds={1: [wrong]}), shoe)
    decide = Command(
        "floorperson_decision", {"about": "chip_count", "decision": "proceed", "note": "counted"}, "floorperson"
    )
    resumed = play(
        config, rounds=1, broker=NO_BROKER, seed=1, journal_path=journal, policy=policy, sim_state=shoe,
        script=ActionScript(start=[Action("table.recovered", 1, decide, instead=True)]),
    )  # fmt: skip
    async with asyncio.timeout(FAILURE_BOUND):
        await resumed
    types = _types(journal)
    stopped, recovered = types.index("demo.stopped"), types.index("table.recovered")
    assert stopped < recovered < types.index("chip_count.resolved") < types.index("round.completed")
    # Nothing moved for the held round before the decision; it is settled after it, then another round is played.
    assert "cards.dealt" not in types[:recovered] and "table.closing" not in types[: types.index("round.completed")]
    assert "round.voided" not in types and types.count("round.completed") == 2 and types[-1] == "table.closed"


async def test_the_floor_hears_the_chip_count_stop_and_shows_the_table_stopped(
    tmp_path: Path, mosquitto: Mosquitto, subscribe: Subscribe
) -> None:
    """On a broker, the stop is published as any event (the runner drains its backlog on the way out): a floor folding
    what it received (floor/live.py) shows the table `stopped`, its round open. Before, it showed `closing` for ever."""
    config = _with(load_config(ROOT / "configs/let-it-ride.toml"), five_card_bonus_table_game_system=True)
    wagers = {"bet_1": 500, "bet_2": 500, "bet_3": 500, "five_card_bonus": 100}
    policy = ScriptedPolicy([ScriptedRound(wagers={2: wagers})])
    wrong = Action("chip_count.requested", 1, Key("chips", 2), instead=True)
    topic = f"{config.mqtt.prefix}/{config.table_id}/event"
    sub = subscribe(topic)
    played = play(
        config, rounds=3, broker=mosquitto.url, seed=1, journal_path=tmp_path / "j.sqlite", policy=policy,
        script=ActionScript(rounds={1: [wrong]}),
    )  # fmt: skip
    with pytest.raises(TableStuck):
        async with asyncio.timeout(FAILURE_BOUND):
            await played
    await sub.await_until(lambda got: any(m.json()["type"] == "demo.stopped" for m in got), FAILURE_BOUND)
    live = TableLive(config.table_id)
    for m in sub.on(topic):
        live.apply_event(TableEvent.model_validate(m.json()))
    assert live.phase == "stopped" and live.round_id is not None and live.round_id.endswith("-r000001")
    assert live.rounds_completed == 0


@pytest.mark.parametrize(
    ("at", "said_by"),
    [
        (("round.completed", 1), "table.blocked"),  # between rounds: the next round is blocked before betting
        # Round 2's wager on the layout: the block is heard at "no more bets" refused for it (before, the demo waited
        # for ever); the table closes at once, the wager returned.
        (("wager.accepted", 2), "no_more_bets.refused"),
    ],
)
async def test_a_table_with_no_dealing_method_stops_the_demo_naming_back_in_service(
    tmp_path: Path, at: tuple[str, int], said_by: str
) -> None:
    """The demo's automated shoe with no other method configured (the fallback is the shoe itself): a technician's
    signed mark_out_of_order leaves the table no way to deal (`no_method`) until a device is back in service."""
    config = _with(demo_config(), fallback_dealing_method="automated_shoe")
    policy = ScriptedPolicy([ScriptedRound(wagers={1: {"ante": 1000}})])
    cover = Action(*at, Command("mark_out_of_order", {"device": "shoe"}, "technician"))
    journal = tmp_path / "j.sqlite"
    said = await _stuck(config, journal, policy, ActionScript(start=[cover]))
    assert "  no_method: the shoe is out of order and no other dealing method is configured" in said
    assert "what to do: the shuffler or shoe put back in service (`back_in_service`, docs/commands.md)" in said
    assert "tilt" not in said and "stays open" not in said
    types = _types(journal)
    assert types.count("round.completed") == 1 and "cards.dealt" not in types[types.index("round.completed") :]
    # Nothing in play holds the close: the journal says why the table closes, then closes it.
    assert types.index("device.out_of_order") < types.index(said_by) < types.index("demo.stopped")
    assert types.index("demo.stopped") < types.index("table.closed") == len(types) - 1
    assert ("wager.returned" in types) is (said_by == "no_more_bets.refused")
    ((_, stop),) = _stops(journal)
    assert stop["closes"] is True and "no_method" in stop["blocks"] and "no_method" in stop["awaiting"]
