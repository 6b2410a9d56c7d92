"""A shoe or shuffler that says its fault is cleared (`fault_cleared`, docs/protocol.md section 5) lifts the hold its
fault put on the table (.13(g)) without a restart; a clear for a fault it does not hold lifts nothing. And the table
says `device.unusable` once per fault: a device repeating a fault already held adds only its `device.fault`."""

from __future__ import annotations

import json

import pytest

from controller.engine.inputs import MarkOutOfOrder, Recover
from controller.engine.state import Phase
from controller.store import snapshot
from drivers.interfaces import DeviceFault, DeviceFaultCleared, DeviceOnline
from tests.engine.chapter_faults import cite, methods, remedy
from tests.engine.conftest import PureTable, enter_player
from tests.engine.held_faults import AUTOMATED, jam_after_the_deal, play_round, quiet_table


def cleared(t: PureTable, code: str, dev: str = "shoe") -> list[str]:
    return t.types(t.feed(DeviceFaultCleared(dev, code=code, detail="cleared by the attendant")))


def plays_on(t: PureTable) -> None:
    """The next round opens, takes a wager and completes; nothing is voided."""
    assert t.state.phase is Phase.BETTING and t.types()[-1] == "betting.opened"
    enter_player(t, 1)
    play_round(t)
    assert "round.voided" not in t.types() and t.types().count("round.completed") == 2


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_the_shoe_says_its_jam_is_cleared_and_the_next_round_opens(chapter: str) -> None:
    t, shoe = jam_after_the_deal(chapter)
    assert t.state.phase is Phase.BLOCKED and "device:shoe" in t.state.blocks
    shoe.jammed = False
    back = t.feed(DeviceFaultCleared("shoe", code="jam", detail="cleared by the attendant"))
    said = remedy(back, "device.fault_cleared")
    assert said.rule == cite(chapter, "13(g)")
    assert said.payload["device"] == "shoe" and said.payload["code"] == "jam" and said.payload["still_held"] == []
    assert said.payload["fault"]["code"] == "jam" and said.payload["fault"]["round_no"] == 1
    assert [e.payload["block"] for e in back if e.type == "table.block_cleared"] == ["device:shoe"]
    assert t.types(back).index("device.fault_cleared") < t.types(back).index("table.block_cleared")
    assert t.state.device_faults == {} and "shoe" not in t.state.devices_down
    plays_on(t)


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_a_clear_for_a_fault_the_device_does_not_hold_lifts_nothing(chapter: str) -> None:
    t, _ = jam_after_the_deal(chapter)
    for dev, code in (("shoe", "misfeed"), ("shuffler", "jam"), ("dealer_panel", "jam")):
        out = cleared(t, code, dev)
        assert out == ["input.ignored"], (dev, code)
    ignored = t.events[-3]
    assert "holds no fault misfeed" in ignored.payload["reason"] and "it holds jam" in ignored.payload["reason"]
    assert t.state.phase is Phase.BLOCKED and "device:shoe" in t.state.blocks
    assert [f.uncleared for f in t.state.device_faults.values()] == [("jam",)]


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_two_faults_held_are_each_said_and_each_cleared(chapter: str) -> None:
    t, shoe = jam_after_the_deal(chapter)
    shoe.jammed = False  # the attendant clears both; the shoe says so one at a time
    again = t.feed(DeviceFault("shoe", code="misfeed", detail="two cards at the gate"))
    assert remedy(again, "device.unusable").payload["reason"] == "fault misfeed: two cards at the gate"
    first = t.feed(DeviceFaultCleared("shoe", code="jam"))
    assert t.types(first) == ["device.fault_cleared"] and remedy(first, "device.fault_cleared").payload[
        "still_held"
    ] == ["misfeed"]
    assert t.state.phase is Phase.BLOCKED and "device:shoe" in t.state.blocks
    assert cleared(t, "jam") == ["input.ignored"]  # cleared already: once is enough
    assert cleared(t, "misfeed")[:2] == ["device.fault_cleared", "table.block_cleared"]
    plays_on(t)


@pytest.mark.parametrize("chapter", ["643a", "655a", "679a", "683a", "684a"])
def test_the_shuffler_says_its_fault_is_cleared(chapter: str) -> None:
    t = quiet_table(chapter, methods(chapter)[0])
    t.feed(DeviceFault("shuffler", code="stopped", detail="lid open"))
    play_round(t)
    assert t.state.phase is Phase.BLOCKED and "device:shuffler" in t.state.blocks
    assert cleared(t, "stopped", "shuffler")[:3] == ["device.fault_cleared", "table.block_cleared", "shuffle.started"]
    plays_on(t)


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_a_jam_kept_across_a_restart_is_lifted_by_the_shoe_saying_it_is_cleared(chapter: str) -> None:
    t, shoe = jam_after_the_deal(chapter)
    shoe.jammed = False
    t.state = snapshot.decode(snapshot.encode(t.state))
    t.feed(Recover())
    hello = t.feed(DeviceOnline("shoe"))  # its start-up identification says nothing of the jam
    assert "table.block_cleared" not in t.types(hello) and t.state.phase is Phase.BLOCKED
    assert cleared(t, "jam")[:2] == ["device.fault_cleared", "table.block_cleared"]
    plays_on(t)


def test_a_fault_stored_before_devices_could_say_it_is_cleared_is_still_cleared() -> None:
    """An older journal's held fault has no `codes`: its `code` is the one held."""
    t, _ = jam_after_the_deal("655a")
    doc = json.loads(snapshot.encode(t.state))
    del doc["state"]["device_faults"]["shoe"]["codes"]
    t.state = snapshot.decode(json.dumps(doc).encode())
    assert t.state.device_faults["shoe"].uncleared == ("jam",)
    assert cleared(t, "misfeed") == ["input.ignored"]
    assert cleared(t, "jam")[:2] == ["device.fault_cleared", "table.block_cleared"]


def test_a_clear_from_a_shoe_marked_out_of_order_is_not_used() -> None:
    t, _ = jam_after_the_deal("655a")
    t.feed(MarkOutOfOrder("shoe"))
    assert cleared(t, "jam") == ["input.ignored"] and "shoe" in t.state.out_of_order


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_a_fault_repeated_while_held_is_said_unusable_once(chapter: str) -> None:
    t, _ = jam_after_the_deal(chapter)
    assert t.types().count("device.unusable") == 1
    for _ in range(3):
        repeat = t.feed(DeviceFault("shoe", code="jam", detail="card jam at the dispensing gate"))
        assert t.types(repeat) == ["device.fault"]  # the report is recorded; the table says nothing new
    # A new kind of fault while held is said.
    assert "device.unusable" in t.types(t.feed(DeviceFault("shoe", code="misfeed")))
    assert t.types(t.feed(DeviceFault("shoe", code="misfeed"))) == ["device.fault"]
    assert t.types().count("device.unusable") == 2


def test_a_fault_repeated_after_a_restart_is_not_said_again() -> None:
    """The restart says the held fault once (`restored`); the shoe repeating it adds nothing."""
    t, _ = jam_after_the_deal("655a")
    t.state = snapshot.decode(snapshot.encode(t.state))
    restored = t.feed(Recover())
    assert t.types(restored).count("device.unusable") == 1
    assert t.types(t.feed(DeviceFault("shoe", code="jam"))) == ["device.fault"]
