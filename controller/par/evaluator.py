"""A batch hand evaluator: whole arrays of 5-, 6- or 7-card hands ranked at once with precomputed tables (numpy).

controller.core.rankings stays the reference that settlement uses; this one exists for the exact analyses, which
rank every hand of a game (tests/par/test_evaluator.py checks both agree on every five-card hand and on seeded
samples of six- and seven-card ones).

Cards are the indices of controller.core.cards.STANDARD_DECK: card i has rank 2 + i % 13 and suit i // 13.

A hand's value is one integer ordered as hands rank: the 655a.6(b) class in bits 20 and up, then the ranks that
break ties, four bits each, most significant first (`encode` packs a rankings.FiveCardHand the same way). It is
read from two tables:
- the ranks alone (no flush possible, or a flush beaten by quads or a full house): the sum of a per-rank weight
  over the cards is distinct for every multiset of 5, 6 or 7 ranks with at most four of each, so it indexes a
  table directly (the weights are those of SKPokerEval; `_rank_tables` checks they collide nowhere);
- a flush: the 13-bit mask of the ranks held in the flush suit indexes a table of 8,192.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from itertools import combinations_with_replacement

import numpy as np
import numpy.typing as npt

from controller.core.rankings import Five, FiveCardHand, Three

IntArray = npt.NDArray[np.int64]
ValueArray = npt.NDArray[np.int32]
HandArray = npt.NDArray[np.integer]

CLASS_SHIFT = 20
# Per-rank weights, 2 .. A, whose sums tell apart every multiset of up to 7 ranks with at most 4 of a rank.
RANK_WEIGHTS = (0, 1, 5, 22, 98, 453, 2031, 8698, 22854, 83661, 262349, 636345, 1479181)
_NO_VALUE = -1


def pack(cls: int, tiebreak: Sequence[int]) -> int:
    """The value of a hand of class `cls` whose tie-breaking ranks (2..14) are `tiebreak`, most significant first."""
    value = 0
    for i in range(5):
        value = value << 4 | (tiebreak[i] if i < len(tiebreak) else 0)
    return cls << CLASS_SHIFT | value


def encode(hand: FiveCardHand) -> int:
    """The batch evaluator's value of a hand ranked by controller.core.rankings."""
    return pack(int(hand.cls), hand.tiebreak)


def hand_class(values: ValueArray) -> ValueArray:
    """The 655a.6(b) class (rankings.Five) of each value."""
    return values >> CLASS_SHIFT


def pair_rank(values: ValueArray) -> ValueArray:
    """The rank of the pair of one-pair values (the first tie-break rank), for paytables paying by it."""
    return (values >> 16) & 0xF


def _straight_high(ranks: set[int]) -> int:
    """High card of the highest five-rank run (5 for A-2-3-4-5), else 0."""
    for high in range(14, 5, -1):
        if all(r in ranks for r in range(high - 4, high + 1)):
            return high
    return 5 if {14, 2, 3, 4, 5} <= ranks else 0


def _ranks_value(ranks: Sequence[int]) -> int:
    """The best five-card hand of ranks 2..14 (a multiset) when no flush counts."""
    counts = {r: ranks.count(r) for r in set(ranks)}
    desc = sorted(counts, reverse=True)
    of = {n: [r for r in desc if counts[r] == n] for n in (1, 2, 3, 4)}
    if of[4]:
        return pack(Five.FOUR_OF_A_KIND, (of[4][0], max(r for r in desc if r != of[4][0])))
    if of[3] and (len(of[3]) > 1 or of[2]):
        return pack(Five.FULL_HOUSE, (of[3][0], max(of[3][1:2] + of[2][:1])))
    high = _straight_high(set(desc))
    if high:
        return pack(Five.STRAIGHT, (high,))
    if of[3]:
        return pack(Five.THREE_OF_A_KIND, (of[3][0], *of[1][:2]))
    if len(of[2]) > 1:
        return pack(Five.TWO_PAIR, (of[2][0], of[2][1], max(of[2][2:3] + of[1][:1])))
    if of[2]:
        return pack(Five.PAIR, (of[2][0], *of[1][:3]))
    return pack(Five.HIGH_CARD, of[1][:5])


@cache
def _rank_tables() -> dict[int, npt.NDArray[np.int32]]:
    """Per hand size, the value of each rank multiset by its weight sum."""
    weights = RANK_WEIGHTS
    tables: dict[int, npt.NDArray[np.int32]] = {}
    for size in (5, 6, 7):
        table = np.full(weights[-1] * 4 + weights[-2] * (size - 4) + 1, _NO_VALUE, dtype=np.int32)
        for combo in combinations_with_replacement(range(13), size):
            if any(combo.count(r) > 4 for r in set(combo)):
                continue
            key = sum(weights[r] for r in combo)
            value = _ranks_value([r + 2 for r in combo])
            if table[key] not in (_NO_VALUE, value):
                raise AssertionError(f"rank weights collide at {combo}")  # cannot happen with RANK_WEIGHTS
            table[key] = value
        tables[size] = table
    return tables


