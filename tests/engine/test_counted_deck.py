"""The stub count (.8(f), .9(d), .10(d)) follows how the round's own deck was shuffled, not the table's devices at the
stub: "If an automated card shuffling device, which counts the number of cards in the deck after the completion of each
shuffle and indicates whether 52 cards are present, is not being used, the dealer shall count the stub at least once
every 5 rounds of play". A round whose deck the counting shuffler shuffled and counted (.5(b)) was played with it, even
if the shuffler is covered (.13(g)) before its stub: no count is owed for that deck, and the rounds still add up, so
the first round shuffled by hand is counted. A round whose deck was shuffled by hand, the shuffler put back in service
while its betting is open, owes the count. Before, the stub rule read the devices at the stub (docs/rules.md)."""

from __future__ import annotations

import pytest

from controller.engine.inputs import Confirm, MarkOutOfOrder
from controller.engine.state import Phase
from tests.engine.chapter_faults import cite, counting, remedy
from tests.engine.conftest import decide_all, enter_player
from tests.engine.covers import HAND_AND_SHOE, play_on, reading_table, release
from tests.engine.held_faults import NO_HIT


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_a_deck_the_shuffler_counted_owes_no_stub_count_once_it_is_covered(chapter: str) -> None:
    options = counting(chapter, fallback_dealing_method="automated_shoe", stub_count_every=1)
    t, paused = reading_table(chapter, "hand", "automated_shoe", options=options)
    paused.kind = "locks"
    t.press("no_more_bets")
    t.feed(MarkOutOfOrder("shuffler"))
    release(t, paused)
    assert t.state.phase is Phase.DEALT
    dealt = t.press("dealt")
    assert "stub_count.requested" not in t.types(dealt), "the shuffler counted this round's deck"
    assert remedy(dealt, "stub.discarded").rule == cite(chapter, "9(c)")
    decide_all(t, dealt)
    assert t.types().count("round.completed") == 1
    # The next round is shuffled by hand: its stub is counted, the rounds since the last count having added up.
    since = len(t.events)
    play_on(t, paused, since)
    asked = remedy(t.events[since:], "stub_count.requested")
    assert asked.rule == cite(chapter, "10(d)") and asked.payload["rounds_since_count"] == 2


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_a_deck_the_shuffler_counted_owes_no_count_when_it_is_covered_in_betting(chapter: str) -> None:
    t, _ = reading_table(chapter, "automated_shoe", None, options=counting(chapter, stub_count_every=1))
    t.feed(MarkOutOfOrder("shuffler"))
    decide_all(t, t.press("no_more_bets"))
    assert "stub_count.requested" not in t.types() and t.types().count("round.completed") == 1


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_a_deck_shuffled_by_hand_owes_its_count_though_the_shuffler_is_back(chapter: str) -> None:
    t, paused = reading_table(chapter, "automated_shoe", None, options=counting(chapter, stub_count_every=1))
    t.feed(MarkOutOfOrder("shuffler"))
    play_on(t, paused, len(t.events))  # the round of the shuffler's deck; the next deck is the dealer's
    assert t.state.phase is Phase.SHUFFLING
    t.shoe = list(NO_HIT)  # the deck the dealer shuffled, placed in the shoe
    t.feed(Confirm("dealer", "shuffled"))
    assert t.state.phase.value == "betting"  # (mypy narrowed the phase above)
    t.feed(MarkOutOfOrder("shuffler", out=False))  # back in service while this deck's betting is open
    enter_player(t, 1)
    since = len(t.events)
    play_on(t, paused, since)
    asked = remedy(t.events[since:], "stub_count.requested")
    assert asked.rule == cite(chapter, "10(d)"), "nobody counted this deck: the shuffler came back after its shuffle"
