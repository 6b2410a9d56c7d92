"""A device covered (.13(g)) while the round is LOCKING: its wagers locked under the dealing procedure announced at "no
more bets", no card out yet (docs/rules.md, the rows on the round's dealing method).

1. The automated shoe the round deals by, covered: the shoe "is being used" and "fails to deal all cards during a round
   of play", so the round is void under .13(f), every wager returned; no other method deals it (the deck is in the
   covered shoe, to be "removed from the device and reshuffled"). The table is not stopped: the shuffler is in service,
   so the next round is dealt from the hand, its fallback.
2. The shuffler covered once its shuffle is complete, the round to be dealt from the hand: nothing of .13(e) happened
   (the shuffle completed) and no "other method of shuffling" shuffled these cards, so the round is dealt from the hand
   from the order the shuffler gave; the next round is shuffled by hand and dealt by the fallback."""

from __future__ import annotations

import pytest

from controller.engine.commands import DispenseStack
from controller.engine.inputs import Confirm, MarkOutOfOrder, Recover
from controller.engine.spec import DealingMethod
from controller.engine.state import Phase
from controller.store import snapshot
from drivers.interfaces import DeviceFault
from tests.engine.chapter_faults import cite, remedy, returned_everything
from tests.engine.conftest import decide_all, enter_player
from tests.engine.covers import HAND_AND_SHOE, locking, release
from tests.engine.held_faults import dispenses, play_round


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_the_shoe_covered_while_locking_voids_the_round_under_13_f(chapter: str) -> None:
    t, locks = locking(chapter, "automated_shoe", "hand")
    assert remedy(t.events, "no_more_bets").rule == cite(chapter, "10(a)(2)")
    asked = dispenses(t)
    marked = t.feed(MarkOutOfOrder("shoe"))
    said = remedy(marked, "device.out_of_order").payload
    assert said["dealing_method"] == "hand" and said["this_round"] == "void"
    void = remedy(marked, "round.voided")
    assert void.rule == cite(chapter, "13(f)"), "the covered shoe fails to deal the round's cards"
    assert "removed from the shoe and reshuffled" in void.payload["remedy"]
    returned_everything(t, void)
    release(t, locks)  # the stations' acknowledgements, late: nothing is dealt
    assert dispenses(t) == asked
    assert not [e for e in t.events if e.type in ("cards.dealt", "deal.awaiting_dealer", "lockout.confirmed")]
    # The shuffler is in service: nothing stops the table, the next round is shuffled and dealt from the hand.
    assert "no_method" not in t.state.blocks and t.state.phase is Phase.BETTING
    enter_player(t, 1)
    pressed = t.press("no_more_bets")
    assert remedy(pressed, "no_more_bets").rule == cite(chapter, "9(a)(3)")
    play_round(t)
    assert t.types().count("round.completed") == 1 and t.types().count("round.voided") == 1


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
@pytest.mark.parametrize("fallback", ["automated_shoe", "manual_shoe", None])
def test_the_shuffler_covered_while_locking_deals_the_round_from_its_order(
    chapter: str, fallback: DealingMethod | None
) -> None:
    t, locks = locking(chapter, "hand", fallback)
    order = list(t.state.deck_order)
    assert remedy(t.events, "no_more_bets").rule == cite(chapter, "9(a)(3)")
    marked = t.feed(MarkOutOfOrder("shuffler"))
    said = remedy(marked, "device.out_of_order").payload
    assert said["dealing_method"] == fallback and said["this_round"] == "hand"
    release(t, locks)
    assert "round.voided" not in t.types(), "the round's shuffle was complete before the cover"
    assert remedy(t.events, "lockout.confirmed").rule == cite(chapter, "9(a)(3)")
    assert not [c for c in t.commands if isinstance(c, DispenseStack)]
    assert t.state.phase is Phase.DEALT
    assert remedy(t.events, "deal.awaiting_dealer").rule == cite(chapter, "9(b)")
    assert t.state.round is not None and t.state.round.dealt == order[: len(t.state.round.dealt)]
    dealt = t.press("dealt")
    assert {e.rule for e in dealt if e.type == "cards.dealt"} == {cite(chapter, "9(b)")}
    decide_all(t, dealt)
    assert t.types().count("round.completed") == 1
    # The next round: the shuffle is by hand (.13(g)), the deal by the fallback; with none the table waits.
    started = [e for e in t.events if e.type == "shuffle.started"][-1]
    if fallback is None:
        assert t.state.phase.value == "blocked" and "no_method" in t.state.blocks
        assert started.payload["device"] == "shuffler"  # the shuffle of the round just dealt, none since
        return
    assert started.payload["device"] == "manual"
    t.shoe = list(order)
    t.feed(Confirm("dealer", "shuffled"))
    enter_player(t, 1)
    lock = {"automated_shoe": "10(a)(2)", "manual_shoe": "8(b)"}[fallback]
    assert remedy(t.press("no_more_bets"), "no_more_bets").rule == cite(chapter, lock)


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
@pytest.mark.parametrize("code", ["jam", "malfunction"])
def test_a_shoe_fault_in_the_round_dealt_by_hand_holds_the_shoe_for_the_next_round(chapter: str, code: str) -> None:
    """The shuffler covered while locking, the round dealt from the hand; the fallback automated shoe then faults: the
    round is not the shoe's, so nothing is void (.13(f) asks "an automated dealing shoe ... being used"), but the next
    round would deal from it, so the shoe is held and that round waits for it (.13(g))."""
    t, locks = locking(chapter, "hand", "automated_shoe")
    t.feed(MarkOutOfOrder("shuffler"))
    held = remedy(t.feed(DeviceFault("shoe", code=code)), "device.unusable")
    assert held.rule == cite(chapter, "13(g)") and "no new round" in held.payload["remedy"]
    release(t, locks)
    decide_all(t, t.press("dealt"))
    assert t.types().count("round.completed") == 1 and "round.voided" not in t.types()
    assert t.state.phase is Phase.BLOCKED and "device:shoe" in t.state.blocks


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
@pytest.mark.parametrize("fallback", ["manual_shoe", None])
def test_the_shoe_covered_while_locking_voids_whatever_the_fallback(
    chapter: str, fallback: DealingMethod | None
) -> None:
    """The deck is in the covered automated shoe whatever would take over: the manual shoe standing in for it is not
    loaded with the round's deck, so the round is void (.13(f)) rather than dealt from it; with no fallback the table
    then waits for a method (`no_method`)."""
    t, locks = locking(chapter, "automated_shoe", fallback)
    void = remedy(t.feed(MarkOutOfOrder("shoe")), "round.voided")
    assert void.rule == cite(chapter, "13(f)")
    returned_everything(t, void)
    release(t, locks)
    assert not t.draw(3), "a card drawn for a round already void"
    assert ("no_method" in t.state.blocks) is (fallback is None)


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_the_rounds_method_outlasts_a_restart(chapter: str) -> None:
    """The round's method is kept with the state: restored mid-round (the shuffler covered while locking, the round in
    DEALT), the round is still dealt from the hand, under .9."""
    t, locks = locking(chapter, "hand", "automated_shoe")
    t.feed(MarkOutOfOrder("shuffler"))
    release(t, locks)
    assert t.state.phase is Phase.DEALT
    t.state = snapshot.decode(snapshot.encode(t.state))
    assert t.state.round is not None and t.state.round.method == "hand"
    t.feed(Recover())
    dealt = t.press("dealt")
    assert {e.rule for e in dealt if e.type == "cards.dealt"} == {cite(chapter, "9(b)")}
    decide_all(t, dealt)
    assert t.types().count("round.completed") == 1
