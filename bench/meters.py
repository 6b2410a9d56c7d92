"""Progressive meter model: what a round's contributions cost, against bare arithmetic on the same sums.

A round at a full 655a table under paytable D: six Progressive Payout Wagers and six Five Card Hand Bonus
Wagers contribute (3 + 1 levels each, so 24 meter events), then the round closes. The model builds
and applies an event per level, validates every change and keeps the round's contributions for a void.

Baseline ("bare sums"): the same micro-cent additions on a plain dict, nothing else, in the same process.
The ratio says how much the model's auditability costs per round; the absolute time says whether it matters
next to a round that takes a minute of play. Replay (rebuilding the meters from the journaled events) is
timed the same way.

    .venv/bin/python bench/meters.py [--rounds 2000]
"""

from __future__ import annotations

import argparse
import time

from controller.core.events import DomainEvent
from controller.games.mississippi_stud.progressives import (
    mississippi_stud_five_card_hand_bonus,
    mississippi_stud_progressive,
)
from controller.progressive.meters import close_round, contribute, seed_missing
from controller.progressive.model import Meters, replay
from controller.progressive.parameters import TableProgressives

SEATS = 6  # 655a.2(a)
PARAMS = TableProgressives(
    progressives=(mississippi_stud_progressive("D", 100), mississippi_stud_five_card_hand_bonus(100))
)


def model(rounds: int) -> tuple[float, list[DomainEvent], Meters]:
    meters, log = seed_missing(Meters(), PARAMS)
    start = time.perf_counter()
    for r in range(rounds):
        rid = f"r{r}"
        for seat in range(1, SEATS + 1):
            meters, events = contribute(meters, PARAMS, "progressive", 100, seat=seat, round_id=rid)
            log += events
            meters, events = contribute(meters, PARAMS, "five_card_hand_bonus", 100, seat=seat, round_id=rid)
            log += events
        meters, events = close_round(meters, rid)
        log += events
    return time.perf_counter() - start, log, meters


def bare(rounds: int) -> float:
    levels = {lv.level: 0 for p in PARAMS.progressives for lv in p.levels}
    rates = [(p.wager, [(lv.level, lv.primary_ppm, lv.reserve_ppm) for lv in p.levels]) for p in PARAMS.progressives]
    start = time.perf_counter()
    for _ in range(rounds):
        for _seat in range(SEATS):
            for _wager, per_level in rates:
                for level, primary, reserve in per_level:
                    levels[level] += 100 * (primary + reserve)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    spent, log, meters = model(args.rounds)
    baseline = bare(args.rounds)
    start = time.perf_counter()
    assert replay(log) == meters
    replayed = time.perf_counter() - start
    per_round = spent / args.rounds * 1e6
    print(f"rounds: {args.rounds}, meter events: {len(log)}")
    print(f"model:    {per_round:8.1f} us a round ({args.rounds / spent:,.0f} rounds/s)")
    print(f"baseline: {baseline / args.rounds * 1e6:8.1f} us a round (bare sums)")
    print(f"ratio model/baseline: {spent / baseline:.0f}x")
    print(f"replay:   {replayed / args.rounds * 1e6:8.1f} us a round ({len(log) / replayed:,.0f} events/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
