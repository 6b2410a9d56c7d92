"""A device fault reported while no round needs the device: the automated shoe jams after every card of the round
is on the layout, or the shuffler jams while no shuffle is under way. The round in play finishes as the chapter
says; the next round does not open betting on a device the table knows is faulted (.13(g)), so no wager is taken
for a round whose first dispense would void it (.13(f)). The faults DURING a round keep their remedies
(tests/engine/test_fault_matrix.py)."""

from __future__ import annotations

import json

import pytest

from controller.core.events import DomainEvent
from controller.engine.commands import DispenseStack, Shuffle
from controller.engine.inputs import CloseTable, MarkOutOfOrder, OpenTable, Recover
from controller.engine.state import Phase
from controller.store import snapshot
from drivers.interfaces import DeviceFault, DeviceOffline, DeviceOnline
from tests.engine.chapter_faults import cite, methods, remedy
from tests.engine.conftest import PureTable, enter_player
from tests.engine.device_checks import StatusMirror
from tests.engine.held_faults import AUTOMATED, JammedShoe, jam_after_the_deal, play_round, quiet_table


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_a_shoe_jam_after_the_deal_blocks_the_next_round_before_any_wager(chapter: str) -> None:
    t, shoe = jam_after_the_deal(chapter)
    assert "round.voided" not in t.types()  # the round in play finished on its cards
    e = remedy(t.events, "device.unusable")
    assert e.rule == cite(chapter, "13(g)") and e.payload["device"] == "shoe"
    assert "jam" in e.payload["reason"] and "identifies again" in e.payload["remedy"]
    assert t.state.phase is Phase.BLOCKED and "device:shoe" in t.state.blocks
    assert t.state.block_reason is not None and "jam" in t.state.block_reason
    assert t.types().count("betting.opened") == 1
    # Chips put down now are not taken: betting is not open.
    rejected = enter_player(t, 1)
    assert rejected and {e.type for e in rejected} == {"wager.rejected"}
    # The shoe is cleared and comes back (it identifies again): the next round is shuffled and opens.
    shoe.jammed = False
    back = t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    assert [e.payload["block"] for e in back if e.type == "table.block_cleared"] == ["device:shoe"]
    # mypy keeps the phase narrowed by the assert above across the inputs fed since (python/mypy#17537)
    assert t.types(back)[-1] == "betting.opened" and t.state.phase is Phase.BETTING  # type: ignore[comparison-overlap]
    enter_player(t, 1)
    play_round(t)
    assert "round.voided" not in t.types() and t.types().count("round.completed") == 2


@pytest.mark.parametrize("chapter", [c for c in AUTOMATED if "manual_shoe" in methods(c)])
def test_a_shoe_jammed_between_rounds_marked_out_of_order_hands_over_to_the_manual_shoe(chapter: str) -> None:
    t, _ = jam_after_the_deal(chapter)
    marked = remedy(t.feed(MarkOutOfOrder("shoe")), "device.out_of_order")
    assert marked.rule == cite(chapter, "13(g)") and "jam" in marked.payload["reason"]
    assert t.state.phase is Phase.BETTING and marked.payload["dealing_method"] == "manual_shoe"


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_a_shoe_jam_while_betting_keeps_the_wagers_and_refuses_no_more_bets(chapter: str) -> None:
    """Wagers already on the layout are not voided: "no more bets" waits for the shoe (no card is out)."""
    t = quiet_table(chapter, "automated_shoe")
    shoe = JammedShoe(t)
    t.answer = shoe
    shoe.jammed = True
    remedy(t.feed(DeviceFault("shoe", code="jam")), "device.unusable")
    refused = remedy(t.press("no_more_bets"), "no_more_bets.refused")
    assert refused.rule == cite(chapter, "13(g)") and t.state.phase is Phase.BETTING
    assert not any(isinstance(c, DispenseStack) for c in t.commands)
    shoe.jammed = False
    t.feed(DeviceOnline("shoe"))
    play_round(t)
    assert "round.voided" not in t.types() and "round.completed" in t.types()


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_a_shoe_jam_while_betting_with_nothing_on_the_layout_closes_betting(chapter: str) -> None:
    t = quiet_table(chapter, "automated_shoe")
    play_round(t)  # one round played; the next opens with nothing on the layout
    assert t.state.phase is Phase.BETTING
    t.feed(DeviceFault("shoe", code="misfeed"))
    assert t.state.phase is Phase.BLOCKED and t.state.round is None  # type: ignore[comparison-overlap]