@cache
def _flush_table() -> npt.NDArray[np.int32]:
    """For each 13-bit mask of the ranks held in one suit, the best flush or straight flush (or -1 under 5 cards)."""
    table = np.full(1 << 13, _NO_VALUE, dtype=np.int32)
    for mask in range(1 << 13):
        ranks = [r + 2 for r in range(13) if mask >> r & 1]
        if len(ranks) < 5:
            continue
        high = _straight_high(set(ranks))
        if high == 14:
            table[mask] = pack(Five.ROYAL_FLUSH, (14,))
        elif high:
            table[mask] = pack(Five.STRAIGHT_FLUSH, (high,))
        else:
            table[mask] = pack(Five.FLUSH, sorted(ranks, reverse=True)[:5])
    return table


_CARD_RANK = np.arange(52, dtype=np.int64) % 13
_CARD_SUIT = np.arange(52, dtype=np.int64) // 13
_CARD_WEIGHT = np.array([RANK_WEIGHTS[r] for r in _CARD_RANK], dtype=np.int32)
# A card of suit s adds 1 to the s-th nibble: a nibble reaching 5 is a flush, seen at once as bit 3 of nibble + 3
# (at most 7 + 3, so no carry into the next nibble).
_CARD_SUIT_COUNT = (1 << (4 * _CARD_SUIT)).astype(np.int32)
_FLUSH_TEST = 0x3333
_FLUSH_BITS = 0x8888
# The rank bit of a card in its suit's own 16-bit field, for the few hands that hold a flush.
_CARD_SUIT_BIT = (1 << _CARD_RANK) << (16 * _CARD_SUIT)


def evaluate(hands: HandArray) -> ValueArray:
    """The value of each row of `hands` (n x 5, 6 or 7 card indices, distinct within a row)."""
    size = hands.shape[1]
    if not 5 <= size <= 7:
        raise ValueError(f"a five-card hand is formed from 5 to 7 cards, not {size}")
    # Column by column: numpy reduces a short axis slowly, and adds whole columns fast.
    columns = [hands[:, i].astype(np.intp) for i in range(size)]
    key = _CARD_WEIGHT[columns[0]]
    suits = _CARD_SUIT_COUNT[columns[0]]
    for column in columns[1:]:
        key = key + _CARD_WEIGHT[column]
        suits = suits + _CARD_SUIT_COUNT[column]
    values: ValueArray = _rank_tables()[size][key]
    flushes = np.flatnonzero((suits + _FLUSH_TEST) & _FLUSH_BITS)
    if flushes.size:
        bits = _CARD_SUIT_BIT[hands[flushes].astype(np.intp)].sum(axis=1)
        best = values[flushes]
        flush_table = _flush_table()
        for suit in range(4):
            # With at most 7 cards one suit at most holds 5; the others index entries of -1.
            np.maximum(best, flush_table[(bits >> (16 * suit)) & 0x1FFF], out=best)
        values[flushes] = best
    return values


def evaluate_chunked(hands: HandArray, chunk: int = 1 << 20) -> ValueArray:
    """evaluate() a chunk at a time, to bound the temporaries of very large arrays."""
    out = np.empty(len(hands), dtype=np.int32)
    for start in range(0, len(hands), chunk):
        out[start : start + chunk] = evaluate(hands[start : start + chunk])
    return out


@cache
def _three_table() -> npt.NDArray[np.int8]:
    """655a.6(c) class of every ordered triple of card indices (52**3 entries; repeated cards map to -1)."""
    table = np.full(52**3, -1, dtype=np.int8)
    for a in range(52):
        for b in range(52):
            for c in range(52):
                if a in (b, c) or b == c:
                    continue
                table[(a * 52 + b) * 52 + c] = _three_class(a, b, c)
    return table


def _three_class(a: int, b: int, c: int) -> Three:
    ranks = sorted(int(_CARD_RANK[x]) + 2 for x in (a, b, c))
    flush = _CARD_SUIT[a] == _CARD_SUIT[b] == _CARD_SUIT[c]
    run = (ranks[2] - ranks[0] == 2 and len(set(ranks)) == 3) or ranks == [2, 3, 14]
    if run and flush:
        return Three.MINI_ROYAL if ranks == [12, 13, 14] else Three.STRAIGHT_FLUSH
    if len(set(ranks)) == 1:
        return Three.THREE_OF_A_KIND
    if run:
        return Three.STRAIGHT
    if flush:
        return Three.FLUSH
    return Three.PAIR if len(set(ranks)) == 2 else Three.HIGH_CARD


def evaluate_three(hands: HandArray) -> IntArray:
    """The 655a.6(c) class (rankings.Three) of each row of `hands` (n x 3 card indices)."""
    cards = hands.astype(np.int64)
    classes: IntArray = _three_table()[(cards[:, 0] * 52 + cards[:, 1]) * 52 + cards[:, 2]].astype(np.int64)
    return classes
