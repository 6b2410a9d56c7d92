"""Every five-card and every three-card hand of one deck, against the published class counts.

The five-card loop runs all 2,598,960 hands through the public best_five (about 10-15 s here): the counts are
only evidence for the code path the controller uses if that path is the one enumerated.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import pytest

from controller.core.cards import STANDARD_DECK
from controller.core.rankings import Five, FiveCardHand, Three, best_five, rank_three

# The standard counts of the 2,598,960 five-card hands (C(52, 5)).
FIVE_CARD_COUNTS = {
    Five.ROYAL_FLUSH: 4,
    Five.STRAIGHT_FLUSH: 36,
    Five.FOUR_OF_A_KIND: 624,
    Five.FULL_HOUSE: 3_744,
    Five.FLUSH: 5_108,
    Five.STRAIGHT: 10_200,
    Five.THREE_OF_A_KIND: 54_912,
    Five.TWO_PAIR: 123_552,
    Five.PAIR: 1_098_240,
    Five.HIGH_CARD: 1_302_540,
}

# How many hands of each class are of different strength: 7,462 in all, the well-known number of distinct
# five-card poker hands (the royal flush counted as the tenth straight flush). A tiebreak that left out a kicker,
# or split a tie that the rules do not split, would change these.
FIVE_CARD_VALUES = {
    Five.ROYAL_FLUSH: 1,
    Five.STRAIGHT_FLUSH: 9,  # 6-high .. K-high and the wheel, which ranks 5-high
    Five.FOUR_OF_A_KIND: 13 * 12,
    Five.FULL_HOUSE: 13 * 12,
    Five.FLUSH: 1_287 - 10,  # C(13, 5) rank sets less the 10 straights
    Five.STRAIGHT: 10,
    Five.THREE_OF_A_KIND: 13 * 66,  # the trips, then two of the other 12 ranks
    Five.TWO_PAIR: 78 * 11,  # two of 13 ranks for the pairs, one of the other 11 for the kicker
    Five.PAIR: 13 * 220,  # the pair, then three of the other 12 ranks
    Five.HIGH_CARD: 1_287 - 10,
}

# The 22,100 three-card hands (C(52, 3)) in the classes of 655a.6(c), where A-2-3 and Q-K-A are straights and
# K-A-2 is not (655a.6(a), 643a.6(c)(4)), so there are 12 three-card runs, A-2-3 up to Q-K-A:
THREE_CARD_COUNTS = {
    Three.MINI_ROYAL: 4,  # A-K-Q, one per suit
    Three.STRAIGHT_FLUSH: 12 * 4 - 4,  # every suited run but the mini-royals: 44
    Three.THREE_OF_A_KIND: 13 * 4,  # C(4, 3) = 4 per rank: 52
    Three.STRAIGHT: 12 * (4**3 - 4),  # every run in any suits, less the 4 suited: 720
    Three.FLUSH: 4 * (286 - 12),  # C(13, 3) = 286 rank sets per suit, less the 12 runs: 1,096
    Three.PAIR: 13 * 6 * 48,  # the rank, C(4, 2) = 6 pairs of it, any of the 48 cards of another rank: 3,744
    Three.HIGH_CARD: 4**3 * (286 - 12) - 4 * (286 - 12),  # three ranks, no run, not suited: 16,440
}


def test_published_counts_are_consistent() -> None:
    assert sum(FIVE_CARD_COUNTS.values()) == 2_598_960
    assert sum(FIVE_CARD_VALUES.values()) == 7_462
    assert sum(THREE_CARD_COUNTS.values()) == 22_100
    assert THREE_CARD_COUNTS == {
        Three.MINI_ROYAL: 4,
        Three.STRAIGHT_FLUSH: 44,
        Three.THREE_OF_A_KIND: 52,
        Three.STRAIGHT: 720,
        Three.FLUSH: 1_096,
        Three.PAIR: 3_744,
        Three.HIGH_CARD: 16_440,
    }


def test_every_five_card_hand() -> None:
    hands: Counter[FiveCardHand] = Counter(best_five(cards) for cards in combinations(STANDARD_DECK, 5))
    counts: Counter[Five] = Counter()
    values: Counter[Five] = Counter()
    for hand, n in hands.items():
        counts[hand.cls] += n
        values[hand.cls] += 1
    assert dict(counts) == FIVE_CARD_COUNTS
    assert dict(values) == FIVE_CARD_VALUES


def test_every_three_card_hand() -> None:
    counts = Counter(rank_three(cards) for cards in combinations(STANDARD_DECK, 3))
    assert dict(counts) == THREE_CARD_COUNTS


@pytest.mark.parametrize(
    ("cards", "expected"),
    [
        ("Ah Kh Qh", Three.MINI_ROYAL),
        ("Qs Ks As", Three.MINI_ROYAL),
        ("Ah 2h 3h", Three.STRAIGHT_FLUSH),
        ("Kh Ah 2h", Three.FLUSH),  # the ace is high or low, never both (655a.6(a))
        ("Ac 2d 3h", Three.STRAIGHT),
        ("Qc Kd Ah", Three.STRAIGHT),
        ("Kc Ad 2h", Three.HIGH_CARD),
        ("Ac Ad 2h", Three.PAIR),
        ("Ac Ad Ah", Three.THREE_OF_A_KIND),
    ],
)
def test_three_card_aces(cards: str, expected: Three) -> None:
    assert rank_three(cards.split()) is expected


@pytest.mark.parametrize(
    ("cards", "cls", "tiebreak"),
    [
        ("Ah 2h 3h 4h 5h Kh Qh", Five.STRAIGHT_FLUSH, (5,)),  # the wheel is a 5-high straight flush...
        ("Ah 2h 3h 4h 5h 6h Kc", Five.STRAIGHT_FLUSH, (6,)),  # ...beaten by 6-high
        ("Ac 2d 3h 4s 5c", Five.STRAIGHT, (5,)),
        ("Qc Kd Ah 2s 3c", Five.HIGH_CARD, (14, 13, 12, 3, 2)),  # no straight round the corner
        ("Ts Js Qs Ks As 9s 8s", Five.ROYAL_FLUSH, (14,)),
        ("9c 9d 9h 9s Kc Kd Kh", Five.FOUR_OF_A_KIND, (9, 13)),  # the kicker can come from trips
        ("9c 9d 9h Kc Kd Kh 2s", Five.FULL_HOUSE, (13, 9)),  # the lower trips are the pair
        ("9c 9d 9h Kc Kd Qh Qs", Five.FULL_HOUSE, (9, 13)),  # the higher of two pairs fills the house
        ("9c 9d Kh Kc Qd Qh 2s", Five.TWO_PAIR, (13, 12, 9)),  # the third pair's rank is the best kicker
        ("9c 9d Kh Kc Qd Qh As", Five.TWO_PAIR, (13, 12, 14)),
        ("2h 5h 7h 9h Jh Kh Ah", Five.FLUSH, (14, 13, 11, 9, 7)),  # the best five of a seven-card flush
        ("2c 3d 4h 5s 6c 7d 8h", Five.STRAIGHT, (8,)),
        ("As 2d 3h 4s 5c 6d Kh", Five.STRAIGHT, (6,)),
        ("7c 7d 2h 5s 9c Jd Kh", Five.PAIR, (7, 13, 11, 9)),
        ("7c 7d 7h 5s 9c Jd Kh", Five.THREE_OF_A_KIND, (7, 13, 11)),
        ("2c 4d 6h 8s Tc Qd Ah", Five.HIGH_CARD, (14, 12, 10, 8, 6)),
    ],
)
def test_best_five_kickers(cards: str, cls: Five, tiebreak: tuple[int, ...]) -> None:
    assert best_five(cards.split()) == FiveCardHand(cls, tiebreak)
