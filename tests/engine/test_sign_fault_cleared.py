"""The progressive sign's fault locks out progressive wagering only (605a.7(a)(1): a progressive must have a meter
players can see; 655a.2(c)'s lock-out keeps its wagers from being recognised); the round is never blocked for it. The
sign saying the fault is cleared (`fault_cleared`, docs/protocol.md section 5) lifts that lock-out as its
identification does, once every fault it reported is cleared, and the meters are shown again."""

from __future__ import annotations

import json
from typing import TypedDict

from controller.engine import sign
from controller.engine.commands import ShowLevels
from controller.engine.state import TableState
from controller.store import snapshot
from drivers.interfaces import DeviceFault, DeviceFaultCleared, DeviceOffline, DeviceOnline
from tests.engine.conftest import MakeTable, PureTable


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


# How a sign's fault was stored before the per-code reasons: under the offline key, "<code>: <detail>" in the reason.
OLD_FAULT = "the progressive sign is unavailable (display_mismatch: level mega read back wrong)"


def restored_in_the_old_form(t: PureTable) -> TableState:
    """The table's state as a journal written before the per-code reasons holds a sign fault, stored and restored (the
    old form built from the stored form, as the other older-journal tests build theirs), upgraded as the restore
    does (controller/shell/restore.py)."""
    doc = json.loads(snapshot.encode(t.state))
    assert doc["state"]["progressive_lockout"] == {}
    doc["state"]["progressive_lockout"] = {"sign": OLD_FAULT}
    state = snapshot.decode(json.dumps(doc).encode())
    assert sign.upgrade_stored(state.progressive_lockout) == OLD_FAULT
    assert sign.upgrade_stored(state.progressive_lockout) is None, "upgraded once; said once"
    return state


def test_a_sign_fault_stored_in_the_old_form_is_lifted_by_the_signs_next_clear_of_any_code(
    make_table: MakeTable,
) -> None:
    t = make_table(**RULES)
    t.state = restored_in_the_old_form(t)
    assert t.wager(1, "progressive", 100)[0].type == "wager.rejected", "still locked out after the restore"
    back = t.feed(DeviceFaultCleared(SIGN, code="line_noise"))  # the code the old form lost: any code lifts it
    assert t.types(back)[:2] == ["device.fault_cleared", "progressive.unlocked"]
    assert back[0].payload["stored_fault"] == OLD_FAULT and back[0].payload["still_held"] == []
    assert t.state.progressive_lockout == {}
    assert t.wager(1, "progressive", 100)[0].type == "wager.accepted"
    assert t.types(t.feed(DeviceFaultCleared(SIGN, code="line_noise"))) == ["input.ignored"], "lifted once"


def test_a_sign_fault_in_the_old_form_beside_a_new_one_lifts_with_the_first_clear(make_table: MakeTable) -> None:
    t = make_table(**RULES)
    t.state = restored_in_the_old_form(t)
    t.feed(DeviceFault(SIGN, "lamp_failure", "row 2 dark"))
    first = t.feed(DeviceFaultCleared(SIGN, code="overheat"))
    assert t.types(first) == ["device.fault_cleared"] and first[0].payload["still_held"] == ["lamp_failure"]
    assert list(t.state.progressive_lockout) == ["sign:lamp_failure"]
    assert t.types(t.feed(DeviceFaultCleared(SIGN, code="lamp_failure")))[:2] == [
        "device.fault_cleared",
        "progressive.unlocked",
    ]


def test_a_sign_fault_in_the_old_form_is_lifted_by_the_sign_identifying(make_table: MakeTable) -> None:
    t = make_table(**RULES)
    t.state = restored_in_the_old_form(t)
    assert "progressive.unlocked" in t.types(t.feed(DeviceOnline(SIGN)))
    assert t.state.progressive_lockout == {}


def test_a_sign_stored_offline_is_not_upgraded(make_table: MakeTable) -> None:
    """Offline reads the same in either form: only the sign identifying says it is back."""
    t = make_table(**RULES)
    t.feed(DeviceOffline(SIGN, reason="no answer"))
    state = snapshot.decode(snapshot.encode(t.state))
    assert sign.upgrade_stored(state.progressive_lockout) is None
    assert list(state.progressive_lockout) == ["sign"]
    t.state = state
    assert t.types(t.feed(DeviceFaultCleared(SIGN, code="display_mismatch"))) == ["input.ignored"]
