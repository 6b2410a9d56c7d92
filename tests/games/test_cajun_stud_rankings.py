"""683a.6 hand rankings of Cajun Stud, proved by enumeration where the space is small enough.

Class counts are derived by hand in each test's docstring, then checked against the module.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import pytest

from controller.core.cards import RANKS, STANDARD_DECK, CardError
from controller.core.rankings import Three
from controller.games.cajun_stud.rankings import (
    AllSix,
    AnteHand,
    LoBall,
    Pocket,
    rank_all_six,
    rank_ante,
    rank_board,
    rank_lo_ball,
    rank_pocket,
)


def test_683a_6c_all_1326_two_card_hands() -> None:
    """C(52, 2) = 1,326 hands.
    Pair of aces: C(4, 2) = 6. Suited ace: an ace and a J, Q or K of its suit, 3 ranks x 4 suits = 12.
    Unsuited ace: 3 ranks x 4 ace suits x 3 other suits = 36. Pair (2s to kings): 12 ranks x 6 = 72.
    Everything else: 1,326 - 6 - 12 - 36 - 72 = 1,200."""
    counts = Counter(rank_pocket(list(hand)) for hand in combinations(STANDARD_DECK, 2))
    assert sum(counts.values()) == 1326
    assert counts == {
        Pocket.PAIR_OF_ACES: 6,
        Pocket.SUITED_ACE: 12,
        Pocket.UNSUITED_ACE: 36,
        Pocket.PAIR: 72,
        Pocket.HIGH_CARD: 1200,
    }


@pytest.mark.parametrize(
    ("cards", "cls"),
    [
        ("As Ah", Pocket.PAIR_OF_ACES),
        ("Ks As", Pocket.SUITED_ACE),
        ("Ad Jd", Pocket.SUITED_ACE),
        ("Ad Jc", Pocket.UNSUITED_ACE),
        ("Qh Ac", Pocket.UNSUITED_ACE),
        ("Ad Td", Pocket.HIGH_CARD),
        ("Ac 2c", Pocket.HIGH_CARD),
        ("2c 2s", Pocket.PAIR),
        ("Kc Ks", Pocket.PAIR),
        ("Kc Qc", Pocket.HIGH_CARD),
        ("10h 10d", Pocket.PAIR),
    ],
)
def test_683a_6c_examples(cards: str, cls: Pocket) -> None:
    assert rank_pocket(cards.split()) is cls


def test_683a_6d_all_22100_boards() -> None:
    """C(52, 3) = 22,100 boards. Mini-royal: 4. Straight flush: 12 runs (A-2-3 to Q-K-A) x 4 suits - 4
    mini-royals = 44. Trips: 13 x 4 = 52. Straight: 12 runs x (4^3 - 4) = 720. Flush: 4 x C(13, 3) - 48 =
    1,096. Pair: 13 x 6 x 48 = 3,744. The rest: 16,440."""
    counts = Counter(rank_board(list(hand)) for hand in combinations(STANDARD_DECK, 3))
    assert counts == {
        Three.MINI_ROYAL: 4,
        Three.STRAIGHT_FLUSH: 44,
        Three.THREE_OF_A_KIND: 52,
        Three.STRAIGHT: 720,
        Three.FLUSH: 1096,
        Three.PAIR: 3744,
        Three.HIGH_CARD: 16440,
    }


def test_683a_11i3_lo_ball_classes_over_all_2598960_hands() -> None:
    """A five-card hand forms no 683a.6(b) hand only with five distinct ranks, not a straight, not a flush.
    For a highest card h (rank value) the other four ranks come from the h - 2 ranks below it:
    C(h - 2, 4) sets, less the one straight topped by h (and for the ace also the wheel, where the ace
    plays low), each with 4^5 - 4 = 1,020 non-flush suitings.
    7: (5 - 1) x 1020 = 4,080; 8: 14 x 1020 = 14,280; 9: 34 x 1020 = 34,680; 10: 69 x 1020 = 70,380;
    J: 125 x 1020 = 127,500; Q: 209 x 1020 = 213,180; K: 329 x 1020 = 335,580; A: 493 x 1020 = 502,860.
    The other 1,296,420 hands form a 683a.6(b) hand. Every five-rank set is checked with one flush and one
    non-flush suiting (the class depends only on ranks and on flush or not); hands with a repeated rank
    always form a pair or better, so they are weighted without ranking each one, and spot-checked below."""
    counts: Counter[LoBall] = Counter()
    for ranks in combinations(RANKS, 5):
        non_flush = [ranks[0] + "c", ranks[1] + "d", ranks[2] + "h", ranks[3] + "s", ranks[4] + "c"]
        flush = [r + "h" for r in ranks]
        counts[rank_lo_ball(non_flush[:2], non_flush[2:])] += 1020
        counts[rank_lo_ball(flush[:2], flush[2:])] += 4
    counts[LoBall.FORMS_POKER_HAND] += 2_598_960 - 1287 * 1024
    assert counts == {
        LoBall.SEVEN_HIGH: 4080,
        LoBall.EIGHT_HIGH: 14280,
        LoBall.NINE_HIGH: 34680,
        LoBall.TEN_HIGH: 70380,
        LoBall.JACK_HIGH: 127500,
        LoBall.QUEEN_HIGH: 213180,
        LoBall.KING_HIGH: 335580,
        LoBall.ACE_HIGH: 502860,
        LoBall.FORMS_POKER_HAND: 1_296_420,
    }


@pytest.mark.parametrize(
    ("player", "community", "cls"),
    [
        ("7c 5d", "4h 3s 2c", LoBall.SEVEN_HIGH),
        ("6c 5d", "4h 3s 2c", LoBall.FORMS_POKER_HAND),  # 6-high is a straight
        ("Ac 5d", "4h 3s 2c", LoBall.FORMS_POKER_HAND),  # the wheel is a straight (683a.6(a))
        ("Ac 6d", "4h 3s 2c", LoBall.ACE_HIGH),  # the ace is low only in a straight
        ("Qc Jd", "9h 8s 2c", LoBall.QUEEN_HIGH),
        ("Jc Td", "9h 8s 2c", LoBall.JACK_HIGH),
        ("Jc Td", "9h 8s 7c", LoBall.FORMS_POKER_HAND),
        ("2c 2d", "9h 8s 7c", LoBall.FORMS_POKER_HAND),
        ("9h 7h", "5h 3h 2h", LoBall.FORMS_POKER_HAND),
    ],
)
def test_683a_11i3_examples(player: str, community: str, cls: LoBall) -> None:
    assert rank_lo_ball(player.split(), community.split()) is cls


@pytest.mark.parametrize(
    ("player", "community", "cls"),
    [
        ("6c 6d", "2h 3s 9c", AnteHand.PAIR_OF_6S_TO_10S),
        ("5c 5d", "2h 3s 9c", AnteHand.PAIR_OF_2S_TO_5S),
        ("Tc Td", "2h 3s 9c", AnteHand.PAIR_OF_6S_TO_10S),
        ("Jc 4d", "Jh 3s 9c", AnteHand.PAIR_OF_JACKS_OR_BETTER),
        ("Kc Qd", "Ah 2s 3c", AnteHand.HIGH_CARD),
        ("Th Jh", "Qh Kh Ah", AnteHand.ROYAL_FLUSH),
    ],
)
def test_683a_6b_ante_classes(player: str, community: str, cls: AnteHand) -> None:
    assert rank_ante(player.split(), community.split()) is cls


@pytest.mark.parametrize(
    ("player", "bonus", "cls"),
    [
        ("9d Td", "Jd Qd Kd Ad", AllSix.SIX_CARD_ROYAL_FLUSH_DIAMONDS),
        ("9s Ts", "Js Qs Ks As", AllSix.SIX_CARD_ROYAL_FLUSH_HEARTS_SPADES_OR_CLUBS),
        ("8d Td", "Jd Qd Kd Ad", AllSix.ROYAL_FLUSH),
        ("8d 9d", "Td Jd Qd Kd", AllSix.STRAIGHT_FLUSH),
        ("2c 2d", "2h 3s 3c 9d", AllSix.FULL_HOUSE),
        ("2c 2d", "3h 3s 4c 9d", AllSix.TWO_PAIR),
    ],
)
def test_683a_6e_examples(player: str, bonus: str, cls: AllSix) -> None:
    assert rank_all_six(player.split(), bonus.split()) is cls


def test_683a_6e_three_pairs_is_two_pair() -> None:
    # Six cards can hold three pairs and no single card; the best five is still two pair.
    assert rank_all_six(["2c", "2d"], ["3h", "3s", "4c", "4d"]) is AllSix.TWO_PAIR


def test_duplicates_and_wrong_counts_are_refused() -> None:
    with pytest.raises(CardError, match="duplicate card"):
        rank_pocket(["As", "as"])
    with pytest.raises(CardError, match="duplicate card"):
        rank_board(["As", "Kd", "As"])
    with pytest.raises(CardError, match="duplicate card"):
        rank_lo_ball(["7c", "5d"], ["7c", "3s", "2c"])
    with pytest.raises(CardError, match="duplicate card"):
        rank_all_six(["9d", "Td"], ["Jd", "Qd", "Kd", "9d"])
    with pytest.raises(CardError, match="duplicate card"):
        rank_ante(["9d", "Td"], ["Jd", "Qd", "Td"])
    with pytest.raises(ValueError, match="not 3"):
        rank_pocket(["As", "Kd", "2c"])
    with pytest.raises(ValueError, match="not 2"):
        rank_board(["As", "Kd"])
