"""End to end over real ptys: the simulated automated shoe jams between rounds, says so twice, and the next round is
blocked (.13(g)); the attendant clears the jam and the shoe says so (`fault_cleared`, docs/protocol.md section 5)
without a restart; round 2 then plays. The table runs through `controller.people.demo.play` with a real journal and
no broker (`mqtt://127.0.0.1:1` refuses; the journal keeps everything); outcomes are read back from the journal."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import TableConfig, demo_config
from controller.core.events import JournaledEvent
from controller.people.demo import ScriptedPolicy, ScriptedRound, play
from drivers.sim.base import SimDevice
from drivers.sim.faults import Fault, FaultKind
from drivers.sim.script import load_sim_script
from drivers.sim.table import SimulatedTable

pytestmark = pytest.mark.e2e

NO_BROKER = "mqtt://127.0.0.1:1"
FAILURE_BOUND = 60.0  # failure bound only; a round takes well under a second
ROUND = ScriptedRound(wagers={1: {"ante": 1000}, 3: {"ante": 500}}, decisions={(1, "street_3"): 1000})
JAM = {"evt": "fault", "code": "jam", "detail": "card jam at the dispensing gate"}


class Attendant:
    """The shoe jams once round 1's stub is out and reports it twice (a shoe repeating its fault); once the table
    shows itself blocked by it, the attendant clears the jam and the shoe says so. It is never unplugged."""

    def __init__(self) -> None:
        self.sims: SimulatedTable | None = None
        self.chores: list[asyncio.Task[None]] = []

    def found(self, sims: SimulatedTable) -> None:
        self.sims = sims

    def heard(self, ev: JournaledEvent) -> None:
        if ev.type == "stub.discarded" and ev.round_id is not None and ev.round_id.endswith("r000001"):
            self.chores.append(asyncio.get_running_loop().create_task(self._jam()))
        elif ev.type == "table.blocked" and "device:shoe" in ev.payload.get("reasons", {}):
            self.chores.append(asyncio.get_running_loop().create_task(self._shoe().fault_cleared("jam", "by hand")))

    def _shoe(self) -> SimDevice:
        assert self.sims is not None, "play handed over no simulated devices"
        return self.sims.device("shoe")

    async def _jam(self) -> None:
        await self._shoe().inject(Fault(FaultKind.JAM))
        await self._shoe().send(JAM)
        await self._shoe().send(JAM)


def _events(journal: Path) -> list[dict[str, Any]]:
    db = sqlite3.connect(journal)
    try:
        rows = db.execute("select type, rule, round_id, payload from events order by seq").fetchall()
    finally:
        db.close()
    return [{"type": t, "rule": r, "round_id": rid, "payload": json.loads(p)} for t, r, rid, p in rows]


async def test_the_shoe_says_its_jam_is_cleared_and_round_2_plays(tmp_path: Path) -> None:
    data = demo_config().model_dump()
    data["table_id"] = "fault-cleared"
    (tmp_path / "s.toml").write_text("")
    attendant = Attendant()
    extra: dict[str, Any] = {"sim_script": load_sim_script(tmp_path / "s.toml"), "on_sims": attendant.found}
    played = play(
        TableConfig.model_validate(data),
        rounds=2,
        broker=NO_BROKER,
        seed=5,
        journal_path=tmp_path / "j.sqlite",
        policy=ScriptedPolicy([ROUND]),
        on_event=attendant.heard,
        **extra,
    )
    try:
        assert await asyncio.wait_for(played, FAILURE_BOUND) == 2
    finally:
        for chore in attendant.chores:
            chore.cancel()
        await asyncio.gather(*attendant.chores, return_exceptions=True)
    events = _events(tmp_path / "j.sqlite")
    types = [e["type"] for e in events]
    assert "round.voided" not in types and types.count("round.completed") == 2
    # Two reports of the jam, one `device.unusable`: said once per fault.
    assert [e["payload"]["code"] for e in events if e["type"] == "device.fault"] == ["jam", "jam"]
    assert types.count("device.unusable") == 1
    said = events[types.index("device.fault_cleared")]
    assert said["rule"] == "655a.13(g)" and said["payload"]["code"] == "jam" and said["payload"]["detail"] == "by hand"
    cleared = types.index("table.block_cleared")
    assert events[cleared]["payload"] == {"block": "device:shoe", "by": "shoe said fault jam cleared", "remaining": {}}
    assert types.index("table.blocked") < types.index("device.fault_cleared") < cleared
    # Lifted by what the shoe said, not by a second identification: it identified once, at the start.
    assert [e["payload"]["device_id"] for e in events if e["type"] == "device.online"].count("shoe") == 1
    opened = [i for i, e in enumerate(events) if e["type"] == "betting.opened"]
    assert len(opened) == 2 and opened[1] > cleared
