"""The enumerations the stud analyses share: every five-card hand's value, how a k-card set grows by one card, and
per four-card set how many fifth cards land on each outcome of a paytable."""

from __future__ import annotations

from functools import cache
from math import comb

import numpy as np
import numpy.typing as npt

from controller.par import combos
from controller.par.evaluator import ValueArray, evaluate, evaluate_chunked, evaluate_three, hand_class

IntArray = npt.NDArray[np.int64]


@cache
def five_card_values() -> ValueArray:
    """The value of each of the 2,598,960 five-card hands, in combos' colex order."""
    values = evaluate_chunked(combos.combinations(5))
    values.flags.writeable = False
    return values


@cache
def children(k: int) -> IntArray:
    """children(k)[i, j]: the colex index of the (k + 1)-card set made of k-card set i and the j-th card not in it."""
    sets = combos.combinations(k).astype(np.int64)
    n = len(sets)
    held = np.zeros((n, 52), dtype=bool)
    held[np.arange(n)[:, None], sets] = True
    others = np.nonzero(~held)[1].reshape(n, 52 - k)
    grown = np.concatenate([np.repeat(sets[:, None, :], 52 - k, axis=1), others[:, :, None]], axis=2)
    out = combos.index_unsorted(grown.reshape(-1, k + 1)).reshape(n, 52 - k)
    out.flags.writeable = False
    return out


def counts_by_four(outcome: IntArray, outcomes: int) -> IntArray:
    """counts[s, o]: of the 48 fifth cards that complete four-card set s, how many make a hand of outcome o
    (`outcome` gives each five-card hand's outcome, in colex order)."""
    hands = combos.combinations(5)
    n4 = comb(52, 4)
    counts = np.zeros(n4 * outcomes, dtype=np.int64)
    for drop in range(5):
        four = combos.index_of(np.delete(hands, drop, axis=1))
        counts += np.bincount(four * outcomes + outcome, minlength=n4 * outcomes)
    return counts.reshape(n4, outcomes)


@cache
def class_counts(size: int) -> IntArray:
    """How many of the C(52, size) hands of 5 to 7 cards fall in each five-card class (rankings.Five). Kept, read-only,
    as five_card_values is: the six-card count takes about a second and each 655a sheet asks for it twice (the Six
    Card Bonus and the main game's notes), `par` for several configs and the par tests many times more."""
    if size == 5:
        out = np.bincount(hand_class(five_card_values()), minlength=10).astype(np.int64)
        out.flags.writeable = False
        return out
    counts = np.zeros(10, dtype=np.int64)
    head = combos.combinations(size - 1)
    # The sets whose highest card is `top`: every (size - 1)-set of lower cards, plus `top`; a block at a time.
    for top in range(size - 1, 52):
        lower = head[: comb(top, size - 1)]
        hands = np.empty((len(lower), size), dtype=np.int8)
        hands[:, :-1] = lower
        hands[:, -1] = top
        counts += np.bincount(hand_class(evaluate(hands)), minlength=10)
    counts.flags.writeable = False
    return counts


def three_card_counts() -> IntArray:
    """How many of the 22,100 three-card hands fall in each three-card class (rankings.Three)."""
    return np.bincount(evaluate_three(combos.combinations(3)), minlength=7).astype(np.int64)
