"""Card parsing and deck checks: '10d' and 'Td' are one card; duplicates and foreign cards are refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.core.cards import STANDARD_DECK, CardError, deck_problems, parse_card, require_distinct


@pytest.mark.parametrize(("text", "card"), [("As", "As"), ("as", "As"), ("10d", "Td"), ("Td", "Td"), (" 7C ", "7c")])
def test_parse(text: str, card: str) -> None:
    assert parse_card(text) == card


@pytest.mark.parametrize("text", ["", "A", "1d", "11h", "Ax", "Zs", "10", "Joker", "AsKs"])
def test_not_a_card(text: str) -> None:
    with pytest.raises(CardError, match="is not a card"):
        parse_card(text)


@given(st.text(max_size=6))
def test_parse_never_fails_otherwise(text: str) -> None:
    try:
        card = parse_card(text)
    except CardError:
        return
    assert card in STANDARD_DECK


def test_duplicates_named() -> None:
    with pytest.raises(CardError, match=r"duplicate card\(s\) Td"):
        require_distinct(["Td", "10d", "As"])


def test_deck_problems() -> None:
    assert deck_problems(list(STANDARD_DECK)) == []
    deck = [*STANDARD_DECK[:51], "2c", "Xx"]
    problems = deck_problems(deck)
    assert "53 cards instead of 52" in problems
    assert "foreign card(s) Xx" in problems
    assert "duplicate card(s) 2c" in problems
    assert f"missing card(s) {STANDARD_DECK[51]}" in problems
