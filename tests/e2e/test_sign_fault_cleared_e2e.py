"""End to end over real ptys: the simulated progressive sign reports a fault while round 1 takes wagers; progressive
wagering is locked out and the round goes on (605a.7(a)(1), docs/rules.md); the sign says the fault is cleared
(`fault_cleared`, docs/protocol.md section 5) and the lock-out lifts: `device.fault_cleared`, `progressive.unlocked`,
the meters on the sign again. Run through `controller.people.demo.play` with a real journal and no broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config.table import TableConfig, demo_config
from controller.core.events import JournaledEvent
from controller.people.demo import ScriptedPolicy, ScriptedRound
from drivers.sim.progressive_sign import ProgressiveSignSim
from tests.e2e.attending import Attendant, journal_events, play_attended

pytestmark = pytest.mark.e2e

ROUND = ScriptedRound(wagers={1: {"ante": 1000}, 3: {"ante": 500}}, decisions={(1, "street_3"): 1000})
DARK = {"evt": "fault", "code": "lamp_failure", "detail": "row 2 dark"}


class SignAttendant(Attendant):
    """The sign reports a dark lamp row once betting opens; once the table locks progressive wagering out for it, the
    attendant replaces the lamp and the sign says the fault is cleared. It never restarts."""

    def heard(self, ev: JournaledEvent) -> None:
        if ev.type == "betting.opened" and ev.payload.get("round_no") == 1:
            self.do(self.sign().send(DARK))
        elif ev.type == "progressive.locked_out":
            self.do(self.sign().fault_cleared("lamp_failure", "lamp replaced"))

    def sign(self) -> ProgressiveSignSim:
        if self.sims is None or self.sims.sign is None:
            raise RuntimeError("play handed over no simulated sign")
        return self.sims.sign


async def test_the_signs_fault_cleared_lifts_the_progressive_lockout(tmp_path: Path) -> None:
    data = demo_config().model_dump()
    data["table_id"] = "sign-fault-cleared"
    attendant = SignAttendant()
    played = await play_attended(
        TableConfig.model_validate(data), attendant, tmp_path / "j.sqlite", rounds=2, policy=ScriptedPolicy([ROUND])
    )
    assert played == 2
    events = journal_events(tmp_path / "j.sqlite")
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
