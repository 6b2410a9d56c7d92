"""The simulated table at pace 0: no chip-sensor debounce where nothing bounces, and the debounce kept where it
matters (a config that sets it, a station a script makes chatter).

At pace 0 the debounce window was most of each round's time (bench/table_rounds.py measures the table); these
tests check what the drivers are given and that the table still counts every wager once and exactly. Speed is
measured by the bench, never asserted here.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import TableConfig, demo_config
from controller.core.cards import STANDARD_DECK
from controller.people.demo import ScriptedPolicy, ScriptedRound, play, simulator_settings
from drivers.sim.faults import Fault, FaultKind
from drivers.sim.script import ScriptedFault, SimScript

NO_BROKER = "mqtt://127.0.0.1:1"
FAILURE_BOUND = 60.0  # failure bound only
TOP = ["Ah", "Ad", "9c", "4d", "Qs", "Js", "Ks", "Ts", "9s", "2d", "Ac", "7h", "7s"]
DECK = TOP + [c for c in STANDARD_DECK if c not in TOP]


def _with(config: TableConfig, **devices: Any) -> TableConfig:
    data = config.model_dump()
    data["devices"].update(devices)
    return TableConfig.model_validate(data)


def _debounces(config: TableConfig) -> dict[int, int | None]:
    assert config.devices is not None
    return {int(s["seat"]): s.get("debounce_ms") for s in config.devices.wager_stations}


def _chatter(seat: int) -> SimScript:
    return SimScript(faults=(ScriptedFault(f"wager_station_{seat}", Fault(FaultKind.CHATTER, persistent=True)),))


def test_pace_zero_turns_the_default_debounce_off() -> None:
    fast = simulator_settings(demo_config(), 0.0)
    assert _debounces(fast) == dict.fromkeys(range(1, 7), 0)
    # The table's own config is left as it was: only the simulated table's drivers get the change.
    assert _debounces(demo_config()) == dict.fromkeys(range(1, 7), None)


def test_a_human_pace_keeps_the_real_settings() -> None:
    config = demo_config()
    assert simulator_settings(config, 0.25) is config
    assert simulator_settings(config, 0.25, _chatter(2)) is config


def test_a_debounce_the_config_sets_is_kept() -> None:
    base = demo_config()
    assert base.devices is not None
    stations = [dict(s, debounce_ms=45) if s["seat"] == 3 else dict(s) for s in base.devices.wager_stations]
    config = _with(base, wager_stations=stations)
    assert _debounces(simulator_settings(config, 0.0)) == {1: 0, 2: 0, 3: 45, 4: 0, 5: 0, 6: 0}


def test_a_station_scripted_to_chatter_keeps_its_debounce() -> None:
    assert _debounces(simulator_settings(demo_config(), 0.0, _chatter(2))) == {1: 0, 2: None, 3: 0, 4: 0, 5: 0, 6: 0}


def test_a_wager_bus_is_treated_as_its_stations() -> None:
    base = demo_config()
    assert base.devices is not None
    bus = {"driver": "reference-wager-bus", "port": "simulated", "seats": [5, 6]}
    config = _with(base, wager_stations=[dict(s) for s in base.devices.wager_stations if s["seat"] < 5], wager_bus=bus)
    fast = simulator_settings(config, 0.0)
    assert fast.devices is not None and fast.devices.wager_bus is not None
    assert fast.devices.wager_bus["debounce_ms"] == 0
    assert _debounces(fast) == {1: 0, 2: 0, 3: 0, 4: 0}
    kept = simulator_settings(config, 0.0, _chatter(6))
    assert kept.devices is not None and kept.devices.wager_bus == bus


def _accepted(journal: Path) -> list[tuple[int, str, int]]:
    db = sqlite3.connect(journal)
    try:
        rows = db.execute("select payload from events where type = 'wager.accepted' order by seq").fetchall()
    finally:
        db.close()
    return [(p["seat"], p["spot"], p["amount"]) for p in (json.loads(r[0]) for r in rows)]


@pytest.mark.e2e
@pytest.mark.parametrize("chatter", [False, True], ids=["quiet-sensors", "seat-2-chatters"])
async def test_pace_zero_counts_every_wager_once(tmp_path: Path, chatter: bool) -> None:
    """At pace 0 each wager is accepted once at its amount: without a debounce where sensors are quiet, and with
    the driver's debounce where a persistent chatter fault makes seat 2's sensor bounce on every placement
    (without it, the bouncing readings 500, 0, 500, 0, 500 would each reach the controller)."""
    rnd = ScriptedRound(wagers={1: {"ante": 1000}, 2: {"ante": 500, "three_card_bonus": 200}, 4: {"ante": 2500}})
    journal = tmp_path / "j.sqlite"
    played = await asyncio.wait_for(
        play(
            demo_config(),
            rounds=2,
            broker=NO_BROKER,
            seed=11,
            pace=0.0,
            journal_path=journal,
            policy=ScriptedPolicy([rnd]),
            decks=[DECK, DECK],
            sim_script=_chatter(2) if chatter else None,
        ),
        FAILURE_BOUND,
    )
    assert played == 2
    one_round = [(1, "ante", 1000), (2, "ante", 500), (2, "three_card_bonus", 200), (4, "ante", 2500)]
    # Sorted: a debounced station's wagers may be accepted after a quicker neighbour's.
    assert sorted(_accepted(journal)) == sorted(one_round * 2)
