"""A hand-dealt table's fallback shoe that reports a fault while the table deals by hand: no round asks it for a card,
so nothing waits for it, but a shoe that jams (stops, misfeeds) or malfunctions "cannot be used" (.13(g)) and the
engine knows its state only from what it said last. The table remembers it (`devices_down`, `device_faults`): should
the table turn to the shoe (the shuffler marked out of order) before the shoe says the fault is cleared, identifies
again or is marked out of order, the next round waits for it before betting opens, instead of taking wagers for a
round the shoe's first dispense would void. What is remembered is what the fallback would hold: an automated shoe's
jam, stop, misfeed or malfunction; a manual shoe's malfunction only (its jam is recorded only, docs/rules.md); an
`empty` shoe is refilled by the next shuffle. A hand-dealt table with no fallback shoe keeps nothing."""

from __future__ import annotations

import pytest

from controller.engine.commands import DispenseStack
from controller.engine.inputs import Confirm, MarkOutOfOrder
from controller.engine.spec import DealingMethod
from controller.engine.state import Phase
from drivers.interfaces import DeviceFault, DeviceFaultCleared, DeviceOnline
from tests.engine.chapter_faults import cite, counting, remedy, table
from tests.engine.conftest import PureTable, enter_player
from tests.engine.held_faults import NO_HIT, play_round, the_shoe_deals_the_next_round

HAND_AND_SHOES = ("643a", "655a", "683a")  # the chapters that deal from the hand and from either shoe
HELD: list[tuple[DealingMethod, str]] = [
    ("automated_shoe", "jam"),
    ("automated_shoe", "stopped"),
    ("automated_shoe", "misfeed"),
    ("automated_shoe", "malfunction"),
    ("manual_shoe", "malfunction"),
]


def faulted_while_dealing_by_hand(chapter: str, fallback: DealingMethod | None, code: str) -> PureTable:
    """The shoe reports `code` in betting, the round is dealt by hand to its end, then the shuffler malfunctions."""
    t = table(chapter, "hand", counting(chapter, fallback_dealing_method=fallback))
    t.decks = [list(NO_HIT) for _ in range(4)]
    said = t.feed(DeviceFault("shoe", code=code, detail="card jam at the dispensing gate"))
    assert "device.fault" in t.types(said) and "round.voided" not in t.types(said)
    assert "device:shoe" not in t.state.blocks and t.state.phase is Phase.BETTING  # nothing waits for the shoe
    play_round(t)
    assert t.types().count("round.completed") == 1 and t.state.phase is Phase.BETTING
    t.feed(DeviceFault("shuffler", code="malfunction"))
    return t


@pytest.mark.parametrize("chapter", HAND_AND_SHOES)
@pytest.mark.parametrize(("fallback", "code"), HELD)
def test_turning_to_the_shoe_that_faulted_blocks_before_betting(
    chapter: str, fallback: DealingMethod, code: str
) -> None:
    t = faulted_while_dealing_by_hand(chapter, fallback, code)
    marked = t.feed(MarkOutOfOrder("shuffler"))
    assert remedy(marked, "device.out_of_order").payload["dealing_method"] == fallback
    held = remedy(marked, "device.unusable")
    assert held.payload["device"] == "shoe" and f"fault {code}" in held.payload["reason"]
    assert held.rule == cite(chapter, "13(g)")
    assert "device:shoe" in t.state.blocks and t.state.phase is Phase.BLOCKED
    t.shoe = list(NO_HIT)
    t.feed(Confirm("dealer", "shuffled"))  # no shuffle was asked: the table stays blocked, no wager is taken
    rejected = enter_player(t, 1)
    assert t.state.phase is Phase.BLOCKED and rejected and {e.type for e in rejected} == {"wager.rejected"}
    assert "round.voided" not in t.types() and not any(isinstance(c, DispenseStack) for c in t.commands)


@pytest.mark.parametrize("chapter", HAND_AND_SHOES)
@pytest.mark.parametrize(("fallback", "code"), HELD)
def test_the_fault_is_said_once_and_shows_the_shoe_unusable(chapter: str, fallback: DealingMethod, code: str) -> None:
    t = table(chapter, "hand", counting(chapter, fallback_dealing_method=fallback))
    first = t.feed(DeviceFault("shoe", code=code))
    said = remedy(first, "device.unusable")
    assert said.payload["device"] == "shoe" and "deals by hand" in said.payload["remedy"]
    assert t.state.device_faults["shoe"].uncleared == (code,)
    assert t.types(t.feed(DeviceFault("shoe", code=code))) == ["device.fault"]  # a repeat adds only its record


@pytest.mark.parametrize("chapter", HAND_AND_SHOES)
@pytest.mark.parametrize("lift", ["fault_cleared", "identified", "marked"])
def test_the_remembered_fault_is_lifted_the_usual_ways(chapter: str, lift: str) -> None:
    t = faulted_while_dealing_by_hand(chapter, "automated_shoe", "jam")
    if lift == "fault_cleared":
        assert (
            remedy(t.feed(DeviceFaultCleared("shoe", code="jam")), "device.fault_cleared").payload["still_held"] == []
        )
    elif lift == "identified":
        t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    else:
        t.feed(MarkOutOfOrder("shoe"))
    assert "shoe" not in t.state.devices_down and "shoe" not in t.state.device_faults
    if lift == "marked":
        return  # both covered: no method is left (no_method, tests/engine/test_fallback_shoe_covered.py)
    marked = t.feed(MarkOutOfOrder("shuffler"))
    assert "device.unusable" not in t.types(marked) and "device:shoe" not in t.state.blocks
    the_shoe_deals_the_next_round(t)


NOT_HELD: list[tuple[DealingMethod | None, str]] = [
    ("automated_shoe", "empty"),  # the next shuffle refills it
    ("manual_shoe", "jam"),  # a manual shoe's jam is recorded only
    ("manual_shoe", "misfeed"),
    ("hand", "jam"),  # no fallback shoe: the table never turns to it
    ("hand", "malfunction"),
    (None, "malfunction"),
]


@pytest.mark.parametrize(("fallback", "code"), NOT_HELD)
def test_a_fault_the_fallback_would_not_hold_is_recorded_only(fallback: DealingMethod | None, code: str) -> None:
    t = table("655a", "hand", counting("655a", fallback_dealing_method=fallback))
    assert t.types(t.feed(DeviceFault("shoe", code=code))) == ["device.fault"]
    assert "shoe" not in t.state.devices_down and "shoe" not in t.state.device_faults
