"""The progressive sign's fault locks out progressive wagering only (605a.7(a)(1): a progressive must have a meter
players can see; 655a.2(c)'s lock-out keeps its wagers from being recognised); the round is never blocked for it. The
sign saying the fault is cleared (`fault_cleared`, docs/protocol.md section 5) lifts that lock-out as its
identification does, once every fault it reported is cleared, and the meters are shown again."""

from __future__ import annotations

from typing import TypedDict

from controller.engine.commands import ShowLevels
from drivers.interfaces import DeviceFault, DeviceFaultCleared, DeviceOnline
from tests.engine.conftest import MakeTable


class ProgressiveRules(TypedDict):
    progressive_paytable: str
    progressive_wager_cents: int


# Paytable C (655a.12(c)(1), (3)) on a $1 Progressive Payout Wager.
RULES: ProgressiveRules = {"progressive_paytable": "C", "progressive_wager_cents": 100}
SIGN = "progressive_sign"


def test_the_signs_fault_cleared_lifts_the_lockout_once_every_fault_is_cleared(make_table: MakeTable) -> None:
    t = make_table(**RULES)
    t.feed(DeviceFault(SIGN, "lamp_failure", "row 2 dark"))
    t.feed(DeviceFault(SIGN, "overheat", ""))
    assert t.wager(1, "progressive", 100)[0].type == "wager.rejected"
    assert t.wager(1, "ante", 500)[0].type == "wager.accepted", "the rest of the game goes on"
    first = t.feed(DeviceFaultCleared(SIGN, code="lamp_failure", detail="lamp replaced"))
    said = [e for e in first if e.type == "device.fault_cleared"]
    assert len(said) == 1 and said[0].rule == "655a.8(b)"
    assert said[0].payload["device"] == SIGN and said[0].payload["still_held"] == ["overheat"]
    assert "progressive.unlocked" not in t.types(first)
    assert t.wager(2, "progressive", 100)[0].type == "wager.rejected", "still locked out for the overheat"
    last = t.feed(DeviceFaultCleared(SIGN, code="overheat"))
    assert t.types(last)[:2] == ["device.fault_cleared", "progressive.unlocked"]
    assert last[0].payload["still_held"] == []
    assert any(isinstance(c, ShowLevels) for c in t.commands), "the meters go back on the sign"
    assert t.wager(2, "progressive", 100)[0].type == "wager.accepted"


def test_a_clear_for_a_fault_the_sign_did_not_report_changes_nothing(make_table: MakeTable) -> None:
    t = make_table(**RULES)
    t.feed(DeviceFault(SIGN, "lamp_failure", ""))
    out = t.feed(DeviceFaultCleared(SIGN, code="overheat"))
    assert t.types(out) == ["input.ignored"]
    assert "holds no fault overheat: it holds lamp_failure" in out[0].payload["reason"]
    assert t.wager(1, "progressive", 100)[0].type == "wager.rejected"
    back = t.feed(DeviceOnline(SIGN))
    assert "progressive.unlocked" in t.types(back), "identifying again still lifts every fault"
    assert t.wager(1, "progressive", 100)[0].type == "wager.accepted"
