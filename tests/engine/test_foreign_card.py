"""A card foreign to the deck read by the shoe (docs/protocol.md, "Foreign cards"). Read while the shoe deals the
round (configured, or a hand-dealt table's fallback with the shuffler out of order) it voids the round under .13(c),
as a deck that fails its check does. Read by a shoe no round is dealt from (the table deals by hand, or no deal is
under way) it went to no hand: nothing is void and the shoe is not held; the operator is told to take it out
(docs/rules.md). The void reads the method the round deals by (`ctx.method`), not the phase alone."""

from __future__ import annotations

from dataclasses import replace

import pytest

from controller.engine.inputs import Confirm, MarkOutOfOrder
from controller.engine.spec import DealingMethod
from controller.engine.state import Phase
from drivers.interfaces import DeviceFault
from tests.engine.chapter_faults import cite, counting, on, remedy, returned_everything, table
from tests.engine.conftest import PureTable, decide_all
from tests.engine.held_faults import NO_HIT

HAND_AND_SHOE = ("643a", "655a", "683a")  # the chapters that deal from the hand and from either shoe
FOREIGN = DeviceFault("shoe", code="foreign_card", detail="position 1 read 'joker'")


def hand_dealt(chapter: str, fallback: DealingMethod) -> PureTable:
    t = table(chapter, "hand", counting(chapter, fallback_dealing_method=fallback))
    t.shoe = list(NO_HIT)
    t.decks = [list(NO_HIT) for _ in range(4)]
    return t


def told_to_take_it_out(t: PureTable, said: str) -> None:
    """Nothing voided or held; the fault is recorded and the operator told why nothing follows and what to do."""
    assert "round.voided" not in t.types() and "device.unusable" not in t.types()
    assert "shoe" not in t.state.devices_down and "device:shoe" not in t.state.blocks
    ignored = remedy(t.events, "input.ignored")
    assert said in ignored.payload["reason"] and "take it out of the shoe" in ignored.payload["reason"]
    assert "'joker'" in ignored.payload["input"]


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
@pytest.mark.parametrize("fallback", ["automated_shoe", "manual_shoe"])
@pytest.mark.parametrize("when", ["dealing", "dealt", "decision"])
def test_a_foreign_card_read_while_the_table_deals_by_hand_voids_nothing(
    chapter: str, fallback: DealingMethod, when: str
) -> None:
    t = hand_dealt(chapter, fallback)
    t.press("no_more_bets")
    assert t.state.phase is Phase.DEALT
    if when == "dealing":
        # No input leaves a round dealt by hand in DEALING (the layout is laid from the shuffler's order in the step
        # that starts the deal), so the state is put there directly: the void must read the method, not the phase.
        t.state = replace(t.state, phase=Phase.DEALING)
    pending = t.press("dealt") if when == "decision" else []
    t.feed(FOREIGN)
    told_to_take_it_out(t, "the table deals by hand")
    if when != "dealing":  # the round is played to its end on the cards dealt by hand
        decide_all(t, pending or t.press("dealt"))
        assert t.types().count("round.completed") == 1


def test_a_foreign_card_read_between_deals_voids_nothing() -> None:
    t = table("655a", "automated_shoe")
    assert t.state.phase is Phase.BETTING
    t.feed(FOREIGN)
    told_to_take_it_out(t, "no round is being dealt from it")


def voided_by_the_foreign_card(t: PureTable, chapter: str) -> None:
    void = remedy(t.events, "round.voided")
    assert void.rule == cite(chapter, "13(c)") and "'joker'" in void.payload["reason"]
    returned_everything(t, void)


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
@pytest.mark.parametrize("method", ["automated_shoe", "manual_shoe"])
def test_a_foreign_card_from_the_shoe_dealing_the_round_voids_it(chapter: str, method: DealingMethod) -> None:
    t = table(chapter, method)
    on(t, "dispense_stack", lambda c: [FOREIGN])
    t.press("no_more_bets")
    if method == "manual_shoe":
        t.draw(1)
        t.feed(FOREIGN)
    voided_by_the_foreign_card(t, chapter)


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
@pytest.mark.parametrize("fallback", ["automated_shoe", "manual_shoe"])
def test_a_foreign_card_from_the_fallback_shoe_dealing_the_round_voids_it(
    chapter: str, fallback: DealingMethod
) -> None:
    t = hand_dealt(chapter, fallback)
    t.feed(DeviceFault("shuffler", code="malfunction"))
    t.feed(MarkOutOfOrder("shuffler"))
    t.feed(Confirm("dealer", "shuffled"))
    on(t, "dispense_stack", lambda c: [FOREIGN])
    t.press("no_more_bets")
    if fallback == "manual_shoe":
        t.draw(1)
        t.feed(FOREIGN)
    voided_by_the_foreign_card(t, chapter)
