"""Chapter 683a, Cajun Stud: the chapter's own hand classes, one per row of its 683a.12 paytables.

- 683a.6(b) five-card hands are rankings.best_five; AnteHand splits its one-pair class the way
  683a.11(h) and the 683a.12(a) table do (below a pair of 6s, 6s to 10s, jacks or better).
- 683a.6(c) Pocket Bonus two-card hands have no counterpart in controller.core.rankings: rank_pocket.
- 683a.6(d) Board Bonus three-card hands define the same classes, in the same order, as the 655a.6(c)
  hands of rankings.rank_three, and 683a.6(a) words the ace exactly as 655a.6(a) does, so rank_board
  reuses rank_three (A-2-3 counts as a straight there; see docs/settle/683a.md for that reading).
- 683a.6(e) All-Six Bonus six-card hands are the 655a.6(d) hands of rankings.rank_six, word for word
  but for the clarifying "other than a royal flush" in (3), so rank_all_six reuses rank_six.
- 683a.7(d)(4) and 683a.11(i)(3) Lo Ball hands: five cards that form no 683a.6(b) hand, named by their
  highest card: rank_lo_ball.
Every function refuses duplicate cards (cards.require_distinct), as rankings does.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

from controller.core.cards import rank_value, require_distinct, suit_of
from controller.core.rankings import Five, Six, SixCardHand, Three, best_five, rank_six, rank_three

POCKET_CARDS = 2  # 683a.8(c): two cards to each player
BOARD_CARDS = 3  # 683a.8(d): three community cards
ALL_SIX_CARDS = 4  # 683a.8(c): four All-Six Bonus cards


class AnteHand(IntEnum):
    """683a.6(b) five-card hands as 683a.11(h) and the 683a.12(a) rows divide them."""

    HIGH_CARD = 0  # no 683a.6(b) hand: 683a.11(h)(2)
    PAIR_OF_2S_TO_5S = 1  # lower than a pair of sixes: 683a.11(h)(2)
    PAIR_OF_6S_TO_10S = 2  # "Push" in every 683a.12(a) table
    PAIR_OF_JACKS_OR_BETTER = 3
    TWO_PAIR = 4
    THREE_OF_A_KIND = 5
    STRAIGHT = 6
    FLUSH = 7
    FULL_HOUSE = 8
    FOUR_OF_A_KIND = 9
    STRAIGHT_FLUSH = 10
    ROYAL_FLUSH = 11


_ANTE_FROM_FIVE = {
    Five.TWO_PAIR: AnteHand.TWO_PAIR,
    Five.THREE_OF_A_KIND: AnteHand.THREE_OF_A_KIND,
    Five.STRAIGHT: AnteHand.STRAIGHT,
    Five.FLUSH: AnteHand.FLUSH,
    Five.FULL_HOUSE: AnteHand.FULL_HOUSE,
    Five.FOUR_OF_A_KIND: AnteHand.FOUR_OF_A_KIND,
    Five.STRAIGHT_FLUSH: AnteHand.STRAIGHT_FLUSH,
    Five.ROYAL_FLUSH: AnteHand.ROYAL_FLUSH,
}


def rank_ante(player: Sequence[str], community: Sequence[str]) -> AnteHand:
    """683a.11(h): the best five-card hand of the player's two cards and the three community cards."""
    if len(player) != POCKET_CARDS or len(community) != BOARD_CARDS:
        raise ValueError(
            f"683a.11(h) forms the hand from 2 player cards and 3 community cards, "
            f"not {len(player)} and {len(community)}"
        )
    hand = best_five([*player, *community])
    if hand.cls is Five.HIGH_CARD:
        return AnteHand.HIGH_CARD
    if hand.cls is Five.PAIR:
        pair = hand.tiebreak[0]
        if pair >= 11:
            return AnteHand.PAIR_OF_JACKS_OR_BETTER
        return AnteHand.PAIR_OF_6S_TO_10S if pair >= 6 else AnteHand.PAIR_OF_2S_TO_5S
    return _ANTE_FROM_FIVE[hand.cls]


