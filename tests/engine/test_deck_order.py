"""Dealing from the hand, the shuffler's card order is the deck the layout is laid from (679a.9(a)(1), 643a.9 ...):
an order that is not the 52 cards of 603a.15(a)-(c) (a card twice, so one missing: a card of another deck with the
same back) must not be dealt. The shuffler's count alone (52) does not show it, the order does: the deck leaves the
table before betting opens, as a miscount does (.5(b), 679a.9(d)), and a floorperson verifies a new one."""

from __future__ import annotations

import pytest

from controller.core.cards import STANDARD_DECK
from controller.engine.inputs import Confirm, OpenTable
from controller.engine.round import RoundEngine
from controller.engine.state import Phase, TableState
from controller.games.registry import SPECS
from tests.engine.chapter_faults import cite, counting, methods, remedy
from tests.engine.conftest import PureTable, example_rules

HAND = [c for c in sorted(SPECS) if "hand" in methods(c)]


def opened_with(chapter: str, deck: list[str], shuffler_counts: bool) -> PureTable:
    options = counting(chapter, shuffler_counts=shuffler_counts)
    t = PureTable(RoundEngine(SPECS[chapter], example_rules(chapter), "hand", options), TableState("t1"))
    t.decks = [deck]
    t.feed(OpenTable())
    return t


@pytest.mark.parametrize("shuffler_counts", [True, False])
@pytest.mark.parametrize("chapter", HAND)
def test_603a_15_an_order_with_a_card_twice_is_not_dealt_and_the_deck_is_removed(
    chapter: str, shuffler_counts: bool
) -> None:
    deck = list(STANDARD_DECK)
    deck[5] = deck[0]  # 2c twice, 7c missing: 52 cards counted
    t = opened_with(chapter, deck, shuffler_counts)
    removed = remedy(t.events, "deck.removed")
    assert removed.rule == cite(chapter, "5(b)")
    reason = removed.payload["reason"]
    assert "603a.15(a)-(c)" in reason and "duplicate card(s) 2c" in reason and "missing card(s) 7c" in reason
    assert t.state.phase is Phase.BLOCKED and "deck_removed" in t.state.blocks
    assert "betting.opened" not in t.types() and "shuffle.completed" not in t.types()
    # The floorperson verifies a new deck; the shuffler's next order is whole, and betting opens on it.
    out = t.feed(Confirm("floorperson", "deck_verified"))
    assert "deck.verified" in t.types(out)
    assert "betting.opened" in t.types() and t.state.deck_order == list(STANDARD_DECK)


@pytest.mark.parametrize("chapter", HAND)
def test_603a_15_a_whole_order_opens_betting(chapter: str) -> None:
    t = opened_with(chapter, list(reversed(STANDARD_DECK)), shuffler_counts=True)
    assert "deck.removed" not in t.types() and t.state.phase is Phase.BETTING
