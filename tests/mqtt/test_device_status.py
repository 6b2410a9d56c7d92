"""The device status bookkeeping, pure: any sequence of device events keeps it consistent (hypothesis)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controller.core.events import JournaledEvent
from controller.mqtt.device_status import DeviceTracker

DEVICES = ("shoe", "shuffler", "wager_station_3")
KINDS = (
    "device.online",
    "device.offline",
    "device.fault",
    "device.unusable",
    "device.out_of_order",
    "device.back_in_service",
    "device.fault_cleared",
)


def _event(seq: int, kind: str, dev: str, boot: str) -> JournaledEvent:
    payloads: dict[str, dict[str, Any]] = {
        "device.online": {"device_id": dev, "identity": {"serial": f"{dev}-{seq}"}},
        "device.offline": {"device_id": dev, "reason": f"gone {seq}"},
        "device.fault": {"device_id": dev, "code": "jam", "detail": f"fault {seq}"},
        "device.unusable": {"device": dev, "reason": f"fault {seq}"},
        "device.out_of_order": {"device": dev, "reason": "marked", "takes_over": "manual_shoe"},
        "device.back_in_service": {"device": dev},
        "device.fault_cleared": {"device": dev, "code": "jam", "still_held": []},
    }
    payload = payloads[kind]
    rule = "655a.13(g)" if kind in KINDS[3:] else None
    return JournaledEvent(
        seq, f"e{seq}", boot, f"2026-11-21T08:00:{seq % 60:02d}.{seq:06d}Z", "T1", None, kind, rule, payload
    )


@given(st.lists(st.tuples(st.sampled_from(KINDS), st.sampled_from(DEVICES), st.booleans()), max_size=40))
def test_any_sequence_of_device_events_keeps_the_status_consistent(steps: list[tuple[str, str, bool]]) -> None:
    tracker = DeviceTracker("T1", "boot-1", DEVICES[:2], started="2026-11-21T07:59:59.000000Z")
    assert [(s.device_id, s.state) for s in tracker.statuses()] == [("shoe", "unknown"), ("shuffler", "unknown")]
    for seq, (kind, dev, this_boot) in enumerate(steps, 1):
        before = {s.device_id: s for s in tracker.statuses()}.get(dev)
        ev = _event(seq, kind, dev, "boot-1" if this_boot else "boot-0")
        after = tracker.apply(ev)
        if not this_boot:
            assert after is None  # an earlier boot's event says nothing about the device now
            continue
        assert after is not None and after.seq == seq and after.device_id == dev
        old_state = before.state if before else "unknown"
        # since moves exactly when the state changes
        assert after.since == (ev.ts if after.state != old_state else (before.since if before else after.since))
        if old_state == "out_of_order" and kind != "device.back_in_service":
            assert after.state == "out_of_order"  # only the dealer's back-in-service undoes the marking
        if kind == "device.fault":
            assert (after.fault_code, after.fault_detail, after.fault_at) == ("jam", f"fault {seq}", ev.ts)
        if kind in ("device.online", "device.back_in_service"):
            assert after.fault_code is None
        if kind == "device.fault_cleared" and old_state == "unusable":
            # Its last held fault said cleared: usable again, online as far as the table last heard.
            assert after.state != "unusable" and after.fault_code is None and after.reason is None
        if kind == "device.online":
            assert after.online is True and tracker.identities[dev] == {"serial": f"{dev}-{seq}"}
        if kind == "device.offline":
            assert after.online is False
        if kind == "device.out_of_order":
            assert (after.state, after.rule) == ("out_of_order", "655a.13(g)")


def test_a_device_id_that_cannot_be_a_topic_level_is_not_tracked() -> None:
    tracker = DeviceTracker("T1", "boot-1", ["shoe", "bad/id", "#"], started="2026-11-21T07:59:59.000000Z")
    assert [s.device_id for s in tracker.statuses()] == ["shoe"]
    assert tracker.apply(_event(1, "device.fault", "a/b", "boot-1")) is None
    other = JournaledEvent(
        2, "e2", "boot-1", "2026-11-21T08:00:00.000000Z", "T1", None, "table.opened", "655a.4", {"device_id": "shoe"}
    )
    assert tracker.apply(other) is None


def test_a_device_with_a_fault_still_held_stays_unusable_when_another_is_cleared() -> None:
    tracker = DeviceTracker("T1", "boot-1", ["shoe"], started="2026-11-21T07:59:59.000000Z")
    tracker.apply(_event(1, "device.online", "shoe", "boot-1"))
    tracker.apply(_event(2, "device.unusable", "shoe", "boot-1"))
    half = replace(_event(3, "device.fault_cleared", "shoe", "boot-1"), payload={"device": "shoe", "still_held": ["m"]})
    after = tracker.apply(half)
    assert after is not None and after.state == "unusable" and after.reason == "fault 2"
    after = tracker.apply(_event(4, "device.fault_cleared", "shoe", "boot-1"))
    assert after is not None and (after.state, after.reason, after.online) == ("online", None, True)
