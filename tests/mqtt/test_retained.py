"""The retained topics (birth, device/<id>, progressive/<level>) against a real mosquitto: what they say, the order
they come in relative to the events, and that they are all published again after the broker comes back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from controller.config.table import MqttSettings, demo_config
from controller.core.events import DomainEvent
from controller.mqtt.birth import build_birth
from controller.mqtt.contract import Birth, DeviceStatus, ProgressiveMeter, Topics
from controller.mqtt.publisher import EventPublisher
from controller.store.journal import Journal
from tests.broker import Mosquitto, Received, Subscribe
from tests.mqtt.conftest import ContractCheck
from tests.mqtt.eventually import eventually

IDENTITY = {"model": "SIM-SHOE", "serial": "S-0042", "firmware": "1.0.0", "firmware_hash": "ab" * 32}


class Table:
    def __init__(self, tmp_path: Path, unique_id: str) -> None:
        self.config = demo_config().model_copy(update={"table_id": unique_id})
        self.journal = Journal(tmp_path / "journal.sqlite", unique_id, "boot-1")
        self.topics = Topics("tablectl", unique_id)
        self.birth = build_birth(self.config, "boot-1")

    def publisher(self, url: str, **kw: Any) -> EventPublisher:
        return EventPublisher(self.journal, MqttSettings(broker=url), self.config.table_id, birth=self.birth, **kw)

    def append(
        self,
        pub: EventPublisher | None,
        type_: str,
        payload: dict[str, Any],
        rule: str | None = None,
        round_id: str | None = None,
    ) -> int:
        [ev] = self.journal.append([DomainEvent(type_, rule, payload, round_id)], datetime.now(UTC))
        if pub is not None:
            pub.notify()
        return ev.seq

    def meter(self, level: str, display: int, as_of: int, hits: int = 0) -> ProgressiveMeter:
        return ProgressiveMeter(
            table_id=self.config.table_id,
            level=level,
            display_cents=display,
            seed_cents=1_000_000,
            reseed_cents=1_000_000,
            primary_rate_percent="9",
            reserve_rate_percent="0",
            reserve_cents=0,
            hits=hits,
            rule="655a.12(c)(3)",
            as_of_seq=as_of,
            ts="2026-11-21T09:20:02.551906Z",
        )


@pytest.fixture
def table(tmp_path: Path, unique_id: str) -> Iterator[Table]:
    t = Table(tmp_path, unique_id)
    yield t
    t.journal.close()


def _on(messages: list[Received], topic: str) -> list[dict[str, Any]]:
    return [json.loads(m.payload) for m in messages if m.topic == topic]


async def test_birth_and_devices_follow_the_device_events(
    mosquitto: Mosquitto, subscribe: Subscribe, table: Table, contract: type[ContractCheck]
) -> None:
    t = table.topics
    sub = subscribe(f"{t.base}/#")
    pub = table.publisher(mosquitto.url)
    task = asyncio.create_task(pub.run())
    device_ids = [d.device_id for d in table.birth.devices]
    await sub.await_until(lambda ms: len(_on(ms, t.device(device_ids[-1]))) == 1, what="device statuses")
    # At connect: online, the birth, then every configured device as unknown (none has reported in this boot).
    assert [t.relative(m.topic) for m in sub.messages] == ["status", "birth", *(f"device/{d}" for d in device_ids)]
    assert all(_on(sub.messages, t.device(d))[0]["state"] == "unknown" for d in device_ids)
    assert Birth.model_validate(_on(sub.messages, t.birth)[0]).devices[1].identity is None

    # Each device event is followed at once by the status it changes; the birth learns the identity.
    script: list[tuple[str, dict[str, Any], str | None]] = [
        ("device.online", {"device_id": "shoe", "identity": IDENTITY}, None),
        ("device.fault", {"device_id": "shoe", "code": "jam", "detail": "card jam at the dispensing gate"}, None),
        ("device.offline", {"device_id": "shoe", "reason": "serial port closed"}, None),
        (
            "device.unusable",
            {"device": "shoe", "reason": "offline (serial port closed)", "phase": "betting", "remedy": "..."},
            "655a.13(g)",
        ),
        (
            "device.out_of_order",
            {
                "device": "shoe",
                "reason": "offline (serial port closed)",
                "takes_over": "manual_shoe",
                "dealing_method": "manual_shoe",
            },
            "655a.13(g)",
        ),
        ("device.online", {"device_id": "shoe", "identity": IDENTITY}, None),
        ("device.back_in_service", {"device": "shoe", "dealing_method": "automated_shoe"}, "655a.13(g)"),
    ]
    for type_, payload, rule in script:
        table.append(pub, type_, payload, rule)
    await sub.await_until(
        lambda ms: (
            len(_on(ms, t.event)) == len(script) and len(_on(ms, t.device("shoe"))) == 8 and len(_on(ms, t.birth)) == 2
        ),
        what="the shoe's statuses and the birth with its identity",
    )
    after_connect = [m for m in sub.messages[2 + len(device_ids) :] if m.topic != t.birth]
    shoe = [m for m in after_connect if m.topic in (t.event, t.device("shoe"))]
    # No status runs ahead of the event that explains it (events go out in batches, each batch's statuses
    # after its PUBACKs).
    seen_seqs: set[int] = set()
    statuses = []
    for m in shoe:
        if m.topic == t.event:
            seen_seqs.add(json.loads(m.payload)["seq"])
        else:
            status = DeviceStatus.model_validate_json(m.payload)
            assert status.seq in seen_seqs, f"device status of seq {status.seq} published before its event"
            statuses.append(status)
    assert len(statuses) == len(script)
    assert [(s.state, s.online, s.fault_code, s.rule, s.seq) for s in statuses] == [
        ("online", True, None, None, 1),
        ("online", True, "jam", None, 2),  # a fault alone does not change the state; it is kept
        ("offline", False, "jam", None, 3),
        ("unusable", False, "jam", "655a.13(g)", 4),
        ("out_of_order", False, "jam", "655a.13(g)", 5),
        ("out_of_order", True, None, "655a.13(g)", 6),  # answering again does not undo the dealer's marking
        ("online", True, None, "655a.13(g)", 7),
    ]
    events = _on(after_connect, t.event)
    assert statuses[1].since == statuses[0].since == events[0]["ts"]  # since: when the state last changed
    assert statuses[2].since == events[2]["ts"] and statuses[2].reason == "serial port closed"
    births = _on(sub.messages, t.birth)
    assert len(births) == 2  # once at connect, once more with the identity (not once per device event)
    assert {d["device_id"]: d["identity"] for d in births[-1]["devices"]}["shoe"] == IDENTITY
    assert contract.violations(sub.messages, "tablectl", table.config.table_id) == []
    await pub.close()
    assert task.done()


async def test_an_earlier_boots_device_events_do_not_describe_the_devices_now(
    mosquitto: Mosquitto, subscribe: Subscribe, table: Table
) -> None:
    # Journaled by an earlier run: replayed on the event topic, but the shoe has restarted since.
    table.journal.close()
    earlier = Journal(table.journal.path, table.config.table_id, "boot-0")
    earlier.append(
        [DomainEvent("device.offline", None, {"device_id": "shoe", "reason": "unplugged"})], datetime.now(UTC)
    )
    earlier.close()
    table.journal = Journal(table.journal.path, table.config.table_id, "boot-1")
    sub = subscribe(f"{table.topics.base}/#")
    pub = table.publisher(mosquitto.url)
    task = asyncio.create_task(pub.run())
    await sub.await_until(lambda ms: bool(_on(ms, table.topics.event)), what="the replayed event")
    await pub.close()
    assert _on(sub.messages, table.topics.event)[0]["replayed"] is True
    assert [s["state"] for s in _on(sub.messages, table.topics.device("shoe"))] == ["unknown"]
    assert task.done()


async def test_meters_go_out_after_their_events_latest_value_only(
    mosquitto: Mosquitto, subscribe: Subscribe, table: Table
) -> None:
    t = table.topics
    sub = subscribe(f"{t.base}/#")
    pub = table.publisher(mosquitto.url)
    seq = table.append(None, "progressive.contributed", {"level": "mega", "cents": 9}, "655a.12(c)(3)")
    pub.publish_progressive(table.meter("mega", 1_000_009, seq))  # before the publisher even runs
    task = asyncio.create_task(pub.run())
    await sub.await_until(lambda ms: bool(_on(ms, t.progressive("mega"))), what="the meter")
    rel = [t.relative(m.topic) for m in sub.messages]
    assert rel.index("event") < rel.index("progressive/mega")  # the event that moved it came first

    seq = table.append(pub, "progressive.contributed", {"level": "mega", "cents": 9}, "655a.12(c)(3)")
    pub.publish_progressive(table.meter("mega", 1_000_018, seq))
    pub.publish_progressive(table.meter("mega", 1_000_027, seq))  # replaces the one not yet sent
    pub.publish_progressive(table.meter("major", 100_000, seq))
    await sub.await_until(
        lambda ms: (
            any(m["display_cents"] == 1_000_027 for m in _on(ms, t.progressive("mega")))
            and bool(_on(ms, t.progressive("major")))
        ),
        what="the latest meters",
    )
    assert 1_000_018 not in [m["display_cents"] for m in _on(sub.messages, t.progressive("mega"))]

    with pytest.raises(ValueError, match="not this table"):
        pub.publish_progressive(table.meter("mega", 1, seq).model_copy(update={"table_id": "other"}))
    await pub.close()
    late = subscribe(f"{t.base}/progressive/+")
    late.wait_until(lambda ms: len(ms) == 2, what="retained meters")
    assert {json.loads(m.payload)["display_cents"] for m in late.messages} == {1_000_027, 100_000}
    assert all(m.retain for m in late.messages)
    assert task.done()


async def test_everything_retained_is_published_again_after_the_broker_comes_back(
    mosquitto: Mosquitto, subscribe: Subscribe, table: Table
) -> None:
    t = table.topics
    pub = table.publisher(mosquitto.url, backoff_max=0.3)
    task = asyncio.create_task(pub.run())
    try:
        await eventually(lambda: pub.connected, what="connected")
        table.append(pub, "device.online", {"device_id": "shoe", "identity": IDENTITY})
        seq = table.append(pub, "progressive.contributed", {"level": "mega", "cents": 9}, "655a.12(c)(3)")
        pub.publish_progressive(table.meter("mega", 1_000_009, seq))
        await eventually(lambda: not table.journal.unpublished(), what="published")

        mosquitto.stop()  # the session broker runs without persistence: its retained store is gone
        await eventually(lambda: not pub.connected, what="the outage noticed")
        table.append(pub, "device.fault", {"device_id": "shoe", "code": "timeout", "detail": "no ACK"})
        mosquitto.start()
        watch = subscribe(t.device("shoe"), t.progressive("mega"))  # the retained values, then any newer one
        await watch.await_until(
            lambda ms: (
                any(json.loads(m.payload).get("fault_code") == "timeout" for m in ms)
                and any(m.topic == t.progressive("mega") for m in ms)
            ),
            what="the fault journaled during the outage, and the meter after it",
        )

        late = subscribe(f"{t.base}/#")
        want = {"status", "birth", "progressive/mega", *(f"device/{d.device_id}" for d in table.birth.devices)}
        await late.await_until(lambda ms: {t.relative(m.topic) for m in ms} >= want, what="every retained topic")
        assert all(m.retain for m in late.messages)
        got = {t.relative(m.topic): json.loads(m.payload) for m in late.messages}
        assert got["status"]["state"] == "online"
        assert got["device/shoe"]["fault_code"] == "timeout" and got["device/shoe"]["state"] == "online"
        assert {d["device_id"]: d["identity"] for d in got["birth"]["devices"]}["shoe"] == IDENTITY
        assert got["progressive/mega"]["display_cents"] == 1_000_009
    finally:
        mosquitto.start()
        await pub.close()
    assert task.done()


async def test_events_journaled_before_the_broker_first_answers_are_replays(
    mosquitto: Mosquitto, subscribe: Subscribe, table: Table
) -> None:
    sub = subscribe(table.topics.event)
    mosquitto.stop()
    with capture_logs() as logs:
        pub = table.publisher(mosquitto.url, backoff_min=0.05, backoff_max=0.1)
        task = asyncio.create_task(pub.run())
        table.append(pub, "table.opened", {"chapter": "655a"}, "655a.4")
        await eventually(lambda: any(e["event"] == "mqtt broker unavailable" for e in logs), what="a failed attempt")
    try:
        mosquitto.start()
        sub.wait_subscribed(2)  # blocking the loop: the publisher cannot reconnect before the subscriber has
        await eventually(lambda: pub.connected and not table.journal.unpublished(), what="reconnected, drained")
        table.append(pub, "shuffle.started", {"device": "shuffler"}, "655a.5(a)")
        await sub.await_until(lambda ms: len(ms) == 2, what="both events")
        assert [(e["seq"], e.get("replayed", False)) for e in _on(sub.messages, table.topics.event)] == [
            (1, True),
            (2, False),
        ]
    finally:
        mosquitto.start()
        await pub.close()
    assert task.done()


async def test_an_unreadable_password_file_is_logged_and_healed_without_a_restart(
    mosquitto: Mosquitto, subscribe: Subscribe, table: Table, tmp_path: Path
) -> None:
    secret = tmp_path / "broker-password"
    settings = MqttSettings(broker=mosquitto.url, username=table.config.table_id, password_file=str(secret))
    sub = subscribe(table.topics.event)
    with capture_logs() as logs:
        pub = EventPublisher(table.journal, settings, table.config.table_id, backoff_min=0.01, backoff_max=0.05)
        task = asyncio.create_task(pub.run())
        table.append(pub, "table.opened", {"chapter": "655a"}, "655a.4")
        await eventually(lambda: any(e["event"].startswith("mqtt settings unusable") for e in logs), what="the log")
        error = next(e for e in logs if e["event"].startswith("mqtt settings unusable"))
        assert error["log_level"] == "error" and str(secret) in error["error"] and "first line" in error["error"]
        assert not task.done() and [e.seq for e in table.journal.unpublished()] == [1]  # kept, table plays on

        secret.write_text("s3cret\n")  # the session broker takes any user: what matters is that it was read
        await sub.await_until(lambda ms: len(ms) == 1, what="the event, once the file is there")
        await pub.close()
    assert task.done()


async def test_an_event_outside_the_contract_is_still_published_and_logged(
    mosquitto: Mosquitto, subscribe: Subscribe, table: Table, contract: type[ContractCheck]
) -> None:
    sub = subscribe(table.topics.event)
    with capture_logs() as logs:
        pub = table.publisher(mosquitto.url)
        task = asyncio.create_task(pub.run())
        table.append(pub, "Not A Type", {"n": 1})
        await sub.await_until(lambda ms: len(ms) == 1, what="the event")
        await pub.close()
    assert json.loads(sub.messages[0].payload)["type"] == "Not A Type"  # never held back
    assert any(e["event"].startswith("event does not match the MQTT contract") and e["seq"] == 1 for e in logs)
    # ... and the contract check flags it.
    assert any(
        "does not validate as TableEvent" in p
        for p in contract.violations(sub.messages, "tablectl", table.config.table_id)
    )
    assert task.done()
