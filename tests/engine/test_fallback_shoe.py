"""A hand-dealt table whose shuffler is out of order deals from its fallback automated shoe (.13(g)): a jam of that
shoe voids the round (.13(f)) and holds the shoe as it would on a shoe-dealt table, since the hold follows the method
the round deals by (`ctx.method`), not the one configured. Once the shuffler is back and the table deals by hand
again, the held shoe blocks no round (none deals from it) but stays held until it says the fault is cleared,
identifies again or is marked out of order; turned to again before that, it blocks the next round (docs/rules.md)."""

from __future__ import annotations

import pytest

from controller.core.events import DomainEvent, JournaledEvent
from controller.engine.commands import DeviceCommand
from controller.engine.inputs import Confirm, Input, MarkOutOfOrder, Recover
from controller.engine.spec import DealingMethod
from controller.engine.state import Phase
from controller.mqtt.device_status import DeviceTracker
from controller.store import snapshot
from drivers.interfaces import DeviceFault, DeviceFaultCleared, DeviceOnline
from tests.engine.chapter_faults import cite, counting, on, remedy, table
from tests.engine.conftest import PureTable, enter_player
from tests.engine.held_faults import NO_HIT, JammedShoe, dispenses, play_round, voided_and_held

HAND_AND_SHOE = ("643a", "655a", "683a")  # the chapters that deal from the hand and from an automated shoe


def shuffled_by_hand(t: PureTable) -> None:
    """The dealer shuffles and cuts by hand (the shuffler out of order): the shoe is loaded with the deck."""
    t.shoe = list(NO_HIT)
    t.feed(Confirm("dealer", "shuffled"))


def shuffler_back(t: PureTable) -> list[DomainEvent]:
    """The shuffler, repaired, identifies (its malfunction was kept while it was covered) and is put back in service."""
    t.feed(DeviceOnline("shuffler", identity={"model": "sim"}))
    return t.feed(MarkOutOfOrder("shuffler", out=False))


def by_the_shoe(chapter: str) -> tuple[PureTable, JammedShoe]:
    """A hand-dealt table, its shuffler marked out of order: the dealer shuffles and cuts by hand, then the round is
    to be dealt from the fallback automated shoe."""
    t = table(chapter, "hand", counting(chapter, fallback_dealing_method="automated_shoe"))
    t.shoe = list(NO_HIT)
    t.decks = [list(NO_HIT) for _ in range(4)]
    shoe = JammedShoe(t)
    t.answer = shoe
    t.feed(DeviceFault("shuffler", code="malfunction"))
    marked = remedy(t.feed(MarkOutOfOrder("shuffler")), "device.out_of_order")
    assert marked.payload["dealing_method"] == "automated_shoe"
    shuffled_by_hand(t)
    assert t.state.phase is Phase.BETTING
    return t, shoe


