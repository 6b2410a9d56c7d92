"""The automated shoe jams (stops, misfeeds) at a dispense while the round is being dealt. .13(f) voids the round; and
the jam is the shoe's, not only the dispense's: a shoe still jammed would void the next round at its first dispense,
its wagers taken. So the shoe is held unusable (.13(g)) as a jam reported before the first card or between rounds is
(tests/engine/test_fault_before_the_deal.py, test_fault_between_rounds.py), until it says the fault is cleared,
identifies again or is marked out of order (docs/rules.md). "empty" holds nothing: the reshuffle refills the shoe."""

from __future__ import annotations

import pytest

from controller.engine.inputs import MarkOutOfOrder, Recover
from controller.engine.state import Phase
from controller.store import snapshot
from drivers.interfaces import DeviceFaultCleared, DeviceOnline
from tests.engine.chapter_faults import cite, methods, remedy
from tests.engine.conftest import PureTable, enter_player
from tests.engine.held_faults import AUTOMATED, jam_while_dealing, play_round, voided_and_held


def plays_on(t: PureTable) -> None:
    """The next round opens, takes a wager and is dealt and completed: nothing more is voided."""
    assert t.state.phase is Phase.BETTING and t.types()[-1] == "betting.opened"
    enter_player(t, 1)
    play_round(t)
    assert t.types().count("round.voided") == 1 and t.types().count("round.completed") == 1


@pytest.mark.parametrize("chapter", AUTOMATED)
@pytest.mark.parametrize("code", ["jam", "stopped", "misfeed"])
def test_a_jam_at_a_dispense_voids_the_round_and_holds_the_shoe(chapter: str, code: str) -> None:
    t, _ = jam_while_dealing(chapter, code)
    voided_and_held(t, chapter, code)
    void = remedy(t.events, "round.voided")
    assert "with any cards already dealt" in void.payload["remedy"]
    # No betting opened on the jammed shoe: no wager was taken for a round its first dispense would void.
    assert t.types().count("betting.opened") == 1


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_the_shoe_saying_its_jam_is_cleared_lets_the_next_round_play(chapter: str) -> None:
    t, shoe = jam_while_dealing(chapter)
    shoe.jammed = False
    back = t.feed(DeviceFaultCleared("shoe", code="jam", detail="cleared at the gate"))
    said = remedy(back, "device.fault_cleared")
    assert said.rule == cite(chapter, "13(g)") and said.payload["still_held"] == []
    assert [e.payload["block"] for e in back if e.type == "table.block_cleared"] == ["device:shoe"]
    plays_on(t)


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_the_shoe_identifying_again_lets_the_next_round_play(chapter: str) -> None:
    t, shoe = jam_while_dealing(chapter)
    shoe.jammed = False
    back = t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    assert [e.payload["block"] for e in back if e.type == "table.block_cleared"] == ["device:shoe"]
    plays_on(t)


@pytest.mark.parametrize("chapter", [c for c in AUTOMATED if "manual_shoe" in methods(c)])
def test_the_jammed_shoe_marked_out_of_order_hands_over_to_the_manual_shoe(chapter: str) -> None:
    t, _ = jam_while_dealing(chapter)
    marked = remedy(t.feed(MarkOutOfOrder("shoe")), "device.out_of_order")
    assert marked.rule == cite(chapter, "13(g)") and "jam" in marked.payload["reason"]
    assert marked.payload["dealing_method"] == "manual_shoe" and t.state.phase is Phase.BETTING


def test_the_hold_outlasts_a_restart() -> None:
    """Kept with the state: the shoe's identification at start-up clears nothing, its next one does."""
    t, shoe = jam_while_dealing("655a")
    t.state = snapshot.decode(snapshot.encode(t.state))
    restored = remedy(t.feed(Recover()), "device.unusable")
    assert restored.payload["restored"] and restored.payload["fault"]["code"] == "jam"
    hello = t.feed(DeviceOnline("shoe"))
    assert "table.block_cleared" not in t.types(hello) and t.state.phase is Phase.BLOCKED
    shoe.jammed = False
    t.feed(DeviceOnline("shoe"))
    plays_on(t)


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_an_empty_shoe_at_a_dispense_voids_and_holds_nothing(chapter: str) -> None:
    """The reshuffle the void asks for refills the shoe: the next round opens."""
    t, shoe = jam_while_dealing(chapter, "empty")
    assert remedy(t.events, "round.voided").rule == cite(chapter, "13(f)")
    assert "device.unusable" not in t.types() and "device:shoe" not in t.state.blocks
    shoe.jammed = False
    plays_on(t)
