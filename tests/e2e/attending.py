"""People at a simulated table who act on what it journals (the attendant who clears a jammed shoe, the technician who
plugs a shuffler back in), and the journal read back: shared by the device-fault end-to-end tests so that none
imports another. The table runs through `controller.people.demo.play` with a real journal and no broker
(`mqtt://127.0.0.1:1` refuses; the journal keeps everything)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from controller.config.table import TableConfig
from controller.core.events import JournaledEvent
from controller.people.demo import play
from controller.people.policy import Policy
from drivers.sim.base import SimDevice
from drivers.sim.script import SimScript
from drivers.sim.table import SimulatedTable

NO_BROKER = "mqtt://127.0.0.1:1"
FAILURE_BOUND = 60.0  # failure bound only; a round takes well under a second


class Attendant:
    """Hears every journaled event (`heard`) and does what a person would on it, each deed a task of its own (`do`)
    so the table is never held up by it; the deeds still running when the play ends are cancelled."""

    def __init__(self) -> None:
        self.sims: SimulatedTable | None = None
        self.chores: list[asyncio.Task[None]] = []

    def found(self, sims: SimulatedTable) -> None:
        self.sims = sims

    def heard(self, ev: JournaledEvent) -> None:
        """Nobody comes: a subclass says what it does on which event."""

    def do(self, deed: Coroutine[Any, Any, None]) -> None:
        self.chores.append(asyncio.get_running_loop().create_task(deed))

    def device(self, name: str) -> SimDevice:
        if self.sims is None:
            raise RuntimeError("play handed over no simulated devices")
        return self.sims.device(name)


async def play_attended(
    config: TableConfig,
    attendant: Attendant,
    journal: Path,
    *,
    rounds: int,
    policy: Policy | None = None,
    script: SimScript | None = None,
    seed: int = 5,
) -> int:
    """The rounds played, within FAILURE_BOUND; the attendant's deeds still running are cancelled either way."""
    played = play(
        config,
        rounds=rounds,
        broker=NO_BROKER,
        seed=seed,
        journal_path=journal,
        policy=policy,
        sim_script=script,
        on_event=attendant.heard,
        on_sims=attendant.found,
    )
    try:
        async with asyncio.timeout(FAILURE_BOUND):
            return await played
    finally:
        for chore in attendant.chores:
            chore.cancel()
        await asyncio.gather(*attendant.chores, return_exceptions=True)


def journal_events(journal: Path) -> list[dict[str, Any]]:
    """Every event of the journal in order: type, rule, round_id, payload and its sealed part (the cards, `{}` when
    none; none while the table is still creating the journal, so a test may poll it)."""
    if not journal.exists():
        return []
    db = sqlite3.connect(journal)
    try:
        rows = db.execute("select type, rule, round_id, payload, sealed from events order by seq").fetchall()
    except sqlite3.OperationalError:  # the schema is still being created
        return []
    finally:
        db.close()
    return [
        {"type": t, "rule": r, "round_id": rid, "payload": json.loads(p), "sealed": json.loads(x) if x else {}}
        for t, r, rid, p, x in rows
    ]
