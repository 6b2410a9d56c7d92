"""End to end over real ptys: the simulated automated shoe jams between rounds, says so twice, and the next round is
blocked (.13(g)); the attendant clears the jam and the shoe says so (`fault_cleared`, docs/protocol.md section 5)
without a restart; round 2 then plays. The table runs through `controller.people.demo.play` with a real journal and
no broker (`mqtt://127.0.0.1:1` refuses; the journal keeps everything); outcomes are read back from the journal."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config.table import TableConfig, demo_config
from controller.core.events import JournaledEvent
from controller.people.demo import ScriptedPolicy, ScriptedRound
from drivers.sim.faults import Fault, FaultKind
from drivers.sim.script import load_sim_script
from tests.e2e.attending import Attendant, journal_events, play_attended

pytestmark = pytest.mark.e2e

ROUND = ScriptedRound(wagers={1: {"ante": 1000}, 3: {"ante": 500}}, decisions={(1, "street_3"): 1000})
JAM = {"evt": "fault", "code": "jam", "detail": "card jam at the dispensing gate"}


class ShoeClearer(Attendant):
    """The shoe jams once round 1's stub is out and reports it twice (a shoe repeating its fault); once the table
    shows itself blocked by it, the attendant clears the jam and the shoe says so. It is never unplugged."""

    def heard(self, ev: JournaledEvent) -> None:
        if ev.type == "stub.discarded" and ev.round_id is not None and ev.round_id.endswith("r000001"):
            self.do(self._jam())
        elif ev.type == "table.blocked" and "device:shoe" in ev.payload.get("reasons", {}):
            self.do(self.device("shoe").fault_cleared("jam", "by hand"))

    async def _jam(self) -> None:
        shoe = self.device("shoe")
        await shoe.inject(Fault(FaultKind.JAM))
        await shoe.send(JAM)
        await shoe.send(JAM)


async def test_the_shoe_says_its_jam_is_cleared_and_round_2_plays(tmp_path: Path) -> None:
    data = demo_config().model_dump()
    data["table_id"] = "fault-cleared"
    (tmp_path / "s.toml").write_text("")
    played = await play_attended(
        TableConfig.model_validate(data),
        ShoeClearer(),
        tmp_path / "j.sqlite",
        rounds=2,
        policy=ScriptedPolicy([ROUND]),
        script=load_sim_script(tmp_path / "s.toml"),
    )
    assert played == 2
    events = journal_events(tmp_path / "j.sqlite")
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
