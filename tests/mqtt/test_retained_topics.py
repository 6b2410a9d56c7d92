"""The retained-topic bookkeeping on its own (controller.mqtt.retained): which retained messages are due when,
and that a value replaced while in flight is sent again. The same rules against a real broker are in
test_retained.py."""

from __future__ import annotations

import pytest

from controller.config.table import demo_config
from controller.core.events import JournaledEvent
from controller.mqtt.birth import build_birth
from controller.mqtt.contract import Birth, DeviceStatus, ProgressiveMeter, Topics
from controller.mqtt.retained import RetainedTopics

TABLE = "t-retained"
BOOT = "boot-1"
IDENTITY = {"model": "SIM-SHOE", "serial": "S-0042", "firmware": "1.0.0", "firmware_hash": "ab" * 32}


def retained() -> RetainedTopics:
    config = demo_config().model_copy(update={"table_id": TABLE})
    return RetainedTopics(Topics("tablectl", TABLE), BOOT, build_birth(config, BOOT), "2026-11-21T09:00:00.000000Z")


def meter(level: str, display: int) -> ProgressiveMeter:
    return ProgressiveMeter(
        table_id=TABLE,
        level=level,
        display_cents=display,
        seed_cents=1_000_000,
        reseed_cents=1_000_000,
        primary_rate_percent="9",
        reserve_rate_percent="0",
        reserve_cents=0,
        hits=0,
        rule="655a.12(c)(3)",
        as_of_seq=1,
        ts="2026-11-21T09:20:02.551906Z",
    )


def online(seq: int, device: str) -> JournaledEvent:
    return JournaledEvent(
        seq, f"e{seq}", BOOT, "2026-11-21T09:00:01.000000Z", TABLE, None, "device.online", None,
        {"device_id": device, "identity": IDENTITY},
    )  # fmt: skip


def test_after_a_connect_the_birth_and_every_device_go_at_once_and_the_meters_wait() -> None:
    r = retained()
    r.set_meter(meter("mega", 1_000_000))
    sent = r.on_connect()
    assert sent[0].topic == f"tablectl/{TABLE}/birth" and isinstance(sent[0].value, Birth)
    assert all(isinstance(m.value, DeviceStatus) for m in sent[1:]) and len(sent) > 1
    assert [m.topic for m in r.due()] == [f"tablectl/{TABLE}/progressive/mega"]


def test_a_meter_replaced_while_in_flight_stays_due_with_its_new_value() -> None:
    r = retained()
    r.set_meter(meter("mega", 1_000_000))
    [first] = r.due()
    r.set_meter(meter("mega", 1_000_009))  # while `first` was being published
    r.sent(first)
    [again] = r.due()
    assert isinstance(again.value, ProgressiveMeter) and again.value.display_cents == 1_000_009
    r.sent(again)
    assert r.due() == []


def test_a_device_identity_makes_the_birth_due_once_the_outbox_is_drained() -> None:
    r = retained()
    for m in r.on_connect():
        r.sent(m)
    assert r.due() == []
    [status] = r.after_event(online(1, "shoe"))
    assert status.topic == f"tablectl/{TABLE}/device/shoe"
    [birth] = r.due()
    assert isinstance(birth.value, Birth)
    assert next(d for d in birth.value.devices if d.device_id == "shoe").identity == IDENTITY
    r.sent(birth)
    assert r.due() == []
    # The same identity again changes nothing: no second birth.
    r.after_event(online(2, "shoe"))
    assert r.due() == []


def test_a_meter_of_another_table_is_refused() -> None:
    r = retained()
    other = meter("mega", 1).model_copy(update={"table_id": "elsewhere"})
    with pytest.raises(ValueError, match="not this table"):
        r.set_meter(other)
    assert r.due() == []
