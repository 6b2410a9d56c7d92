"""End to end: the winning seat's light through the whole daemon (issue 7 item 3, 655a.11(i)(1)(ii)).

A Mississippi Stud table with progressives runs on simulated devices over real ptys, with the reference drivers,
a real journal file and the runner (no broker: `mqtt://127.0.0.1:1` refuses, the journal keeps everything). The
scripted deck gives seats 1 and 3 a major hit; nobody validates until the test has unplugged and re-plugged seat
3's station, which comes back dark and must be lit again by the controller. Then the hits are validated and both
lights go out. Every step waits on the simulator's lamp or the journaled events, never on time.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import TableConfig, load_config
from controller.core.cards import STANDARD_DECK
from controller.core.events import JournaledEvent
from controller.engine.inputs import ValidateJackpot
from controller.people.demo import ScriptedPolicy, ScriptedRound, simulator_settings
from controller.people.floor import SimulatedFloor
from controller.shell.runner import build_devices, run_table
from controller.shell.service import TableService
from drivers.sim.table import SimulatedTable

pytestmark = pytest.mark.e2e
CONFIGS = Path(__file__).resolve().parents[2] / "configs"
NO_BROKER = "mqtt://127.0.0.1:1"
FAILURE_BOUND = 30.0  # failure bound only; the whole scenario takes about a second

TOP = ["Qh", "Kh", "7h", "8h", "9h", "Th", "Jh"]  # seats 1 and 3: straight flushes in hearts (major meter)
DECK = TOP + [c for c in STANDARD_DECK if c not in TOP]
STREETS = {(seat, street): 500 for seat in (1, 3) for street in ("street_3", "street_4", "street_5")}
ROUND = ScriptedRound(
    wagers={1: {"ante": 500, "progressive": 100}, 3: {"ante": 500, "progressive": 100}}, decisions=dict(STREETS)
)


class Watch:
    """The journaled events as they come, with a wait for the first one (from a mark) that matches."""

    def __init__(self, queue: asyncio.Queue[JournaledEvent]) -> None:
        self.queue = queue
        self.seen: list[JournaledEvent] = []

    async def until(self, what: str, since: int = 0, **payload: object) -> JournaledEvent:
        def fits(e: JournaledEvent) -> bool:
            return e.type == what and all(e.payload.get(k) == v for k, v in payload.items())

        for e in self.seen[since:]:
            if fits(e):
                return e
        while True:
            e = await self.queue.get()
            self.seen.append(e)
            if fits(e):
                return e


async def test_hit_lights_the_seat_a_replugged_station_is_lit_again_validation_darkens(tmp_path: Path) -> None:
    config = load_config(CONFIGS / "mississippi-stud-progressive.toml")
    config = TableConfig.model_validate({**config.model_dump(), "table_id": "light-e2e"})
    journal = tmp_path / "j.sqlite"
    async with SimulatedTable(config.game.seats, random.Random(7), sign=True) as sims:
        sims.shuffler.script_decks([DECK])
        seat1, seat3 = sims.stations[1], sims.stations[3]
        outcome: dict[str, Any] = {}

        async def scenario(service: TableService, watch: Watch) -> None:
            hits, since = {}, 0
            for _ in range(2):
                hit = await watch.until("progressive.hit", since)
                since = watch.seen.index(hit) + 1
                hits[hit.payload["seat"]] = hit.payload["hit"]
            async with asyncio.timeout(FAILURE_BOUND):
                await seat3.wait_light(True)
                await seat1.wait_light(True)
                await watch.until("progressive.light", seat=3, on=True)
                # Seat 3's station loses power: it comes back dark, and the controller lights it again.
                await seat3.unplug()
                offline = await watch.until("device.offline", device_id="wager_station_3")
                assert seat3.light is False
                await seat3.replug()
                online = await watch.until("device.online", watch.seen.index(offline), device_id="wager_station_3")
                await seat3.wait_light(True)
                relit = await watch.until("progressive.light", watch.seen.index(online), seat=3, on=True)
                assert relit.payload["awaiting"] is True and relit.payload["hits"] == [hits[3]]
                assert seat1.light_history == [False, True]  # seat 1 untouched throughout
                await service.submit_and_wait(ValidateJackpot(3, "major", hits[3], "floor-ann", "floorperson"))
                await seat3.wait_light(False)
                await watch.until("progressive.light", seat=3, on=False, awaiting=False)
                assert seat1.light is True  # seat 1's hit still awaits its validation
                outcome["hits"] = hits
                # The last validation completes the round and the table closes at once (the floor asked it to):
                # the light_off is sent and acknowledged within the step, the lamp is checked after the run.
                await service.submit_and_wait(ValidateJackpot(1, "major", hits[1], "floor-ann", "floorperson"))

        def companions(service: TableService) -> list[Coroutine[Any, Any, None]]:
            floor = SimulatedFloor(service, sims, ScriptedPolicy([ROUND]), rounds=1, pace=0)
            watch = Watch(service.subscribe("test", "lossless"))
            outcome["watch"] = watch
            return [floor.run(), reported(scenario(service, watch))]

        async def reported(work: Coroutine[Any, Any, None]) -> None:
            # The runner stops its helpers when the table closes; a failure in the scenario is kept for the test.
            # (A cancellation is that stop; whether the scenario got far enough is checked through outcome["hits"].)
            try:
                await work
            except Exception as err:
                outcome["error"] = err
                raise

        drivers = build_devices(simulator_settings(config, 0), sims.ports)
        played = await asyncio.wait_for(
            run_table(config, drivers, broker=NO_BROKER, journal_path=journal, companions=companions), FAILURE_BOUND
        )
        assert "error" not in outcome, (
            repr(outcome["error"]),
            [(e.type, dict(e.payload)) for e in outcome["watch"].seen[-25:]],
        )
        assert played == 1
        assert sorted(outcome["hits"]) == [1, 3], "the scenario did not run to its end"
        assert seat3.light_history == [False, True, False, True, False]
        assert seat1.light_history == [False, True, False]
        assert all(s.light_history == [False] for n, s in sims.stations.items() if n not in (1, 3))
        lights = [e for e in outcome["watch"].seen if e.type == "progressive.light"]
        assert {e.rule for e in lights} == {"655a.11(i)(1)(ii)"}