@pytest.mark.parametrize("chapter", ["643a", "655a", "679a", "683a", "684a"])
@pytest.mark.parametrize("code", ["jam", "stopped", "incomplete"])
def test_a_shuffler_fault_between_shuffles_lets_the_round_finish_and_blocks_the_next(chapter: str, code: str) -> None:
    t = quiet_table(chapter, methods(chapter)[0])
    t.feed(DeviceFault("shuffler", code=code, detail="lid open"))
    e = remedy(t.events, "device.unusable")
    assert e.rule == cite(chapter, "13(g)") and e.payload["device"] == "shuffler" and code in e.payload["reason"]
    shuffles = sum(isinstance(c, Shuffle) for c in t.commands)
    play_round(t)  # the round's deck was shuffled before the fault: it is dealt and settled
    assert "round.voided" not in t.types() and "round.completed" in t.types()
    assert t.state.phase is Phase.BLOCKED and "device:shuffler" in t.state.blocks
    assert sum(isinstance(c, Shuffle) for c in t.commands) == shuffles  # no shuffle asked of a faulted shuffler
    assert "shuffle.failed" not in t.types()
    t.feed(DeviceOnline("shuffler"))
    assert t.state.phase is Phase.BETTING and t.types()[-1] == "betting.opened"  # type: ignore[comparison-overlap]


@pytest.mark.parametrize("chapter", ["643a", "655a", "679a", "683a", "684a"])
def test_a_shuffler_offline_while_betting_does_not_hold_the_wagers_on_the_layout(chapter: str) -> None:
    """The round's deck is shuffled before betting opens: "no more bets" is not refused for the shuffler."""
    t = quiet_table(chapter, methods(chapter)[0])
    t.feed(DeviceOffline("shuffler", reason="unplugged"))
    assert "device:shuffler" in t.state.blocks
    play_round(t)
    assert "no_more_bets.refused" not in t.types() and "round.completed" in t.types()
    assert t.state.phase is Phase.BLOCKED


def restarted(t: PureTable) -> list[DomainEvent]:
    """The daemon restarts on the same journal: the state as stored (round-tripped through its stored form), then
    `Recover`, stepped before anything the restarted devices report (docs/recovery.md)."""
    t.state = snapshot.decode(snapshot.encode(t.state))
    return t.feed(Recover())


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_a_shoe_jam_nobody_cleared_still_blocks_the_table_after_a_restart(chapter: str) -> None:
    t, shoe = jam_after_the_deal(chapter)
    assert t.state.phase is Phase.BLOCKED
    after = restarted(t)
    assert after[0].type == "table.recovered" and "device:shoe" in after[0].payload["blocks"]
    stands = remedy(after, "device.unusable")
    assert stands.rule == cite(chapter, "13(g)") and stands.payload["device"] == "shoe"
    assert stands.payload["restored"] and "jam" in stands.payload["reason"]
    # The shoe identifies to the restarted daemon, still jammed: that says nothing about the jam.
    hello = t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    assert "table.block_cleared" not in t.types(hello) and "betting.opened" not in t.types(hello)
    assert remedy(hello, "device.unusable").payload["device"] == "shoe"
    assert t.state.phase is Phase.BLOCKED and "device:shoe" in t.state.blocks
    assert not any(isinstance(c, DispenseStack) for c in t.commands[-3:])
    # The attendant clears the jam and restarts the shoe: it identifies again, and the next round opens.
    shoe.jammed = False
    back = t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    assert [e.payload["block"] for e in back if e.type == "table.block_cleared"] == ["device:shoe"]
    assert t.state.phase is Phase.BETTING  # type: ignore[comparison-overlap]
    enter_player(t, 1)
    play_round(t)
    assert "round.voided" not in t.types() and t.types().count("round.completed") == 2


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_a_shoe_jam_survives_closing_the_table_and_a_restart(chapter: str) -> None:
    """Ctrl-C closes a blocked table at once; the next start opens it (no round to recover): the block stands."""
    t, _ = jam_after_the_deal(chapter)
    t.feed(CloseTable())
    assert t.state.phase is Phase.CLOSED
    restarted(t)
    t.feed(DeviceOnline("shoe"))  # identified at start-up, before the table opens
    t.feed(OpenTable())
    assert "device:shoe" in t.state.blocks and "betting.opened" not in t.types()[-5:]


