"""603a.15(a)-(c): the deck every game deals is 52 cards, four suits of thirteen, no joker (no game here allows one).
Every card a device reports is parsed so (controller/core/cards.py), and a deck that is not these 52 is removed or its
round voided (tests/engine/test_deck_order.py); here the deck itself and the parser, property-tested."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.core.cards import RANKS, STANDARD_DECK, SUIT_NAMES, CardError, deck_problems, parse_card, suit_of


def test_603a_15_b_four_suits_diamonds_spades_clubs_and_hearts() -> None:
    suits = {SUIT_NAMES[suit_of(card)] for card in STANDARD_DECK}
    assert suits == {"diamonds", "spades", "clubs", "hearts"}, "603a.15(b): the deck's four suits"
    for letter in sorted(set(string.ascii_lowercase) - set(SUIT_NAMES)):
        with pytest.raises(CardError, match="is not a card"):
            parse_card("A" + letter)


def test_603a_15_c_thirteen_cards_a_suit_ace_to_2() -> None:
    for suit in SUIT_NAMES:
        ranks = [card[0] for card in STANDARD_DECK if card[1] == suit]
        assert ranks == list("23456789TJQKA"), f"603a.15(c): the thirteen cards of {suit}"
    assert parse_card("10d") == "Td"
    for bad in ("1s", "0h", "11c", "Cd"):
        with pytest.raises(CardError, match="is not a card"):
            parse_card(bad)


def test_603a_15_a_52_cards_and_no_joker() -> None:
    assert len(STANDARD_DECK) == len(set(STANDARD_DECK)) == 52 and deck_problems(STANDARD_DECK) == []
    for joker in ("Jo", "JK", "joker", "XX"):
        with pytest.raises(CardError, match="is not a card"):
            parse_card(joker)
    with_joker = [*STANDARD_DECK[:51], "Xj"]
    assert deck_problems(with_joker) == ["foreign card(s) Xj", f"missing card(s) {STANDARD_DECK[51]}"]


@given(st.text(alphabet=string.ascii_letters + string.digits + " ", min_size=0, max_size=4))
def test_603a_15_a_a_card_is_one_of_the_52_or_refused(text: str) -> None:
    try:
        card = parse_card(text)
    except CardError as e:
        assert "is not a card" in str(e)
        raw = text.strip()
        raw = "T" + raw[2:] if raw[:2] == "10" else raw
        assert len(raw) != 2 or raw[0].upper() not in RANKS or raw[1].lower() not in SUIT_NAMES
    else:
        assert card in STANDARD_DECK
