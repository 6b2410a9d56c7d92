"""A hand-dealt table whose fallback is a manual shoe has one shoe: the fallback. Marked out of order (.13(g): "covered
or [with] a sign indicating that [it] is out of order"), it is not dealt from: with the shuffler out of order too no
dealing method can be used, and the table waits (`no_method`) until either is back in service (docs/rules.md)."""

from __future__ import annotations

import pytest

from controller.engine.inputs import Confirm, MarkOutOfOrder
from controller.engine.state import Phase
from drivers.interfaces import DeviceFault
from tests.engine.chapter_faults import counting, remedy, table
from tests.engine.conftest import PureTable, decide_all, enter_player
from tests.engine.held_faults import NO_HIT

HAND_AND_MANUAL = ("643a", "655a", "683a")  # the chapters that deal from the hand and from a manual shoe


def hand_dealt(chapter: str) -> PureTable:
    t = table(chapter, "hand", counting(chapter, fallback_dealing_method="manual_shoe"))
    t.shoe = list(NO_HIT)
    t.decks = [list(NO_HIT) for _ in range(4)]
    return t


def shuffler_out(t: PureTable) -> list[str]:
    t.feed(DeviceFault("shuffler", code="malfunction"))
    marked = t.feed(MarkOutOfOrder("shuffler"))
    t.shoe = list(NO_HIT)
    t.feed(Confirm("dealer", "shuffled"))
    return [str(remedy(marked, "device.out_of_order").payload["takes_over"])]


def nothing_dealt(t: PureTable) -> None:
    """No round is dealt: "no more bets" is refused and no card drawn from the covered shoe is used."""
    pressed = t.press("no_more_bets")
    assert t.types(pressed) == ["no_more_bets.refused"]
    assert remedy(pressed, "no_more_bets.refused").payload["blocks"] == ["no_method"]
    assert t.state.phase is not Phase.DEALING
    assert "card.dealt" not in t.types(t.draw(1))


@pytest.mark.parametrize("chapter", HAND_AND_MANUAL)
def test_the_covered_shoe_does_not_take_over_from_the_shuffler(chapter: str) -> None:
    t = hand_dealt(chapter)
    covered = remedy(t.feed(MarkOutOfOrder("shoe")), "device.out_of_order")
    assert covered.payload["takes_over"] == "hand"  # the shuffler deals by hand still: nothing stops the table
    t.feed(DeviceFault("shuffler", code="malfunction"))
    marked = remedy(t.feed(MarkOutOfOrder("shuffler")), "device.out_of_order")
    assert marked.payload["takes_over"] == "manual shuffle and cut"  # no dealing method: the fallback shoe is covered
    assert marked.payload["dealing_method"] is None
    assert "no_method" in t.state.blocks and "manual_shoe" in t.state.blocks["no_method"]
    nothing_dealt(t)


@pytest.mark.parametrize("chapter", HAND_AND_MANUAL)
def test_covering_the_fallback_shoe_in_use_stops_the_table_until_it_is_back(chapter: str) -> None:
    t = hand_dealt(chapter)
    assert shuffler_out(t) == ["manual shuffle and cut, dealing by manual_shoe"]
    covered = remedy(t.feed(MarkOutOfOrder("shoe")), "device.out_of_order")
    assert covered.payload["takes_over"] == "no other dealing method"
    assert covered.payload["dealing_method"] is None  # no method is usable: not the configured "hand"
    assert "no_method" in t.state.blocks
    nothing_dealt(t)
    # Back in service, the manual shoe deals the round its wagers wait for.
    back = t.feed(MarkOutOfOrder("shoe", out=False))
    assert remedy(back, "device.back_in_service").payload["dealing_method"] == "manual_shoe"
    assert "no_method" not in t.state.blocks
    enter_player(t, 1)
    t.press("no_more_bets")
    assert t.state.phase is Phase.DEALING
    decide_all(t, t.draw())
    assert t.types().count("round.completed") == 1


def test_a_shoe_back_in_service_does_not_lift_the_wait_for_the_shuffler() -> None:
    """No fallback configured: the shuffler out of order stops a hand-dealt table; the shoe covered and back changes
    nothing of that, since dealing from the hand needs the shuffler."""
    t = table("655a", "hand", counting("655a", fallback_dealing_method=None))
    shuffler_out(t)
    assert "no_method" in t.state.blocks
    t.feed(MarkOutOfOrder("shoe"))
    back = t.feed(MarkOutOfOrder("shoe", out=False))
    assert "table.block_cleared" not in t.types(back)
    assert remedy(back, "device.back_in_service").payload["dealing_method"] is None  # the shuffler still out
    assert "no_method" in t.state.blocks
    nothing_dealt(t)
