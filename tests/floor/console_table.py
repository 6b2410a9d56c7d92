"""A real table for the console's browser test, run as its own process (tests/floor/test_console_browser.py).

The table is the real one (`tablectl demo`'s: simulated devices over ptys, a journal, the broker); the people are
scripted: round 2 deals seat 3 a king-high straight flush with a Progressive wager (the major meter, paytable C,
655a.12(c)(1)) and nobody but the console validates it. After round 2, the shell's tilt is raised as a task that
keeps failing would raise it (docs/supervision.md): such a failure cannot be provoked on demand, so this input
is the one thing faked here.

    python tests/floor/console_table.py CONFIG JOURNAL BROKER ROUNDS
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

from controller.config.table import load_config
from controller.core.cards import STANDARD_DECK
from controller.core.events import JournaledEvent
from controller.engine.inputs import RaiseTilt
from controller.people.demo import ScriptedPolicy, ScriptedRound, play
from controller.shell.service import TableService

TOP = ["Qh", "Kh", "9h", "Th", "Jh"]  # seat 3's two cards, then the community: K-high straight flush in hearts
JACKPOT_DECK = TOP + [c for c in STANDARD_DECK if c not in TOP]
STREETS = {(3, s): 500 for s in ("street_3", "street_4", "street_5")}
PLAIN = ScriptedRound(wagers={1: {"ante": 500}, 3: {"ante": 500}}, decisions={(1, "street_3"): 500})
JACKPOT = ScriptedRound(wagers={3: {"ante": 500, "progressive": 100}}, decisions=dict(STREETS))
TILT = RaiseTilt("tilt:console_test", "a task failed three times (raised by the console's test)", "clear it")


async def main(config_path: Path, journal: Path, broker: str, rounds: int) -> int:
    config = load_config(config_path)
    services: list[TableService] = []
    completed = 0
    tasks: set[asyncio.Task[object]] = set()

    def on_event(e: JournaledEvent) -> None:
        nonlocal completed
        if e.type == "round.completed":
            completed += 1
            if completed == 2 and services:
                task = asyncio.get_running_loop().create_task(services[0].submit_and_wait(TILT))
                tasks.add(task)

    rng = random.Random(17)
    return await play(
        config,
        rounds=rounds,
        broker=broker,
        seed=17,
        pace=0.05,
        journal_path=journal,
        policy=ScriptedPolicy([PLAIN, JACKPOT] + [PLAIN] * (rounds - 2)),
        decks=[rng.sample(STANDARD_DECK, 52), JACKPOT_DECK],
        on_event=on_event,
        human_floor=True,
        on_service=services.append,
    )


if __name__ == "__main__":
    played = asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])))
    print(f"played {played} rounds", flush=True)