def jammed_by_the_shoe(chapter: str, code: str = "jam") -> tuple[PureTable, JammedShoe]:
    """The fallback shoe faults (`code`) at its second dispense: the round is void; the shoe stays faulted."""
    t, shoe = by_the_shoe(chapter)

    def first_stack_then_jam(c: DeviceCommand) -> list[Input]:
        shoe.jammed = True
        return shoe.perfect(c)

    on(t, "dispense_stack", first_stack_then_jam)
    shoe.code = code
    enter_player(t, 1)
    t.press("no_more_bets")
    assert t.types().count("round.voided") == 1
    return t, shoe


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
@pytest.mark.parametrize("code", ["jam", "stopped", "misfeed"])
def test_the_fallback_shoe_that_jams_is_held_like_the_configured_one(chapter: str, code: str) -> None:
    t, _ = jammed_by_the_shoe(chapter, code)
    voided_and_held(t, chapter, code)


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_the_fallback_shoe_saying_it_is_cleared_deals_the_next_round(chapter: str) -> None:
    t, shoe = jammed_by_the_shoe(chapter)
    shoe.jammed = False
    back = t.feed(DeviceFaultCleared("shoe", code="jam", detail="cleared at the gate"))
    assert [e.payload["block"] for e in back if e.type == "table.block_cleared"] == ["device:shoe"]
    shuffled_by_hand(t)
    enter_player(t, 1)
    play_round(t)
    assert t.types().count("round.completed") == 1 and t.types().count("round.voided") == 1


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_dealing_by_hand_again_the_held_shoe_blocks_nothing_and_stays_held(chapter: str) -> None:
    t, _ = jammed_by_the_shoe(chapter)
    back = shuffler_back(t)
    assert remedy(back, "device.back_in_service").payload["dealing_method"] == "hand"
    cleared = remedy(back, "table.block_cleared")
    assert cleared.payload["block"] == "device:shoe" and "the shoe stays held" in cleared.payload["by"]
    # The hold stands: nothing says the shoe is usable (its device status stays unusable), its fault is kept.
    assert not [e for e in back if e.type.startswith("device.") and e.payload.get("device") == "shoe"]
    assert "shoe" in t.state.devices_down and t.state.device_faults["shoe"].uncleared == ("jam",)
    # The shuffler shuffles, and a round dealt by hand is played to its end: the shoe is asked nothing.
    assert t.state.phase is Phase.BETTING
    asked = dispenses(t)
    enter_player(t, 1)
    play_round(t)
    assert t.types().count("round.completed") == 1 and dispenses(t) == asked


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_turning_to_the_held_shoe_again_blocks_the_next_round(chapter: str) -> None:
    t, _ = jammed_by_the_shoe(chapter)
    shuffler_back(t)
    t.feed(DeviceFault("shuffler", code="malfunction"))
    enter_player(t, 1)  # a round in betting, its deck shuffled: it is dealt by hand
    play_round(t)
    asked = dispenses(t)
    marked = t.feed(MarkOutOfOrder("shuffler"))
    assert remedy(marked, "device.out_of_order").payload["dealing_method"] == "automated_shoe"
    assert remedy(marked, "device.unusable").payload["device"] == "shoe"
    assert "shuffle.started" not in t.types(marked)
    shuffled_by_hand(t)  # nothing to confirm: no shuffle was asked, the table is blocked
    assert t.state.phase is Phase.BLOCKED and "device:shoe" in t.state.blocks
    assert dispenses(t) == asked


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
@pytest.mark.parametrize("lift", ["fault_cleared", "identified", "marked"])
def test_the_held_shoe_is_lifted_the_usual_ways_while_dealing_by_hand(chapter: str, lift: str) -> None:
    t, shoe = jammed_by_the_shoe(chapter)
    shuffler_back(t)
    shoe.jammed = False
    if lift == "fault_cleared":
        said = remedy(t.feed(DeviceFaultCleared("shoe", code="jam")), "device.fault_cleared")
        assert said.payload["still_held"] == []
    elif lift == "identified":
        t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    else:
        assert remedy(t.feed(MarkOutOfOrder("shoe")), "device.out_of_order").payload["reason"].startswith("fault jam")
    assert "shoe" not in t.state.devices_down and "shoe" not in t.state.device_faults
    assert t.state.phase is Phase.BETTING and "device:shoe" not in t.state.blocks


# What a shoe fault in the deal does, by the method configured, its fallback, and the device marked out of order
# first (so the round deals by the fallback): the method the round deals by decides. An automated shoe's jam (stop,
# misfeed) voids and holds (.13(f), .13(g)), its "empty" voids only; a manual shoe's jam is recorded (docs/rules.md);
# any shoe that deals the round and malfunctions is held and the round void (.13(g)); dealing from the hand no shoe
# fault touches the round, but the fault its fallback shoe would be held for is remembered, blocking nothing
# (tests/engine/test_fallback_shoe_fault.py), and with no fallback shoe nothing is kept.
MATRIX: list[tuple[DealingMethod, DealingMethod, str, DealingMethod]] = [
    ("automated_shoe", "manual_shoe", "", "automated_shoe"),
    ("automated_shoe", "manual_shoe", "shoe", "manual_shoe"),
    ("hand", "automated_shoe", "", "hand"),
    ("hand", "manual_shoe", "", "hand"),
    ("hand", "hand", "", "hand"),
    ("hand", "automated_shoe", "shuffler", "automated_shoe"),
    ("hand", "manual_shoe", "shuffler", "manual_shoe"),
    ("manual_shoe", "hand", "", "manual_shoe"),
]


LOCK = {"automated_shoe": "10(a)(2)", "manual_shoe": "8(b)", "hand": "9(a)(3)"}  # "no more bets" by each method


