"""The automated shoe faults after "no more bets" and before its first card: the lock-outs are still being
confirmed (LOCKING) or the dealer's chip count is awaited (RECONCILING). The round is in play, its wagers locked,
and the shoe says it cannot deal it: .13(f) voids the round at once, every wager returned (docs/rules.md), rather
than waiting for the first dispense to fail. A shoe that stays jammed also holds the next round (.13(g))."""

from __future__ import annotations

import pytest

from controller.engine.commands import DeviceCommand, DispenseStack
from controller.engine.inputs import CountEntered, Input
from controller.engine.state import Phase
from drivers.interfaces import DeviceFault, DeviceOffline, DeviceOnline
from tests.engine.chapter_faults import cite, on, remedy, returned_everything
from tests.engine.conftest import PureTable, enter_player
from tests.engine.held_faults import AUTOMATED, counted_643a, quiet_table


def locking(chapter: str) -> PureTable:
    """ "No more bets" said; seat 1's station has not yet confirmed its lock-out, so no card is asked for."""
    t = quiet_table(chapter, "automated_shoe")
    unconfirmed: list[DeviceCommand] = []

    def silent(c: DeviceCommand) -> list[Input]:
        unconfirmed.append(c)
        return []

    on(t, "lock", silent)
    t.press("no_more_bets")
    assert t.state.phase is Phase.LOCKING and unconfirmed
    assert not any(isinstance(c, DispenseStack) for c in t.commands)
    return t


@pytest.mark.parametrize("chapter", AUTOMATED)
@pytest.mark.parametrize("code", ["jam", "stopped", "misfeed", "empty"])
def test_a_shoe_fault_after_no_more_bets_voids_the_round_at_once(chapter: str, code: str) -> None:
    t = locking(chapter)
    out = t.feed(DeviceFault("shoe", code=code, detail="card jam at the dispensing gate"))
    void = remedy(out, "round.voided")
    assert void.rule == cite(chapter, "13(f)") and code in void.payload["reason"]
    assert "returned" in void.payload["remedy"] and "removed from the shoe" in void.payload["remedy"]
    returned_everything(t, void)
    assert void.payload["returned"]  # the two players' wagers, all of them
    assert not any(isinstance(c, DispenseStack) for c in t.commands)  # no card was asked of the faulted shoe


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_a_jam_before_the_deal_also_holds_the_next_round_until_the_shoe_is_back(chapter: str) -> None:
    t = locking(chapter)
    out = t.feed(DeviceFault("shoe", code="jam", detail="card jam at the dispensing gate"))
    assert t.types(out).index("device.unusable") < t.types(out).index("round.voided")
    assert t.state.phase is Phase.BLOCKED and "device:shoe" in t.state.blocks
    assert "betting.opened" not in t.types(out)
    back = t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    assert t.types(back)[-1] == "betting.opened"
    enter_player(t, 1)
    t.press("no_more_bets")
    assert "cards.dealt" in t.types() or any(isinstance(c, DispenseStack) for c in t.commands)


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_an_empty_shoe_before_the_deal_voids_without_holding_the_table(chapter: str) -> None:
    """ "empty" is refilled by the reshuffle the void asks for: the next round opens."""
    t = locking(chapter)
    out = t.feed(DeviceFault("shoe", code="empty"))
    assert "round.voided" in t.types(out) and "device.unusable" not in t.types(out)
    assert t.state.phase is Phase.BETTING and "device:shoe" not in t.state.blocks


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_a_shoe_gone_offline_before_the_deal_voids_the_round(chapter: str) -> None:
    t = locking(chapter)
    out = t.feed(DeviceOffline("shoe", reason="unplugged"))
    void = remedy(out, "round.voided")
    assert void.rule == cite(chapter, "13(f)")
    returned_everything(t, void)
    assert t.state.phase is Phase.BLOCKED and "device:shoe" in t.state.blocks


def test_a_shoe_jam_while_the_chip_count_is_awaited_voids_the_round() -> None:
    """643a.8(b)(1): the Five Card Bonus chips are counted before any card; the shoe jams meanwhile."""
    t = counted_643a()
    assert t.state.phase is Phase.RECONCILING
    out = t.feed(DeviceFault("shoe", code="jam"))
    void = remedy(out, "round.voided")
    assert void.rule == "643a.13(f)"
    returned_everything(t, void)
    assert "five_card_bonus" in void.payload["returned"]["2"]
    # The count entered after the void belongs to no round: ignored, no card dealt.
    t.feed(CountEntered(what="chips", count=2))
    assert not any(isinstance(c, DispenseStack) for c in t.commands)


def test_a_jam_while_a_chip_count_mismatch_awaits_the_floorperson_leaves_no_stale_block() -> None:
    """The round the floorperson was to decide on is void: its count no longer stops the table, only the shoe does."""
    t = counted_643a()
    t.feed(CountEntered("chips", 3))
    assert "chip_count" in t.state.blocks
    remedy(t.feed(DeviceFault("shoe", code="jam")), "round.voided")
    assert set(t.state.blocks) == {"device:shoe"}
    back = t.feed(DeviceOnline("shoe"))
    assert t.types(back)[-1] == "betting.opened" and t.state.phase is Phase.BETTING
