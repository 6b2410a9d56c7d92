"""The simulated players at different seats put their wagers down at once (issue 19), as at a real table: each on
their own station and line. What the seed decides must not depend on which seat's frame the event loop moves first:
two runs of the same seeded demo give the same wagers, buy-ins, cards, decisions, settlements, cash-outs and totals,
round by round; only the order of events from different seats within a round may differ, as on the hardware.

Real parts: the seven-seat Let It Ride table with game accounts (terminals, 605a.2(d)(1)) on simulated devices over
real paced ptys, real SQLite journals; no broker (the table keeps playing without one).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import load_config
from controller.core.events import JournaledEvent
from controller.people.demo import play

pytestmark = pytest.mark.e2e

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "let-it-ride-five-card-hand-bonus.toml"
NO_BROKER = "mqtt://127.0.0.1:1"
FAILURE_BOUND = 240.0  # failure bound only
ROUNDS = 6
# What each round's events say, keyed so that events from different seats compare as a multiset.
VOLATILE = ("ts", "event_id", "boot_id", "request", "at", "when", "published")


def _kept(payload: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in payload.items() if k not in VOLATILE}, sort_keys=True)


async def _play(tmp: Path, seed: int) -> dict[int, Counter[tuple[str, str | None, str]]]:
    heard: list[JournaledEvent] = []
    played = await asyncio.wait_for(
        play(
            load_config(CONFIG),
            rounds=ROUNDS,
            broker=NO_BROKER,
            seed=seed,
            pace=0.0,
            journal_path=tmp / "j.sqlite",
            on_event=heard.append,
        ),
        FAILURE_BOUND,
    )
    assert played == ROUNDS
    rounds: dict[int, Counter[tuple[str, str | None, str]]] = {}
    round_no = 0
    for ev in heard:
        if ev.type == "betting.opened":
            round_no = int(ev.payload["round_no"])
        rounds.setdefault(round_no, Counter())[(ev.type, ev.rule, _kept(dict(ev.payload)))] += 1
    return rounds


async def test_the_same_seed_plays_the_same_rounds_with_the_seats_acting_at_once(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = await _play(tmp_path / "a", 5)
    second = await _play(tmp_path / "b", 5)
    kinds = Counter(kind for counted in first.values() for (kind, _, _) in counted.elements())
    # The run plays what the seats do at once: several seats wagering each round, buy-ins and cash-outs.
    assert kinds["wager.accepted"] >= 2 * ROUNDS
    for kind in ("account.bought_in", "account.wagered", "round.completed"):
        assert kinds[kind] > 0, kind
    assert sorted(first) == sorted(second)
    for round_no in sorted(first):
        assert first[round_no] == second[round_no], f"round {round_no} differs"
