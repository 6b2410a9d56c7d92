"""A hand-dealt table's fallback shoe that goes offline while the table deals by hand blocks nothing (no round deals
from it), but the table remembers it (`devices_down`): should the table turn to the shoe (the shuffler marked out of
order, .13(g)) before the shoe identifies again, the next round waits for it before betting opens, instead of
taking wagers for a round the shoe's first card would void. Identifying again lifts the hold (docs/rules.md)."""

from __future__ import annotations

import pytest

from controller.engine.commands import DeviceCommand, DispenseStack
from controller.engine.inputs import Confirm, Input, MarkOutOfOrder, Recover
from controller.engine.spec import DealingMethod
from controller.engine.state import Phase
from controller.store import snapshot
from drivers.interfaces import DeviceFault, DeviceOffline, DeviceOnline
from tests.engine.chapter_faults import counting, remedy, table
from tests.engine.conftest import PureTable, enter_player
from tests.engine.device_checks import StatusMirror
from tests.engine.held_faults import NO_HIT, play_round, the_shoe_deals_the_next_round

HAND_AND_SHOES = ("643a", "655a", "683a")  # the chapters that deal from the hand and from either shoe
FALLBACKS: tuple[DealingMethod, ...] = ("automated_shoe", "manual_shoe")


class OfflineShoe:
    """The shoe as the daemon sees it: offline, a dispense asked of it fails (`command_failed`, as the shell reports
    a command it could not deliver) and its reader reports no card."""

    def __init__(self, t: PureTable) -> None:
        self.online = True
        self.perfect = t.answer

    def __call__(self, c: DeviceCommand) -> list[Input]:
        if not self.online and isinstance(c, DispenseStack):
            return [DeviceFault("shoe", code="command_failed", detail="dispense_stack: the shoe is offline")]
        return self.perfect(c)


def offline_while_dealing_by_hand(chapter: str, fallback: DealingMethod) -> tuple[PureTable, OfflineShoe]:
    """The shoe goes offline in betting, the round is dealt by hand to its end, then the shuffler malfunctions."""
    t = table(chapter, "hand", counting(chapter, fallback_dealing_method=fallback))
    t.decks = [list(NO_HIT) for _ in range(4)]
    shoe = OfflineShoe(t)
    t.answer = shoe
    shoe.online = False
    went = t.feed(DeviceOffline("shoe", reason="heartbeat timeout"))
    # Dealing from the hand, nothing waits for the shoe; but it is held, and said so (its status reads unusable).
    assert t.types(went) == ["device.offline", "device.unusable"]
    assert "device:shoe" not in t.state.blocks and t.state.phase is Phase.BETTING
    play_round(t)
    assert t.types().count("round.completed") == 1 and t.state.phase is Phase.BETTING
    t.feed(DeviceFault("shuffler", code="malfunction"))
    return t, shoe


@pytest.mark.parametrize("chapter", HAND_AND_SHOES)
@pytest.mark.parametrize("fallback", FALLBACKS)
def test_turning_to_the_shoe_that_went_offline_blocks_before_betting(chapter: str, fallback: DealingMethod) -> None:
    t, _ = offline_while_dealing_by_hand(chapter, fallback)
    marked = t.feed(MarkOutOfOrder("shuffler"))
    assert remedy(marked, "device.out_of_order").payload["dealing_method"] == fallback
    held = remedy(marked, "device.unusable")
    assert held.payload["device"] == "shoe" and "offline (heartbeat timeout)" in held.payload["reason"]
    assert "device:shoe" in t.state.blocks and t.state.phase is Phase.BLOCKED
    t.shoe = list(NO_HIT)
    t.feed(Confirm("dealer", "shuffled"))  # no shuffle was asked: the table stays blocked, no wager is taken
    assert t.state.phase is Phase.BLOCKED
    rejected = enter_player(t, 1)
    assert rejected and {e.type for e in rejected} == {"wager.rejected"}
    assert "round.voided" not in t.types() and not any(isinstance(c, DispenseStack) for c in t.commands)


@pytest.mark.parametrize("chapter", HAND_AND_SHOES)
@pytest.mark.parametrize("fallback", FALLBACKS)
def test_the_shoe_identifying_again_lifts_the_hold_and_deals(chapter: str, fallback: DealingMethod) -> None:
    t, shoe = offline_while_dealing_by_hand(chapter, fallback)
    t.feed(MarkOutOfOrder("shuffler"))
    shoe.online = True
    back = t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    assert [e.payload["block"] for e in back if e.type == "table.block_cleared"] == ["device:shoe"]
    assert "shoe" not in t.state.devices_down
    the_shoe_deals_the_next_round(t)


@pytest.mark.parametrize("fallback", FALLBACKS)
def test_the_shoe_back_before_the_turn_holds_nothing(fallback: DealingMethod) -> None:
    t, shoe = offline_while_dealing_by_hand("655a", fallback)
    shoe.online = True
    back = t.feed(DeviceOnline("shoe"))
    assert "table.block_cleared" not in t.types(back) and "shoe" not in t.state.devices_down
    marked = t.feed(MarkOutOfOrder("shuffler"))
    assert "device.unusable" not in t.types(marked) and "device:shoe" not in t.state.blocks


@pytest.mark.parametrize("fallback", FALLBACKS)
def test_the_held_shoe_reads_unusable_live_and_after_a_restart(fallback: DealingMethod) -> None:
    """The fallback shoe's hold blocks no round, but the engine stopped using the shoe (docs/mqtt.md, `unusable`):
    its `device/shoe` reads `unusable` as soon as it goes offline, not `offline` until a restart re-says the hold."""
    t = table("655a", "hand", counting("655a", fallback_dealing_method=fallback))
    status = StatusMirror()
    went = t.feed(DeviceOffline("shoe", reason="heartbeat timeout"))
    status.feed(went)
    said = remedy(went, "device.unusable")
    assert said.payload["reason"] == "offline (heartbeat timeout)" and "no round waits" in said.payload["remedy"]
    assert "device:shoe" not in t.state.blocks and t.state.phase is Phase.BETTING
    live = {s.device_id: (s.state, s.online, s.reason) for s in status.tracker.statuses()}["shoe"]
    assert live == ("unusable", False, "offline (heartbeat timeout)")
    status.agrees(t.state)
    status.restart()
    t.state = snapshot.decode(snapshot.encode(t.state))
    status.feed(t.feed(Recover()))
    after = {s.device_id: s.state for s in status.tracker.statuses()}["shoe"]
    assert after == live[0]
    status.agrees(t.state)
