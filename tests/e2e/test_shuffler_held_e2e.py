"""End to end: a simulated shuffler that jams three shuffles in a row, over real ptys and the reference shuffler
driver. The table asks for no fourth shuffle: the shuffler is held unusable (.13(g), failed_shuffles_limit 3 by
default) and the table blocked, until the attendant clears it and plugs it back in (it identifies again); then it
shuffles and the round plays. The whole table runs through `controller.people.demo.play` with a real journal and
no broker (`mqtt://127.0.0.1:1` refuses; the journal keeps everything)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config.table import TableConfig, demo_config
from controller.core.events import JournaledEvent
from drivers.sim.script import load_sim_script
from tests.e2e.attending import Attendant, journal_events, play_attended

pytestmark = pytest.mark.e2e

JAMS = "".join(f'[[faults]]\ndevice = "shuffler"\nfault = "jam"\nwhen = "shuffle {n}"\n' for n in (1, 2, 3))


class ShufflerAttendant(Attendant):
    """Once the table shows itself blocked by the shuffler, clears its jam and plugs it back in."""

    def heard(self, ev: JournaledEvent) -> None:
        if ev.type == "table.blocked" and "device:shuffler" in ev.payload.get("reasons", {}):
            self.do(self._clear())

    async def _clear(self) -> None:
        shuffler = self.device("shuffler")
        shuffler.clear_faults()
        await shuffler.replug()


async def test_a_shuffler_jamming_three_shuffles_in_a_row_is_held_until_it_identifies_again(tmp_path: Path) -> None:
    script_path = tmp_path / "jams.toml"
    script_path.write_text(JAMS)
    data = demo_config().model_dump()
    data["table_id"] = "shuffler-held"
    journal = tmp_path / "j.sqlite"
    played = await play_attended(
        TableConfig.model_validate(data), ShufflerAttendant(), journal, rounds=1, script=load_sim_script(script_path)
    )
    assert played == 1
    evs = journal_events(journal)
    types = [e["type"] for e in evs]
    failed = [e for e in evs if e["type"] == "shuffle.failed"]
    assert [e["payload"]["attempt"] for e in failed] == [1, 2, 3]
    assert all(e["rule"] == "655a.13(e)" for e in failed)
    held = types.index("device.unusable")
    assert evs[held]["rule"] == "655a.13(g)" and evs[held]["payload"]["device"] == "shuffler"
    assert "3 failed shuffles in a row" in evs[held]["payload"]["reason"]
    cleared = types.index("table.block_cleared")
    assert held < cleared and evs[cleared]["payload"]["block"] == "device:shuffler"
    # Three shuffles asked and failed before the hold, then one once the shuffler is back.
    started = [i for i, t in enumerate(types) if t == "shuffle.started"]
    assert len([i for i in started if i < held]) == 3 and len([i for i in started if i > cleared]) == 1
    assert types.index("betting.opened") > cleared and "round.completed" in types
