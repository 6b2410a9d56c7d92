"""The batch evaluator (controller.par.evaluator) against the scalar one settlement uses (controller.core.rankings).

Bounded by default: a seeded sample of 5-, 6- and 7-card hands plus every five-card hand of the classes a sample
meets rarely. `pytest -m campaign tests/par` runs every one of the 2,598,960 five-card hands and 2,000,000 seeded
seven-card hands instead.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import numpy.typing as npt
import pytest

from controller.core.cards import STANDARD_DECK
from controller.core.rankings import Five, best_five, rank_three
from controller.par import combos
from controller.par.evaluator import encode, evaluate, evaluate_chunked, evaluate_three, hand_class

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
# The 133,784,560 seven-card hands by the class of their best five (the standard table, e.g. Wikipedia's
# "Poker probability", 7-card section); checked here on the 6- and 7-card counts' sum only through the sample,
# the 5-card counts exactly.


def _reference(hands: npt.NDArray[np.integer]) -> list[int]:
    return [encode(best_five([STANDARD_DECK[c] for c in row])) for row in hands.tolist()]


def _seeded_hands(size: int, n: int, seed: int) -> npt.NDArray[np.int64]:
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((n, 52)), axis=1)[:, :size]


def test_every_five_card_hand_has_its_published_class_count() -> None:
    values = evaluate_chunked(combos.combinations(5))
    counts = Counter(hand_class(values).tolist())
    assert {Five(c): n for c, n in counts.items()} == FIVE_CARD_COUNTS


@pytest.mark.campaign
def test_five_card_hands_agree_with_the_reference(campaign: bool) -> None:
    hands = combos.combinations(5)
    if not campaign:
        # Every hand of a rare class, and a seeded sample of the rest.
        values = evaluate(hands)
        rare = np.flatnonzero(hand_class(values) >= Five.STRAIGHT)
        sample = np.random.default_rng(18).choice(len(hands), 60_000, replace=False)
        hands = hands[np.union1d(rare, sample)]
    assert evaluate_chunked(hands).tolist() == _reference(hands)


@pytest.mark.campaign
@pytest.mark.parametrize(("size", "bounded", "full"), [(6, 40_000, 500_000), (7, 60_000, 2_000_000)])
def test_six_and_seven_card_hands_agree_with_the_reference(campaign: bool, size: int, bounded: int, full: int) -> None:
    hands = _seeded_hands(size, full if campaign else bounded, seed=size)
    got = evaluate_chunked(hands).tolist()
    assert got == _reference(hands)
    # The sample reaches past the pairs: a flush beaten by a full house, straights in seven cards, and so on.
    assert {Five(c) for c in hand_class(np.array(got))} >= set(Five) - {Five.ROYAL_FLUSH, Five.STRAIGHT_FLUSH}


def test_a_flush_beats_trips_and_yields_to_a_straight_flush_in_seven_cards() -> None:
    def value(cards: str) -> int:
        hand = np.array([[STANDARD_DECK.index(c) for c in cards.split()]])
        return int(evaluate(hand)[0])

    assert value("2h 5h 7h 9h Jh 9c 9d") == encode(best_five(["2h", "5h", "7h", "9h", "Jh", "9c", "9d"]))
    assert hand_class(np.array([value("2h 5h 7h 9h Jh 9c 9d")]))[0] == Five.FLUSH
    assert hand_class(np.array([value("Ah 2h 3h 4h 5h Kh Qh")]))[0] == Five.STRAIGHT_FLUSH  # the wheel, 5 high


def test_every_three_card_hand_agrees_with_the_reference() -> None:
    hands = combos.combinations(3)
    expected = [int(rank_three([STANDARD_DECK[c] for c in row])) for row in hands.tolist()]
    assert evaluate_three(hands).tolist() == expected
    # Order within the hand does not matter.
    assert evaluate_three(hands[:, ::-1]).tolist() == expected


def test_combinations_are_indexed_by_their_colex_rank() -> None:
    for k in (2, 3, 4):
        sets = combos.combinations(k)
        assert len(sets) == len(list(combinations(range(52), k)))
        assert combos.index_of(sets).tolist() == list(range(len(sets)))
        shuffled = np.random.default_rng(k).permuted(sets.astype(np.int64), axis=1)
        assert combos.index_unsorted(shuffled).tolist() == list(range(len(sets)))


def test_hand_sizes_outside_five_to_seven_are_refused() -> None:
    with pytest.raises(ValueError, match="5 to 7 cards, not 4"):
        evaluate(np.zeros((1, 4), dtype=np.int64))
