"""Throughput of the hand evaluators against eval7, on the same seeded 7-card and 5-card hands.

Two of ours: controller.par.evaluator.evaluate (the batch evaluator the par sheets use: a whole numpy array of hands
per call, precomputed tables) and controller.core.rankings.best_five (the scalar reference settlement uses).

Baseline: eval7 (https://pypi.org/project/eval7/, a C extension, in the `test` extra), called as a
caller of it would: eval7.evaluate on a list of eval7.Card. Ours is called as the controller calls it, on card
strings, so its time includes the duplicate check. The ratio ours/eval7 is of hands per second: below 1 means
slower than eval7.

Run:  .venv/bin/python bench/evaluator.py [--hands N] [--seed S]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import eval7
import numpy as np

from controller.core.cards import STANDARD_DECK
from controller.core.rankings import best_five
from controller.par.evaluator import evaluate

CHUNK = 50_000  # hands between progress lines


def throughput(label: str, evaluate: Callable[[Any], object], hands: Sequence[Any]) -> float:
    """Hands per second over all of `hands`, timing only the evaluation calls."""
    elapsed = 0.0
    for start in range(0, len(hands), CHUNK):
        chunk = hands[start : start + CHUNK]
        t0 = time.perf_counter()
        for hand in chunk:
            evaluate(hand)
        elapsed += time.perf_counter() - t0
        done = start + len(chunk)
        print(f"  {label}: {done:,}/{len(hands):,} hands, {elapsed:.2f} s", flush=True)
    return len(hands) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=200_000, help="hands per size (default 200,000)")
    parser.add_argument("--seed", type=int, default=2024, help="random seed for the hands (default 2024)")
    args = parser.parse_args()

    e7_card = {c: eval7.Card(c) for c in STANDARD_DECK}
    rng = random.Random(args.seed)
    results = []
    evaluate(np.arange(7, dtype=np.int8).reshape(1, 7))  # builds the tables, outside the timing
    for size in (7, 5):
        hands = [rng.sample(STANDARD_DECK, size) for _ in range(args.hands)]
        e7_hands = [[e7_card[c] for c in hand] for hand in hands]  # converted outside the timing, once
        batch = np.array([[STANDARD_DECK.index(c) for c in hand] for hand in hands], dtype=np.int8)
        print(f"{size}-card hands, {args.hands:,} of them (seed {args.seed}):", flush=True)
        batched = throughput("batch ", evaluate, [batch[i : i + CHUNK] for i in range(0, len(batch), CHUNK)])
        batched *= len(batch) / -(-len(batch) // CHUNK)  # throughput counted calls, each of a chunk of hands
        scalar = throughput("scalar", best_five, hands)
        theirs = throughput("eval7 ", eval7.evaluate, e7_hands)
        results.append((size, batched, scalar, theirs))

    print()
    print(
        f"{'cards':>5}  {'batch hands/s':>14}  {'scalar hands/s':>14}  {'eval7 hands/s':>14}"
        f"  {'batch/eval7':>11}  {'scalar/eval7':>12}"
    )
    for size, batched, scalar, theirs in results:
        print(
            f"{size:>5}  {batched:>14,.0f}  {scalar:>14,.0f}  {theirs:>14,.0f}"
            f"  {batched / theirs:>11.2f}  {scalar / theirs:>12.3f}"
        )


if __name__ == "__main__":
    main()
