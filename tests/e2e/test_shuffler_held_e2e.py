"""End to end: a simulated shuffler that jams three shuffles in a row, over real ptys and the reference shuffler
driver. The table asks for no fourth shuffle: the shuffler is held unusable (.13(g), failed_shuffles_limit 3 by
default) and the table blocked, until the attendant clears it and plugs it back in (it identifies again); then it
shuffles and the round plays. The whole table runs through `controller.people.demo.play` with a real journal and
no broker (`mqtt://127.0.0.1:1` refuses; the journal keeps everything)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import TableConfig, demo_config
from controller.core.events import JournaledEvent
from controller.people.demo import play
from drivers.sim.base import SimDevice
from drivers.sim.script import load_sim_script
from drivers.sim.table import SimulatedTable

pytestmark = pytest.mark.e2e

NO_BROKER = "mqtt://127.0.0.1:1"
FAILURE_BOUND = 60.0  # failure bound only; a round takes well under a second
JAMS = "".join(f'[[faults]]\ndevice = "shuffler"\nfault = "jam"\nwhen = "shuffle {n}"\n' for n in (1, 2, 3))


class ShufflerAttendant:
    """Once the table shows itself blocked by the shuffler, clears its jam and plugs it back in."""

    def __init__(self) -> None:
        self.sims: SimulatedTable | None = None
        self.chores: list[asyncio.Task[None]] = []

    def found(self, sims: SimulatedTable) -> None:
        self.sims = sims

    def heard(self, ev: JournaledEvent) -> None:
        if ev.type == "table.blocked" and "device:shuffler" in ev.payload.get("reasons", {}):
            self.chores.append(asyncio.get_running_loop().create_task(self._clear()))

    async def _clear(self) -> None:
        if self.sims is None:
            raise RuntimeError("play handed over no simulated devices")
        shuffler: SimDevice = self.sims.device("shuffler")
        shuffler.clear_faults()
        await shuffler.replug()


def events(journal: Path) -> list[dict[str, Any]]:
    db = sqlite3.connect(journal)
    try:
        rows = db.execute("select type, rule, payload from events order by seq").fetchall()
    finally:
        db.close()
    return [{"type": t, "rule": r, "payload": json.loads(p)} for t, r, p in rows]


async def test_a_shuffler_jamming_three_shuffles_in_a_row_is_held_until_it_identifies_again(tmp_path: Path) -> None:
    script_path = tmp_path / "jams.toml"
    script_path.write_text(JAMS)
    data = demo_config().model_dump()
    data["table_id"] = "shuffler-held"
    attendant = ShufflerAttendant()
    journal = tmp_path / "j.sqlite"
    extra: dict[str, Any] = {"sim_script": load_sim_script(script_path), "on_sims": attendant.found}
    played = play(
        TableConfig.model_validate(data),
        rounds=1,
        broker=NO_BROKER,
        seed=5,
        journal_path=journal,
        on_event=attendant.heard,
        **extra,
    )
    try:
        assert await asyncio.wait_for(played, FAILURE_BOUND) == 1
    finally:
        for chore in attendant.chores:
            chore.cancel()
        await asyncio.gather(*attendant.chores, return_exceptions=True)
    evs = events(journal)
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
