"""Five-card player against five-card dealer: for every player hand, how many of the C(47, 5) = 1,533,939 dealer hands
sharing no card with it rank below a given value, counted exactly without pairing 2.6M x 1.5M hands.

Inclusion-exclusion over the player's cards: the dealer hands disjoint from P that rank below t are
sum over S subset of P of (-1)^|S| #{hands H containing S, rank(H) < t}. The right-hand counts come from tables built
once from the batch evaluator's exact values of all 2,598,960 hands, ranked densely (7,462 values):
- |S| = 0, 1, 2: cumulative counts per subset and rank (1 + 52 + 1,326 rows of 7,463);
- |S| = 3, 4: each hand's key (subset index x ranks + rank), sorted, so a count is two binary searches (every
  triple is in 1,176 hands, every quad in 48, so the block of a subset starts at a known place);
- |S| = 5: the player's own hand.
Player hands are taken up to the 24 permutations of suits (134,459 classes, each with its weight): suits renamed
change neither a hand's value nor any count against the other cards. tests/par/test_chapter_684a.py checks the counts
against every dealer hand, evaluated one by one, for a seeded sample of player hands.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import combinations, permutations
from math import comb

import numpy as np
import numpy.typing as npt

from controller.core.invariant import present
from controller.par import combos, deals

IntArray = npt.NDArray[np.int64]
DEALER_HANDS = comb(47, 5)
_CONTAINING = {3: comb(49, 2), 4: 48}  # hands holding a given triple, a given quad


@dataclass(frozen=True)
class Ranked:
    """Every five-card hand's dense rank (0 the lowest; equal hands equal) and each rank's evaluator value."""

    rank: IntArray  # per colex hand (combos.combinations(5) order)
    values: npt.NDArray[np.int32]  # per dense rank, ascending


@cache
def ranked() -> Ranked:
    values, rank = np.unique(deals.five_card_values(), return_inverse=True)
    return Ranked(rank.astype(np.int64).reshape(-1), values.astype(np.int32))


@dataclass(frozen=True)
class _Tables:
    ranks: int
    cum0: IntArray  # (ranks + 1,)
    cum1: npt.NDArray[np.int32]  # (52, ranks + 1)
    cum2: npt.NDArray[np.int32]  # (1326, ranks + 1)
    sorted3: npt.NDArray[np.int32]  # triple index x ranks + rank, of every (hand, triple in it)
    sorted4: npt.NDArray[np.int32]


def _cumulative(keys: IntArray, rows: int, ranks: int) -> npt.NDArray[np.int32]:
    counts = np.bincount(keys, minlength=rows * ranks).reshape(rows, ranks)
    out = np.zeros((rows, ranks + 1), dtype=np.int32)
    np.cumsum(counts, axis=1, out=out[:, 1:])
    return out


@cache
def _tables() -> _Tables:
    hands = combos.combinations(5)
    r = ranked()
    ranks = len(r.values)
    rank = r.rank
    cum0 = np.concatenate([[0], np.cumsum(np.bincount(rank, minlength=ranks))]).astype(np.int64)
    keys1 = np.concatenate([hands[:, j].astype(np.int64) * ranks + rank for j in range(5)])
    cum1 = _cumulative(keys1, 52, ranks)
    counts2 = np.zeros(comb(52, 2) * ranks, dtype=np.int64)
    for pos in combinations(range(5), 2):
        counts2 += np.bincount(combos.index_of(hands[:, pos]) * ranks + rank, minlength=len(counts2))
    cum2 = np.zeros((comb(52, 2), ranks + 1), dtype=np.int32)
    np.cumsum(counts2.reshape(-1, ranks), axis=1, out=cum2[:, 1:])
    sorted_keys = {}
    for k in (3, 4):
        # Below 2**31: 270,725 quads x 7,462 ranks.
        parts = [(combos.index_of(hands[:, pos]) * ranks + rank).astype(np.int32) for pos in combinations(range(5), k)]
        keys = np.concatenate(parts)
        keys.sort()
        sorted_keys[k] = keys
    return _Tables(ranks, cum0, cum1, cum2, sorted_keys[3], sorted_keys[4])


def below(players: npt.NDArray[np.integer], own_rank: IntArray, t: IntArray) -> IntArray:
    """For each player hand (rows of 5 ascending card indices, own_rank its dense rank), how many dealer hands sharing
    no card with it have a dense rank below t (0 .. ranks)."""
    tab = _tables()
    t = t.astype(np.int64)
    total = tab.cum0[t].copy()
    cards = players.astype(np.int64)
    for j in range(5):
        total -= tab.cum1[cards[:, j], t]
    for pair in combinations(range(5), 2):
        total += tab.cum2[combos.index_of(cards[:, pair]), t]
    for k, table, sign in ((3, tab.sorted3, -1), (4, tab.sorted4, 1)):
        for pos in combinations(range(5), k):
            idx = combos.index_of(cards[:, pos])
            found = np.searchsorted(table, (idx * tab.ranks + t).astype(np.int32)) - idx * _CONTAINING[k]
            total += sign * found
    total -= own_rank < t
    return total


@dataclass(frozen=True)
class PlayerClasses:
    """The five-card hands up to suit permutation: a representative of each, its weight, and each hand's class."""

    hands: npt.NDArray[np.int8]  # (classes, 5) a representative, ascending cards
    weight: IntArray  # hands in the class (they add up to 2,598,960)
    rank: IntArray  # dense rank of the class's hands
    of_hand: IntArray  # per colex hand, its class


@cache
def player_classes() -> PlayerClasses:
    hands = combos.combinations(5)
    rank_of = hands.astype(np.int64) % 13
    suit_of = hands.astype(np.int64) // 13
    canonical = None
    for perm in permutations(range(4)):
        renamed = np.array(perm, dtype=np.int64)[suit_of] * 13 + rank_of
        mask = np.zeros(len(hands), dtype=np.int64)
        for j in range(5):
            mask |= np.left_shift(1, renamed[:, j])
        canonical = mask if canonical is None else np.minimum(canonical, mask)
    canonical = present(canonical, "the canonical masks (24 suit permutations)")
    _, first, of_hand, weight = np.unique(canonical, return_index=True, return_inverse=True, return_counts=True)
    return PlayerClasses(
        hands[first], weight.astype(np.int64), ranked().rank[first], of_hand.astype(np.int64).reshape(-1)
    )


def buckets(qualify_rank: int) -> IntArray:
    """Per player class, the dealer hands disjoint from it: columns 0 does not qualify (dense rank below
    `qualify_rank`), 1 qualifies and ranks lower than the player's, 2 ties it, 3 ranks higher."""
    pc = player_classes()
    n = len(pc.weight)
    own = pc.rank
    q = np.full(n, qualify_rank, dtype=np.int64)
    at_or_above = np.maximum(own, q)
    above = np.maximum(own + 1, q)
    counted = below(np.concatenate([pc.hands] * 3), np.concatenate([own] * 3), np.concatenate([q, at_or_above, above]))
    not_q, lower_end, tie_end = counted[:n], counted[n : 2 * n], counted[2 * n :]
    out = np.stack([not_q, lower_end - not_q, tie_end - lower_end, DEALER_HANDS - tie_end], axis=1)
    if (out < 0).any():
        raise AssertionError("a negative dealer count: the inclusion-exclusion tables are wrong")  # a bug
    return out
