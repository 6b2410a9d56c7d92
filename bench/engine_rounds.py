"""Rounds per second of the pure 655a engine, against the settlement maths of the same rounds alone.

Baseline ("settle-only"): for each round, rank and settle every seat's hand, Three Card Bonus and Six
Card Bonus with controller.games.mississippi_stud.hands, no state machine. Measured ("engine"): the same rounds
stepped through MississippiStudEngine input by input (wagers, lock-out, stacks, decisions, settlement).
The ratio is what the state machine, its state copies and its events cost on top of the maths.

    .venv/bin/python bench/engine_rounds.py [--rounds N] [--seed S]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable

from controller.core.cards import STANDARD_DECK
from controller.core.events import DomainEvent
from controller.engine.commands import DispenseStack, LockSeat, RemoveStub, Shuffle, UnlockSeat
from controller.engine.inputs import Input, OpenTable
from controller.engine.round import RoundEngine
from controller.engine.state import TableState
from controller.games.mississippi_stud import hands as ms
from controller.games.mississippi_stud.paytables import THREE_CARD_BONUS
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.spec import MississippiStudSpec
from drivers.interfaces import (
    ButtonPressed,
    LockAcknowledged,
    ShuffleCompleted,
    StackDispensed,
    StubRemoved,
    WagerDetected,
)

SEATS = 6
RULES = MississippiStudRules(chapter="655a", three_card_bonus_paytable="A", six_card_bonus_paytable="C")


def deals(n: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        d = list(STANDARD_DECK)
        rng.shuffle(d)
        out.append(d)
    return out


def settle_only(decks: list[list[str]]) -> None:
    limit = ms.payout_limit(RULES.ante_min_cents)
    for d in decks:
        seats = [d[2 * i : 2 * i + 2] for i in range(SEATS)]
        six, community = d[12:16], d[16:19]
        for cards in seats:
            ms.settle_hand(cards, community, {"ante": 500, "street_3": 500, "street_4": 500, "street_5": 500}, limit)
            ms.settle_three_card_bonus(community, 100, THREE_CARD_BONUS["A"])
            ms.settle_six_card_bonus(cards, six, 100, "C")


# Per step: (state after, events of the step) -> None; bench/critical_state.py stores the state with it.
Hook = Callable[[TableState, list[DomainEvent]], None]


def play(decks: list[list[str]], hook: Hook | None = None) -> int:
    """Every round stepped through the engine (the devices answered at once); returns the steps taken."""
    engine = RoundEngine(MississippiStudSpec(), RULES)
    state = TableState("bench")
    pending = list(decks)
    shoe: list[str] = []
    steps = 0

    def feed(inp: Input) -> None:
        nonlocal state, shoe, steps
        queue = [inp]
        while queue:
            state, effects = engine.step(state, queue.pop(0))
            steps += 1
            if hook is not None:
                hook(state, [e for e in effects if isinstance(e, DomainEvent)])
            for e in effects:
                match e:
                    case Shuffle():
                        shoe = pending.pop(0) if pending else list(STANDARD_DECK)
                        queue.append(ShuffleCompleted("shuffler", card_count=52))
                    case DispenseStack():
                        queue.append(StackDispensed("shoe", cards=tuple(shoe[:2])))
                        shoe = shoe[2:]
                    case RemoveStub():
                        queue.append(StubRemoved("shoe", cards=tuple(shoe)))
                    case LockSeat(seat=seat) | UnlockSeat(seat=seat):
                        queue.append(
                            LockAcknowledged(f"wager_station_{seat}", seat=seat, locked=isinstance(e, LockSeat))
                        )

    feed(OpenTable())
    for _ in decks:
        for seat in range(1, SEATS + 1):
            for spot, amount in (("ante", 500), ("three_card_bonus", 100), ("six_card_bonus", 100)):
                feed(WagerDetected(f"wager_station_{seat}", seat=seat, spot=spot, amount_cents=amount))
        feed(ButtonPressed("dealer_panel", button="no_more_bets"))
        for street in ("street_3", "street_4", "street_5"):
            for seat in range(1, SEATS + 1):
                feed(WagerDetected(f"wager_station_{seat}", seat=seat, spot=street, amount_cents=500))
    return steps


def engine_rounds(decks: list[list[str]]) -> None:
    play(decks)


def timed(fn: Callable[[list[list[str]]], object], decks: list[list[str]]) -> float:
    start = time.perf_counter()
    fn(decks)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    decks = deals(args.rounds, args.seed)
    print(f"{args.rounds} six-seat rounds, every seat with Ante, both bonuses and all three streets", file=sys.stderr)
    base = timed(settle_only, decks)
    print(f"settle-only (baseline): {args.rounds / base:10.0f} rounds/s", flush=True)
    eng = timed(engine_rounds, decks)
    print(f"engine:                 {args.rounds / eng:10.0f} rounds/s", flush=True)
    print(f"ratio engine/settle-only time: {eng / base:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
