"""A device put back in service must be answering (.13(g)). While the shuffler or shoe is covered, its faults, jams
and absence hold nothing (the cover is the record), but its latest report is kept with the state: a signed
back_in_service of a device that went offline, or reported a fault it has not said is cleared, is refused
(`input.refused`, 13(g)) with the reason, since when and what to do, and the device's status; once it identifies or
says the fault is cleared it is taken back, and the round deals from it. Before, it was put back whatever it said,
and the round dealt from a shoe still jammed was void at its first dispense (.13(f)). A restart in the middle keeps
the report: the device's start-up identification does not say a fault was cleared (docs/rules.md)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controller.core.events import DomainEvent
from controller.engine.commands import Shuffle
from controller.engine.inputs import Input, MarkOutOfOrder, Recover, StopRecord, Tick
from controller.engine.state import Phase
from controller.store import snapshot
from drivers.interfaces import DeviceFault, DeviceFaultCleared, DeviceOffline, DeviceOnline
from tests.engine.chapter_faults import cite, remedy
from tests.engine.conftest import PureTable, decide_all, enter_player
from tests.engine.covers import HAND_AND_SHOE, shoe_table
from tests.engine.held_faults import dispenses, play_round, quiet_table

AT = datetime(2026, 11, 28, 10, 41, 7, tzinfo=UTC)
SINCE = "since 2026-11-28 10:41:07 UTC"
DETAIL = {"jam": "card jam at the gate", "malfunction": "motor"}


def said(kind: str, dev: str) -> list[Input]:
    """What the device says while covered: it goes offline, or reports a fault."""
    if kind == "offline":
        return [DeviceOffline(dev, reason="port gone")]
    return [DeviceFault(dev, code=kind, detail=DETAIL[kind])]


def repaired(kind: str, dev: str) -> list[Input]:
    """Offline: it is reconnected and identifies. In fault: it says the fault is cleared."""
    return [DeviceOnline(dev, identity={"model": "sim"})] if kind == "offline" else [DeviceFaultCleared(dev, kind)]


def restarted(t: PureTable) -> list[DomainEvent]:
    """SIGTERM, the state read back from its stored form, and the start's `Recover`."""
    t.state = snapshot.decode(snapshot.encode(t.state))
    return t.feed(Recover(after_stop=StopRecord(40, "SIGTERM")))


def start_up(t: PureTable, kind: str, dev: str) -> None:
    """The device's report at the start: an offline device is absent again, one in fault identifies (which says
    nothing of its fault)."""
    t.feed(
        DeviceOffline(dev, reason="port gone") if kind == "offline" else DeviceOnline(dev, identity={"model": "sim"})
    )


def refused(t: PureTable, chapter: str, dev: str, kind: str) -> DomainEvent:
    out = t.feed(MarkOutOfOrder(dev, out=False))
    assert t.types(out) == ["input.refused"], t.types(out)
    assert dev in t.state.out_of_order
    no = out[0]
    assert no.rule == cite(chapter, "13(g)") and no.payload["device"] == dev
    reason = no.payload["reason"]
    assert no.payload["input"] == f"back in service {dev}" and SINCE in reason and reason.endswith("leave it covered")
    if kind == "offline":
        assert reason.startswith(f"the {dev} is offline (port gone) {SINCE}: reconnect it"), reason
        assert no.payload["status"] == {"state": "offline", "reason": "offline (port gone)", "since": AT.isoformat()}
    else:
        assert reason.startswith(f"the {dev} reported fault {kind} ("), reason
        assert "has not said it is cleared" in reason and "says the fault is cleared" in reason
        status = no.payload["status"]
        assert status["state"] == "fault" and status["faults"] == [kind] and status["since"] == AT.isoformat()
    return no