def expected(dealt_by: DealingMethod, fallback: DealingMethod, code: str) -> tuple[bool, bool, bool]:
    """(voided, held, blocked) for a fault `code` of the shoe while the round is dealt by `dealt_by`: dealing by hand,
    what the shoe would be held for once the table turns to it (its fallback) is kept, blocking nothing."""
    if dealt_by == "hand":
        held = fallback != "hand" and expected(fallback, fallback, code)[1]
        return False, held, False
    if code == "malfunction":
        return True, True, True
    automated = dealt_by == "automated_shoe"
    return automated, automated and code != "empty", automated and code != "empty"


@pytest.mark.parametrize(("method", "fallback", "out", "dealt_by"), MATRIX)
@pytest.mark.parametrize("code", ["jam", "stopped", "misfeed", "empty", "malfunction"])
def test_a_shoe_fault_in_the_deal_follows_the_method_the_round_deals_by(
    method: DealingMethod, fallback: DealingMethod, out: str, dealt_by: DealingMethod, code: str
) -> None:
    t = table("655a", method, counting("655a", fallback_dealing_method=fallback))
    if out:
        t.feed(DeviceFault(out, code="malfunction"))
        t.feed(MarkOutOfOrder(out))
        if out == "shuffler":
            t.feed(Confirm("dealer", "shuffled"))
    enter_player(t, 1)
    on(t, "dispense_stack", lambda c: [DeviceFault("shoe", code=code)])
    dealing = t.press("no_more_bets")
    assert remedy(dealing, "no_more_bets").rule == cite("655a", LOCK[dealt_by])
    if "device.fault" not in t.types(dealing):  # a manual shoe's reader or the hand: the fault comes in the deal
        t.draw(1)
        t.feed(DeviceFault("shoe", code=code))
    # The automated shoe marked out of order, `shoe` is the manual shoe standing in for it: its faults are a manual
    # shoe's (tests/engine/test_stand_in_shoe.py), not ignored as the covered shoe's.
    voided, held, blocked = expected(dealt_by, fallback, code)
    assert (t.types().count("round.voided") == 1) is voided
    assert ("device:shoe" in t.state.blocks) is blocked
    assert ("shoe" in t.state.device_faults) is held


def test_the_shoe_held_while_dealing_by_hand_outlasts_a_restart_and_blocks_nothing() -> None:
    """Kept with the state: at a restart the shoe is said held again (`restored`), and the table, dealing by hand,
    does not wait for it."""
    t, shoe = jammed_by_the_shoe("655a")
    shuffler_back(t)
    t.state = snapshot.decode(snapshot.encode(t.state))
    restored = remedy(t.feed(Recover()), "device.unusable")
    assert restored.payload["restored"] and restored.payload["fault"]["code"] == "jam"
    assert "no new round" not in restored.payload["remedy"] and "deals by hand" in restored.payload["remedy"]
    assert "device:shoe" not in t.state.blocks and t.state.phase is Phase.BETTING
    t.feed(DeviceOnline("shoe"))  # its identification at start-up clears nothing
    assert "shoe" in t.state.device_faults
    shoe.jammed = False
    t.feed(DeviceOnline("shoe"))
    assert "shoe" not in t.state.device_faults and "shoe" not in t.state.devices_down


def shoe_status(t: PureTable) -> str:
    """The shoe's device status (docs/mqtt.md) as the daemon publishes it from the table's events."""
    tracker = DeviceTracker("t1", "boot-1", ("shoe", "shuffler"), started="2026-11-28T00:00:00.000000Z")
    for seq, e in enumerate(t.events, 1):
        ts = f"2026-11-28T00:00:00.{seq:06d}Z"
        tracker.apply(JournaledEvent(seq, f"e{seq}", "boot-1", ts, "t1", e.round_id, e.type, e.rule, e.payload))
    return next(s.state for s in tracker.statuses() if s.device_id == "shoe")


def test_the_shoe_held_while_dealing_by_hand_shows_unusable_until_it_is_lifted() -> None:
    t, shoe = jammed_by_the_shoe("655a")
    assert shoe_status(t) == "unusable"
    shuffler_back(t)
    enter_player(t, 1)
    play_round(t)
    assert t.types().count("round.completed") == 1 and shoe_status(t) == "unusable"
    shoe.jammed = False
    t.feed(DeviceFaultCleared("shoe", code="jam"))
    assert shoe_status(t) != "unusable"
