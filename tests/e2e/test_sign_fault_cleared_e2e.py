"""End to end over real ptys: the simulated progressive sign reports a fault while round 1 takes wagers; progressive
wagering is locked out and the round goes on (605a.7(a)(1), docs/rules.md); the sign says the fault is cleared
(`fault_cleared`, docs/protocol.md section 5) and the lock-out lifts: `device.fault_cleared`, `progressive.unlocked`,
the meters on the sign again. Run through `controller.people.demo.play` with a real journal and no broker."""

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
from drivers.sim.progressive_sign import ProgressiveSignSim
from drivers.sim.table import SimulatedTable

pytestmark = pytest.mark.e2e

NO_BROKER = "mqtt://127.0.0.1:1"
FAILURE_BOUND = 60.0  # failure bound only; a round takes well under a second
ROUND = ScriptedRound(wagers={1: {"ante": 1000}, 3: {"ante": 500}}, decisions={(1, "street_3"): 1000})
DARK = {"evt": "fault", "code": "lamp_failure", "detail": "row 2 dark"}


class SignAttendant:
    """The sign reports a dark lamp row once betting opens; once the table locks progressive wagering out for it, the
    attendant replaces the lamp and the sign says the fault is cleared. It never restarts."""

    def __init__(self) -> None:
        self.sims: SimulatedTable | None = None
        self.chores: list[asyncio.Task[None]] = []

    def found(self, sims: SimulatedTable) -> None:
        self.sims = sims

    def heard(self, ev: JournaledEvent) -> None:
        loop = asyncio.get_running_loop()
        if ev.type == "betting.opened" and ev.payload.get("round_no") == 1:
            self.chores.append(loop.create_task(self.sign().send(DARK)))
        elif ev.type == "progressive.locked_out":
            self.chores.append(loop.create_task(self.sign().fault_cleared("lamp_failure", "lamp replaced")))

    def sign(self) -> ProgressiveSignSim:
        if self.sims is None or self.sims.sign is None:
            raise RuntimeError("play handed over no simulated sign")
        return self.sims.sign


def _events(journal: Path) -> list[dict[str, Any]]:
    db = sqlite3.connect(journal)
    try:
        rows = db.execute("select type, rule, payload from events order by seq").fetchall()
    finally:
        db.close()
    return [{"type": t, "rule": r, "payload": json.loads(p)} for t, r, p in rows]


async def test_the_signs_fault_cleared_lifts_the_progressive_lockout(tmp_path: Path) -> None:
    data = demo_config().model_dump()
    data["table_id"] = "sign-fault-cleared"
    attendant = SignAttendant()
    played = play(
        TableConfig.model_validate(data),
        rounds=2,
        broker=NO_BROKER,
        seed=5,
        journal_path=tmp_path / "j.sqlite",
        policy=ScriptedPolicy([ROUND]),
        on_event=attendant.heard,
        on_sims=attendant.found,
    )
    try:
        async with asyncio.timeout(FAILURE_BOUND):
            assert await played == 2
    finally:
        for chore in attendant.chores:
            chore.cancel()
        await asyncio.gather(*attendant.chores, return_exceptions=True)
    events = _events(tmp_path / "j.sqlite")
    types = [e["type"] for e in events]
    assert types.count("round.completed") == 2 and "round.voided" not in types
    assert not [e for e in events if e["type"] == "table.blocked"], "the sign's fault blocks no round"
    locked = types.index("progressive.locked_out")
    assert "sign:lamp_failure" in events[locked]["payload"]["reasons"]
    said = events[types.index("device.fault_cleared")]
    assert said["rule"] == "655a.8(b)" and said["payload"]["device"] == "progressive_sign"
    assert said["payload"]["code"] == "lamp_failure" and said["payload"]["still_held"] == []
    assert locked < types.index("device.fault_cleared") < types.index("progressive.unlocked")
    assert "input.ignored" not in types
    assert attendant.sign().levels, "the sign shows the meters"
