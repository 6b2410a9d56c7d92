"""Poker hand rankings used by the chapters.

Five-card hands (655a.6(b)): the best five of 5, 6 or 7 cards, the ace low only in A-2-3-4-5.
Three-card hands (655a.6(c)): mini-royal, straight flush, trips, straight (A-2-3 counts), flush, pair.
Six-card hands for the Six Card Bonus (655a.6(d)): the five-card classes plus the six-card royal flush.
Every evaluator refuses duplicate cards (cards.require_distinct).

The best five cards are read straight off the hand's rank counts and per-suit rank bitmasks instead of ranking
all 21 five-card subsets of seven cards: a settlement evaluates several hands per seat per round, and the
simulations that check paytables evaluate millions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from controller.core.cards import STANDARD_DECK, SUITS, rank_value, require_distinct


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
    """A five-card Poker hand's rank (655a.6(b)): its class, then the ranks that break a tie; the better is greater."""

    cls: Five
    tiebreak: tuple[int, ...]  # ranks in order of significance

    @property
    def name(self) -> str:
        return self.cls.name.lower()

    @property
    def pair_rank(self) -> int | None:
        """Rank of the pair in a one-pair hand (655a.11(h) pays by it)."""
        return self.tiebreak[0] if self.cls is Five.PAIR else None


# A canonical card string is looked up, not parsed: parsing every card of every hand was most of the old cost.
_CARD: dict[str, tuple[int, int]] = {c: (rank_value(c), SUITS.index(c[1])) for c in STANDARD_DECK}

# Rank r sets bit r of a rank bitmask; the ace also sets bit 1, so that it can end a run only as the low card of
# A-2-3(-4-5) or the high card of Q-K-A / T-J-Q-K-A, never in the middle of K-A-2 (655a.6(a)).
_BIT = [1 << r for r in range(15)]
_BIT[14] |= 1 << 1
_DESCENDING = range(14, 1, -1)
_SIX_CARD_ROYAL = [9, 10, 11, 12, 13, 14]


def _distinct(cards: Sequence[str]) -> list[tuple[int, int]]:
    """(rank, suit index) of each card, refusing foreign and duplicate cards as cards.require_distinct does."""
    try:
        hand = [_CARD[c] for c in cards]
    except KeyError:
        # '10d', 'as', ' Kh' and foreign cards: require_distinct parses the first and raises CardError for the rest.
        return [_CARD[c] for c in require_distinct(cards)]
    # Canonical strings map one-to-one to (rank, suit), so a repeated pair is a repeated card.
    if len(set(hand)) != len(hand):
        require_distinct(cards)  # raises, with the CardError message that names the duplicates
        raise AssertionError("require_distinct accepted duplicate cards")
    return hand


def _run_high(bits: int, length: int) -> int:
    """High card of the highest run of `length` consecutive ranks in a rank bitmask (5 for the wheel), else 0."""
    run = bits
    for shift in range(1, length):
        run &= bits >> shift
    # Bit i of `run` survives when ranks i .. i+length-1 are all present.
    return run.bit_length() + length - 2 if run else 0


def _evaluate(hand: list[tuple[int, int]]) -> FiveCardHand:
    """The best five-card hand of 5 to 7 distinct cards given as (rank, suit index)."""
    counts = [0] * 15
    suit_bits = [0, 0, 0, 0]
    suit_cards = [0, 0, 0, 0]
    for r, s in hand:
        counts[r] += 1
        suit_bits[s] |= _BIT[r]
        suit_cards[s] += 1
    # With at most 7 cards only one suit can hold 5 of them.
    flush_bits = next((suit_bits[s] for s in range(4) if suit_cards[s] >= 5), 0)
    if flush_bits:
        high = _run_high(flush_bits, 5)
        if high:
            return FiveCardHand(Five.ROYAL_FLUSH if high == 14 else Five.STRAIGHT_FLUSH, (high,))

    # by_count[n]: the ranks held exactly n times, highest first, which is the order kickers are compared in.
    by_count: list[list[int]] = [[], [], [], [], []]
    for r in _DESCENDING:
        by_count[counts[r]].append(r)
    _, singles, pairs, trips, quads = by_count

    if quads:
        kicker = next(r for r in _DESCENDING if counts[r] and r != quads[0])
        return FiveCardHand(Five.FOUR_OF_A_KIND, (quads[0], kicker))
    if trips and (len(trips) > 1 or pairs):
        # A second set of trips can serve as the pair, and beats a lower pair.
        return FiveCardHand(Five.FULL_HOUSE, (trips[0], max(trips[1:2] + pairs[:1])))
    if flush_bits:
        return FiveCardHand(Five.FLUSH, tuple(r for r in _DESCENDING if flush_bits & 1 << r)[:5])
    high = _run_high(suit_bits[0] | suit_bits[1] | suit_bits[2] | suit_bits[3], 5)
    if high:
        return FiveCardHand(Five.STRAIGHT, (high,))
    if trips:
        return FiveCardHand(Five.THREE_OF_A_KIND, (trips[0], *singles[:2]))
    if len(pairs) > 1:
        # A third pair is not played as a pair, but its rank can be the kicker.
        return FiveCardHand(Five.TWO_PAIR, (pairs[0], pairs[1], max(pairs[2:3] + singles[:1])))
    if pairs:
        return FiveCardHand(Five.PAIR, (pairs[0], *singles[:3]))
    return FiveCardHand(Five.HIGH_CARD, tuple(singles[:5]))


def best_five(cards: Sequence[str]) -> FiveCardHand:
    """The highest-ranking five-card hand from 5, 6 or 7 distinct cards."""
    hand = _distinct(cards)
    if not 5 <= len(hand) <= 7:
        raise ValueError(f"a five-card hand is formed from 5 to 7 cards, not {len(hand)}")
    return _evaluate(hand)


def rank_three(cards: Sequence[str]) -> Three:
    """655a.6(c) three-card class."""
    hand = _distinct(cards)
    if len(hand) != 3:
        raise ValueError(f"a three-card hand has 3 cards, not {len(hand)}")
    (r1, s1), (r2, s2), (r3, s3) = hand
    flush = s1 == s2 == s3
    distinct_ranks = len({r1, r2, r3})
    high = _run_high(_BIT[r1] | _BIT[r2] | _BIT[r3], 3)
    if high and flush:
        return Three.MINI_ROYAL if high == 14 else Three.STRAIGHT_FLUSH
    if distinct_ranks == 1:
        return Three.THREE_OF_A_KIND
    if high:
        return Three.STRAIGHT
    if flush:
        return Three.FLUSH
    if distinct_ranks == 2:
        return Three.PAIR
    return Three.HIGH_CARD


@dataclass(frozen=True, slots=True)
class SixCardHand:
    """The Six Card Bonus hand of the player's two cards and the four bonus cards (655a.6(d))."""

    cls: Six
    suit: str | None  # the suit of a six-card royal flush (paytable E pays diamonds apart)

    @property
    def name(self) -> str:
        return self.cls.name.lower()


def rank_six(cards: Sequence[str]) -> SixCardHand:
    """655a.6(d): the Six Card Bonus hand of the player's two cards and the four bonus cards."""
    hand = _distinct(cards)
    if len(hand) != 6:
        raise ValueError(f"a Six Card Bonus hand has 6 cards, not {len(hand)}")
    suit = hand[0][1]
    if all(s == suit for _, s in hand) and sorted(r for r, _ in hand) == _SIX_CARD_ROYAL:
        return SixCardHand(Six.SIX_CARD_ROYAL_FLUSH, SUITS[suit])
    return SixCardHand(Six(_evaluate(hand).cls.value), None)
