"""A birth grown past the broker's packet limit at run time (docs/mqtt.md, "Too large for the broker"): the broker keeps
an earlier birth, which a subscriber cannot tell from a current one, so the table's retained status says `degraded`,
naming the birth stale, for as long as it is; the tilt names what grew it and the fix. A reconnect gives a broker that
lost its store the same stale birth back (not none), the status still saying so; a birth that fits again goes out and
the status is `online` again. Real mosquitto brokers (the suite's, with the shipped packet limit), a real journal."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.config.broker import MAX_PACKET_SIZE
from controller.config.table import MqttSettings, demo_config
from controller.core.events import DomainEvent
from controller.mqtt.birth import build_birth
from controller.mqtt.contract import Birth, TableStatus, Topics
from controller.mqtt.limits import OVERSIZE_TILT
from controller.mqtt.publisher import EventPublisher
from controller.store.journal import Journal
from tests.broker import Mosquitto, Received, Subscribe, Subscriber, own_mosquitto

Tilts = list[tuple[str, str, str]]


def _statuses(messages: list[Received], topics: Topics) -> list[TableStatus]:
    return [TableStatus.model_validate_json(m.payload) for m in messages if m.topic == topics.status]


def _births(messages: list[Received], topics: Topics) -> list[Birth]:
    return [Birth.model_validate_json(m.payload) for m in messages if m.topic == topics.birth]


def _identify(journal: Journal, devices: list[str], firmware: str) -> None:
    """Every device goes offline and comes back identifying itself with `firmware` (the shoe's the longest)."""
    events = []
    for dev in devices:
        identity = {"model": "SIM", "serial": "S-1", "firmware": firmware + ("+" if dev == "shoe" else "")}
        events += [
            DomainEvent("device.offline", None, {"device_id": dev, "reason": "re-identifying"}),
            DomainEvent("device.online", None, {"device_id": dev, "identity": identity}),
        ]
    journal.append(events, datetime.now(UTC))


def _stale(status: TableStatus) -> bool:
    return status.state == "degraded" and status.reason is not None and status.reason.startswith("birth stale")


async def test_a_birth_held_back_at_run_time_makes_the_status_say_the_brokers_birth_is_stale(
    mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path, unique_id: str
) -> None:
    """Ten devices identify themselves with 7 KB of firmware text each: the birth naming them (some 72 KB) is held
    back and the broker keeps the connect's. The status turns degraded, naming the birth stale and the tilt; the tilt
    names the largest identities (the shoe's first) and the fix. The devices identify again with short texts: the
    birth fits, goes out, and the status is online again, in that order."""
    config = demo_config().model_copy(update={"table_id": unique_id})
    journal = Journal(tmp_path / "journal.sqlite", unique_id, "boot-1")
    birth = build_birth(config, "boot-1")
    devices = [d.device_id for d in birth.devices]
    topics = Topics("tablectl", unique_id)
    sub = subscribe(f"{topics.base}/#")
    tilts: Tilts = []
    pub = EventPublisher(
        journal, MqttSettings(broker=mosquitto.url), unique_id, birth=birth, tilt=lambda *t: tilts.append(t)
    )
    task = asyncio.create_task(pub.run())
    try:
        await sub.await_until(lambda ms: bool(_statuses(ms, topics)) and bool(_births(ms, topics)), what="connect")
        assert [s.state for s in _statuses(sub.messages, topics)] == ["online"]
        _identify(journal, devices, "f" * 7000)
        pub.notify()
        await sub.await_until(lambda ms: any(_stale(s) for s in _statuses(ms, topics)), what="the status: stale")
        [_online, stale] = _statuses(sub.messages, topics)
        assert stale.reason is not None and f"{MAX_PACKET_SIZE:,}-byte packet limit" in stale.reason
        assert OVERSIZE_TILT in stale.reason and "held back" in stale.reason
        [kept] = _births(sub.messages, topics)
        assert all(d.identity is None for d in kept.devices)  # the connect's, all the broker has
        [(name, reason, remedy)] = tilts
        assert name == OVERSIZE_TILT and f"the retained message on {topics.birth} is " in reason
        assert "grown by what the devices reported of themselves, the largest identity shoe's (7," in reason
        assert "status says degraded" in reason and "max_packet_size" in remedy and "its maker" in remedy

        _identify(journal, devices, "1.0.1")
        pub.notify()
        await sub.await_until(lambda ms: _statuses(ms, topics)[-1].state == "online", what="the status: online")
        after = [m for m in sub.messages if m.topic in (topics.birth, topics.status)]
        assert [m.topic for m in after][-2:] == [topics.birth, topics.status]  # the birth, then the status
        fresh = _births(sub.messages, topics)[-1]
        assert {d.device_id: (d.identity or {}).get("firmware") for d in fresh.devices} == {
            dev: "1.0.1+" if dev == "shoe" else "1.0.1" for dev in devices
        }
        assert [s.state for s in _statuses(sub.messages, topics)] == ["online", "degraded", "online"]
        assert len(tilts) == 1 and pub.connected
        assert not any("oversize packet" in line for line in mosquitto.log), "the table sent it to the broker"
    finally:
        await pub.close()
        await asyncio.wait_for(task, 10)
        journal.close()


@pytest.fixture
def bare_broker() -> Iterator[Mosquitto]:
    """A broker of the test's own, without persistence: restarted, it has lost every retained message."""
    with own_mosquitto() as broker:
        yield broker


async def test_a_broker_that_lost_its_store_gets_the_stale_birth_back_and_the_status_still_says_so(
    bare_broker: Mosquitto, tmp_path: Path, unique_id: str
) -> None:
    """With the birth held back, the broker restarts without its store. The table reconnects and gives it the last
    birth it took (the connect's), not none, and the status again says it is stale: a subscriber that comes after
    the restart finds both retained."""
    config = demo_config().model_copy(update={"table_id": unique_id})
    journal = Journal(tmp_path / "journal.sqlite", unique_id, "boot-1")
    birth = build_birth(config, "boot-1")
    topics = Topics("tablectl", unique_id)
    tilts: Tilts = []
    settings = MqttSettings(broker=bare_broker.url)
    pub = EventPublisher(journal, settings, unique_id, birth=birth, tilt=lambda *t: tilts.append(t), backoff_max=0.5)
    task = asyncio.create_task(pub.run())
    first = Subscriber(bare_broker.host, bare_broker.port, [topics.status])
    try:
        first.wait_subscribed()
        _identify(journal, [d.device_id for d in birth.devices], "f" * 7000)
        pub.notify()
        await first.await_until(lambda ms: any(_stale(s) for s in _statuses(ms, topics)), what="the status: stale")
        bare_broker.stop()
        bare_broker.start()
        later = Subscriber(bare_broker.host, bare_broker.port, [topics.status, topics.birth])
        try:
            later.wait_subscribed()
            await later.await_until(
                lambda ms: bool(_births(ms, topics)) and any(_stale(s) for s in _statuses(ms, topics)),
                what="the stale birth and the status saying so, after the restart",
            )
            [kept] = _births(later.messages, topics)
            assert kept == birth  # the connect's birth, as the broker held it before its restart
            assert [s.state for s in _statuses(later.messages, topics)] == ["degraded"]
            assert len(tilts) == 1  # once a boot, not at every reconnect
        finally:
            later.close()
    finally:
        first.close()
        await pub.close()
        await asyncio.wait_for(task, 10)
        journal.close()