class Pocket(IntEnum):
    """683a.6(c): the player's two cards, highest last. HIGH_CARD is every hand 683a.6(c) does not list."""

    HIGH_CARD = 0
    PAIR = 1  # 683a.6(c)(4); 683a.12(b) "Pair of 2s—kings" since two aces are 683a.6(c)(1)
    UNSUITED_ACE = 2  # 683a.6(c)(3): an ace and a jack, queen or king of different suits
    SUITED_ACE = 3  # 683a.6(c)(2): an ace and a jack, queen or king of the same suit
    PAIR_OF_ACES = 4  # 683a.6(c)(1)


def rank_pocket(cards: Sequence[str]) -> Pocket:
    """683a.6(c) class of the two cards dealt to the player."""
    hand = require_distinct(cards)
    if len(hand) != POCKET_CARDS:
        raise ValueError(f"a Pocket Bonus hand is the player's {POCKET_CARDS} cards, not {len(hand)}")
    low, high = sorted(rank_value(c) for c in hand)
    if low == high:
        return Pocket.PAIR_OF_ACES if high == 14 else Pocket.PAIR
    if high == 14 and low in (11, 12, 13):
        return Pocket.SUITED_ACE if suit_of(hand[0]) == suit_of(hand[1]) else Pocket.UNSUITED_ACE
    return Pocket.HIGH_CARD


def rank_board(cards: Sequence[str]) -> Three:
    """683a.6(d) class of the three community cards (same classes and order as rankings.rank_three)."""
    if len(cards) != BOARD_CARDS:
        raise ValueError(f"a Board Bonus hand is the {BOARD_CARDS} community cards, not {len(cards)}")
    return rank_three(cards)


class AllSix(IntEnum):
    """683a.6(e) six-card hands, split into the rows of 683a.12(e): paytable E pays a six-card royal flush
    in diamonds apart from one in hearts, spades or clubs. All suits rank equally (683a.6(a)); the two
    six-card members are ordered only so that each row has its own key."""

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
    SIX_CARD_ROYAL_FLUSH_HEARTS_SPADES_OR_CLUBS = 10
    SIX_CARD_ROYAL_FLUSH_DIAMONDS = 11


def rank_all_six(player: Sequence[str], all_six_cards: Sequence[str]) -> AllSix:
    """683a.6(e) / 683a.11(i)(4): the player's two cards with the four All-Six Bonus cards."""
    if len(player) != POCKET_CARDS or len(all_six_cards) != ALL_SIX_CARDS:
        raise ValueError(
            f"683a.11(i)(4) combines 2 player cards with 4 All-Six Bonus cards, "
            f"not {len(player)} and {len(all_six_cards)}"
        )
    hand: SixCardHand = rank_six([*player, *all_six_cards])
    if hand.cls is Six.SIX_CARD_ROYAL_FLUSH:
        if hand.suit == "d":
            return AllSix.SIX_CARD_ROYAL_FLUSH_DIAMONDS
        return AllSix.SIX_CARD_ROYAL_FLUSH_HEARTS_SPADES_OR_CLUBS
    return AllSix(hand.cls.value)


class LoBall(IntEnum):
    """683a.7(d)(4), 683a.11(i)(3): a five-card hand that forms no 683a.6(b) hand is named by its highest
    card; value = that card's rank. FORMS_POKER_HAND (a pair or better, a straight or a flush) always
    loses. Six high cannot occur: 6-5-4-3-2 is a straight, and an ace plays high except in a straight
    (683a.6(a)), so A-2-3-4-6 is ace high."""

    SEVEN_HIGH = 7
    EIGHT_HIGH = 8
    NINE_HIGH = 9
    TEN_HIGH = 10
    JACK_HIGH = 11
    QUEEN_HIGH = 12
    KING_HIGH = 13
    ACE_HIGH = 14
    FORMS_POKER_HAND = 15


def rank_lo_ball(player: Sequence[str], community: Sequence[str]) -> LoBall:
    """683a.11(i)(3): the Lo Ball class of the player's two cards and the three community cards."""
    if len(player) != POCKET_CARDS or len(community) != BOARD_CARDS:
        raise ValueError(
            f"683a.11(i)(3) forms the hand from 2 player cards and 3 community cards, "
            f"not {len(player)} and {len(community)}"
        )
    hand = best_five([*player, *community])
    if hand.cls is not Five.HIGH_CARD:
        return LoBall.FORMS_POKER_HAND
    return LoBall(hand.tiebreak[0])