@pytest.mark.parametrize("chapter", ["643a", "655a"])
def test_a_shuffler_jam_survives_a_restart_until_marked_out_of_order(chapter: str) -> None:
    t = quiet_table(chapter, "automated_shoe")
    t.feed(DeviceFault("shuffler", code="jam", detail="lid open"))
    play_round(t)
    restarted(t)
    t.feed(DeviceOnline("shuffler"))
    assert t.state.phase is Phase.BLOCKED and "device:shuffler" in t.state.blocks
    marked = remedy(t.feed(MarkOutOfOrder("shuffler")), "device.out_of_order")
    assert "jam" in marked.payload["reason"] and "device:shuffler" not in t.state.blocks


def test_a_state_stored_before_faults_were_kept_recovers_as_before() -> None:
    """An older journal's state has no `device_faults`: it is restored, and its device block clears when the device
    identifies, as it did when that journal was written; the restart says the hold again, as for a device offline."""
    t, _ = jam_after_the_deal("655a")
    doc = json.loads(snapshot.encode(t.state))
    del doc["state"]["device_faults"]
    t.state = snapshot.decode(json.dumps(doc).encode())
    assert t.state.device_faults == {} and "device:shoe" in t.state.blocks
    # Said again like any hold, so the new boot's status reads `unusable`; with no fault to clear, not as one.
    said = remedy(t.feed(Recover()), "device.unusable")
    assert said.payload["restored"] and "fault" not in said.payload and "jam" in said.payload["reason"]
    back = t.feed(DeviceOnline("shoe"))
    assert [e.payload["block"] for e in back if e.type == "table.block_cleared"] == ["device:shoe"]


@pytest.mark.parametrize("chapter", ["643a", "655a"])
def test_a_shuffler_held_for_being_offline_reads_unusable_after_a_restart_until_it_identifies(chapter: str) -> None:
    """The hold of a device merely offline is kept with the state (its block); a restart says it again, so the new
    boot's `device/<id>` reads `unusable` at once instead of `unknown` while the table is blocked on it."""
    t = quiet_table(chapter, "automated_shoe")
    t.feed(DeviceOffline("shuffler", reason="unplugged"))
    play_round(t)
    status = StatusMirror()
    status.feed(t.events)
    status.restart()
    after = restarted(t)
    status.feed(after)
    said = remedy(after, "device.unusable")
    assert said.rule == cite(chapter, "13(g)") and said.payload["device"] == "shuffler" and said.payload["restored"]
    assert said.payload["reason"] == "offline (unplugged)" and "identifies" in said.payload["remedy"]
    assert "fault" not in said.payload  # no fault was reported: nothing for `fault_cleared` to clear
    assert _state(status, "shuffler") == "unusable" and "device:shuffler" in t.state.blocks
    # Its identification is the shuffler back: the hold lifts, and its status says so.
    back = t.feed(DeviceOnline("shuffler"))
    status.feed(back)
    assert [e.payload["block"] for e in back if e.type == "table.block_cleared"] == ["device:shuffler"]
    assert _state(status, "shuffler") == "online" and "shuffler" not in t.state.devices_down


def _state(status: StatusMirror, dev: str) -> str:
    return {s.device_id: s.state for s in status.tracker.statuses()}[dev]