def covered_then(t: PureTable, dev: str, kind: str) -> None:
    """The device covered, the clock at AT, then its report: nothing holds the table, the report is kept."""
    t.feed(MarkOutOfOrder(dev))
    t.feed(Tick(AT))
    blocks = dict(t.state.blocks)
    for inp in said(kind, dev):
        out = t.feed(inp)
        assert not {"device.unusable", "table.blocked"} & set(t.types(out)), "a covered device holds nothing"
    assert t.state.blocks == blocks and dev in t.state.covered_reports


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
@pytest.mark.parametrize("kind", ["offline", "jam", "malfunction"])
@pytest.mark.parametrize("restart", [False, True], ids=["no_restart", "restart"])
def test_the_shoe_is_put_back_only_once_it_answers_and_the_round_deals_from_it(
    chapter: str, kind: str, restart: bool
) -> None:
    t = shoe_table(chapter)  # in betting; its deck is in the shoe, the shuffler gives no order
    covered_then(t, "shoe", kind)
    first = refused(t, chapter, "shoe", kind)
    if restart:
        mark = remedy(restarted(t), "device.out_of_order")
        assert mark.payload["restored"] and mark.payload["status"]["state"] == first.payload["status"]["state"]
        assert mark.payload["not_in_service_until"].startswith("the shoe ")
        again = refused(t, chapter, "shoe", kind)
        if kind != "offline":
            assert (
                "; the table restarted since, and its identification at start-up does not say the fault was "
                in (again.payload["reason"])
            )
            assert again.payload["status"]["restarted"] is True
        start_up(t, kind, "shoe")
        refused(t, chapter, "shoe", kind)
    for inp in repaired(kind, "shoe"):
        t.feed(inp)
    assert "shoe" not in t.state.covered_reports
    back_in = t.feed(MarkOutOfOrder("shoe", out=False))
    assert remedy(back_in, "device.back_in_service").payload["dealing_method"] == "automated_shoe"
    assert "shoe" not in t.state.out_of_order
    before = dispenses(t)
    pressed = t.press("no_more_bets")
    assert remedy(pressed, "no_more_bets").rule == cite(chapter, "10(a)(2)")
    decide_all(t, pressed)
    assert dispenses(t) > before and t.types().count("round.completed") == 1 and "round.voided" not in t.types()


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
@pytest.mark.parametrize("kind", ["offline", "jam", "malfunction"])
@pytest.mark.parametrize("restart", [False, True], ids=["no_restart", "restart"])
def test_the_shuffler_is_put_back_only_once_it_answers_and_shuffles_the_next_round(
    chapter: str, kind: str, restart: bool
) -> None:
    t = quiet_table(chapter, "automated_shoe")
    covered_then(t, "shuffler", kind)
    refused(t, chapter, "shuffler", kind)
    if restart:
        restarted(t)
        start_up(t, kind, "shuffler")
        refused(t, chapter, "shuffler", kind)
    for inp in repaired(kind, "shuffler"):
        t.feed(inp)
    assert remedy(t.feed(MarkOutOfOrder("shuffler", out=False)), "device.back_in_service")
    shuffles = sum(isinstance(c, Shuffle) for c in t.commands)
    assert t.state.phase is Phase.BETTING, t.state.blocks
    enter_player(t, 1)
    play_round(t)
    assert t.types().count("round.completed") == 1 and "round.voided" not in t.types()
    assert sum(isinstance(c, Shuffle) for c in t.commands) == shuffles + 1, "the next deck is the shuffler's"


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_a_fault_restarted_needs_a_second_identification_or_its_clear(chapter: str) -> None:
    """The start-up identification says nothing of the jam; a second one (cleared and restarted) does."""
    t = shoe_table(chapter)
    covered_then(t, "shoe", "jam")
    restarted(t)
    start_up(t, "jam", "shoe")
    refused(t, chapter, "shoe", "jam")
    t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    assert remedy(t.feed(MarkOutOfOrder("shoe", out=False)), "device.back_in_service")


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_a_shoe_jammed_when_covered_is_still_jammed_until_it_says_otherwise(chapter: str) -> None:
    """Held for its jam when the mark was made: the mark takes over the hold, not the jam."""
    t = quiet_table(chapter, "automated_shoe")  # its fallback the manual shoe, which stands in once it is covered
    t.feed(Tick(AT))
    t.feed(DeviceFault("shoe", code="jam", detail="card jam at the gate"))
    assert "device:shoe" in t.state.blocks or "shoe" in t.state.devices_down
    t.feed(MarkOutOfOrder("shoe"))
    assert "device:shoe" not in t.state.blocks
    refused(t, chapter, "shoe", "jam")
    ignored = remedy(t.feed(DeviceFaultCleared("shoe", code="jam")), "input.ignored")
    assert ignored.payload["reason"] == (
        "the shoe marked out of order said fault jam cleared: noted "
        "(no fault outstanding: it can be put back in service)"
    )
    assert remedy(t.feed(MarkOutOfOrder("shoe", out=False)), "device.back_in_service")


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
@pytest.mark.parametrize("code", ["empty", "foreign_card"])
def test_what_would_not_hold_the_shoe_in_service_does_not_keep_it_covered(chapter: str, code: str) -> None:
    """An empty shoe is refilled by the next shuffle; a foreign card is the deck's, not the shoe's fault."""
    t = shoe_table(chapter)
    t.feed(MarkOutOfOrder("shoe"))
    t.feed(DeviceFault("shoe", code=code, detail="as said"))
    assert t.state.covered_reports == {}
    assert remedy(t.feed(MarkOutOfOrder("shoe", out=False)), "device.back_in_service")


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_going_offline_after_a_fault_and_identifying_again_clears_both(chapter: str) -> None:
    """Unplugged, repaired and plugged in again: its identification says it answers, its faults gone with the
    restart of the device (as a hold in service lifts), the table not restarted meanwhile."""
    t = shoe_table(chapter)
    covered_then(t, "shoe", "malfunction")
    t.feed(DeviceOffline("shoe", reason="port gone"))
    out = t.feed(MarkOutOfOrder("shoe", out=False))
    assert remedy(out, "input.refused").payload["status"]["state"] == "offline"
    t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    assert remedy(t.feed(MarkOutOfOrder("shoe", out=False)), "device.back_in_service")
