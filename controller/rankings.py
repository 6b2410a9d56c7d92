"""Poker hand rankings used by the chapters.

Five-card hands (655a.6(b)): the best five of 5, 6 or 7 cards, the ace low only in A-2-3-4-5.
Three-card hands (655a.6(c)): mini-royal, straight flush, trips, straight (A-2-3 counts), flush, pair.
Six-card hands for the Six Card Bonus (655a.6(d)): the five-card classes plus the six-card royal flush.
Every evaluator refuses duplicate cards (cards.require_distinct).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from itertools import combinations

from controller.cards import rank_value, require_distinct, suit_of


class Five(IntEnum):
    HIGH_CARD = 0
    PAIR = 1
    TWO_PAIR = 2
    THREE_OF_A_KIND = 3
    STRAIGHT = 4
    FLUSH = 5
    FULL_HOUSE = 6
    FOUR_OF_A_KIND = 7
    STRAIGHT_FLUSH = 8
    ROYAL_FLUSH = 9


class Three(IntEnum):
    HIGH_CARD = 0
    PAIR = 1
    FLUSH = 2
    STRAIGHT = 3
    THREE_OF_A_KIND = 4
    STRAIGHT_FLUSH = 5
    MINI_ROYAL = 6


class Six(IntEnum):
    """655a.6(d): the Six Card Bonus classes, best five of six, plus the six-card royal flush."""

    HIGH_CARD = 0
    PAIR = 1
    TWO_PAIR = 2
    THREE_OF_A_KIND = 3
    STRAIGHT = 4
    FLUSH = 5
    FULL_HOUSE = 6
    FOUR_OF_A_KIND = 7
    STRAIGHT_FLUSH = 8
    ROYAL_FLUSH = 9
    SIX_CARD_ROYAL_FLUSH = 10


@dataclass(frozen=True, slots=True, order=True)
class FiveCardHand:
    cls: Five
    tiebreak: tuple[int, ...]  # ranks in order of significance

    @property
    def name(self) -> str:
        return self.cls.name.lower()

    @property
    def pair_rank(self) -> int | None:
        """Rank of the pair in a one-pair hand (655a.11(h) pays by it)."""
        return self.tiebreak[0] if self.cls is Five.PAIR else None


def _straight_high(values: Sequence[int]) -> int | None:
    """High card of a straight over distinct values, 5 for A-2-3-4-5 (655a.6(a)), else None."""
    v = sorted(set(values), reverse=True)
    if len(v) != len(values):
        return None
    if all(v[i] - 1 == v[i + 1] for i in range(len(v) - 1)):
        return v[0]
    if v == [14, *range(len(v), 1, -1)]:  # ace completes a wheel only at the bottom
        return len(v)
    return None


def _rank_five(cards: Sequence[str]) -> FiveCardHand:
    values = [rank_value(c) for c in cards]
    flush = len({suit_of(c) for c in cards}) == 1
    high = _straight_high(values)
    if high is not None and flush:
        return FiveCardHand(Five.ROYAL_FLUSH if high == 14 else Five.STRAIGHT_FLUSH, (high,))
    counts = Counter(values)
    # Group ranks by (count, rank) so the tiebreak reads quads/trips/pairs first, then kickers.
    groups = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    shape = [n for _, n in groups]
    order = tuple(r for r, _ in groups)
    if shape[0] == 4:
        return FiveCardHand(Five.FOUR_OF_A_KIND, order)
    if shape == [3, 2]:
        return FiveCardHand(Five.FULL_HOUSE, order)
    if flush:
        return FiveCardHand(Five.FLUSH, order)
    if high is not None:
        return FiveCardHand(Five.STRAIGHT, (high,))
    if shape[0] == 3:
        return FiveCardHand(Five.THREE_OF_A_KIND, order)
    if shape[:2] == [2, 2]:
        return FiveCardHand(Five.TWO_PAIR, order)
    if shape[0] == 2:
        return FiveCardHand(Five.PAIR, order)
    return FiveCardHand(Five.HIGH_CARD, order)


def best_five(cards: Sequence[str]) -> FiveCardHand:
    """The highest-ranking five-card hand from 5, 6 or 7 distinct cards."""
    hand = require_distinct(cards)
    if not 5 <= len(hand) <= 7:
        raise ValueError(f"a five-card hand is formed from 5 to 7 cards, not {len(hand)}")
    return max(_rank_five(c) for c in combinations(hand, 5))


def rank_three(cards: Sequence[str]) -> Three:
    """655a.6(c) three-card class."""
    hand = require_distinct(cards)
    if len(hand) != 3:
        raise ValueError(f"a three-card hand has 3 cards, not {len(hand)}")
    values = [rank_value(c) for c in hand]
    flush = len({suit_of(c) for c in hand}) == 1
    high = _straight_high(values)
    if high is not None and flush:
        return Three.MINI_ROYAL if sorted(values) == [12, 13, 14] else Three.STRAIGHT_FLUSH
    if len(set(values)) == 1:
        return Three.THREE_OF_A_KIND
    if high is not None:
        return Three.STRAIGHT
    if flush:
        return Three.FLUSH
    if len(set(values)) == 2:
        return Three.PAIR
    return Three.HIGH_CARD


@dataclass(frozen=True, slots=True)
class SixCardHand:
    cls: Six
    suit: str | None  # the suit of a six-card royal flush (paytable E pays diamonds apart)

    @property
    def name(self) -> str:
        return self.cls.name.lower()


def rank_six(cards: Sequence[str]) -> SixCardHand:
    """655a.6(d): the Six Card Bonus hand of the player's two cards and the four bonus cards."""
    hand = require_distinct(cards)
    if len(hand) != 6:
        raise ValueError(f"a Six Card Bonus hand has 6 cards, not {len(hand)}")
    suits = {suit_of(c) for c in hand}
    if len(suits) == 1 and sorted(rank_value(c) for c in hand) == [9, 10, 11, 12, 13, 14]:
        return SixCardHand(Six.SIX_CARD_ROYAL_FLUSH, suit_of(hand[0]))
    return SixCardHand(Six(best_five(hand).cls.value), None)
