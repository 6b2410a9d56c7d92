"""The retained messages against the broker's packet limit (the shipped `max_packet_size`, which tests/broker.py's
broker runs with; docs/mqtt.md, "Too large for the broker"). A birth too large is known at start: `run` refuses the
config, naming the fix. One grown past the limit at run time (what the devices report of themselves) is held back and
tilts, the events go on; an event held back still moves its device's status, which never goes back to an older event.
A real mosquitto, a real journal file."""

from __future__ import annotations

import asyncio
import json
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.cli import preflight
from controller.cli.verb import UsageError
from controller.config.broker import MAX_PACKET_SIZE
from controller.config.table import MqttSettings, demo_config
from controller.core.events import DomainEvent, JournaledEvent
from controller.mqtt.birth import build_birth
from controller.mqtt.contract import Birth, DeviceStatus, Topics
from controller.mqtt.device_status import MAX_TEXT, DeviceTracker
from controller.mqtt.limits import OVERSIZE_TILT
from controller.mqtt.publisher import EventPublisher
from controller.store.journal import Journal
from tests.broker import Mosquitto, Subscribe

REPO = Path(__file__).resolve().parents[2]


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def test_a_config_whose_birth_passes_the_limit_is_refused_before_the_table_starts(tmp_path: Path) -> None:
    """let-it-ride.toml's 17 devices, each on a 4,000-character port path (PATH_MAX is 4,096): a birth of some 70 KB
    the broker would refuse at every connect. What grows a birth is the devices and the [game] table (the supervisors'
    keys are not in it)."""
    data = tomllib.loads((REPO / "configs" / "let-it-ride.toml").read_text())
    long = "/dev/serial/by-path/" + "p" * 3980
    for dev in ("shuffler", "shoe", "dealer_panel"):
        data["devices"][dev]["port"] = long
    for kind in ("wager_stations", "wager_terminals"):
        for dev in data["devices"][kind]:
            dev["port"] = long
    data["journal"] = {"path": str(tmp_path / "journal.sqlite")}
    data["supervisors"] = []
    path = tmp_path / "table.toml"
    path.write_text("".join(f"{k} = {_toml(v)}\n" for k, v in data.items()))
    report = preflight.check_file(path)
    assert report.config is not None
    [finding] = [f for f in report.errors if f.field == "mqtt.max_packet_size"]
    size = int(finding.problem.split(" would be ")[1].split(" bytes")[0].replace(",", ""))
    birth = build_birth(report.config, "0" * 32)
    assert size > MAX_PACKET_SIZE and size >= len(birth.model_dump_json()), finding
    assert "17 devices" in finding.problem and f"{MAX_PACKET_SIZE:,}-byte packet limit" in finding.problem
    assert "port strings" in finding.fix and "max_packet_size" in finding.fix
    with pytest.raises(UsageError, match="birth message would be"):
        preflight.load_for_run(path)
    # The shipped configs' births are far under it (tools/message_sizes.py measures the largest, 8.3 KB).
    assert not [f for f in preflight.check_file(REPO / "configs" / "let-it-ride.toml").findings if "birth" in f.problem]


async def test_a_birth_grown_past_the_limit_by_the_devices_identities_is_withheld_and_tilts(
    mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path, unique_id: str
) -> None:
    """Ten devices each identify themselves with 7 KB of firmware text: each event fits, the birth naming them all
    (some 72 KB) would not. It is held back (the broker keeps the birth of the connect), one tilt names it, and the
    events and device statuses go on, on the same connection."""
    config = demo_config().model_copy(update={"table_id": unique_id})
    journal = Journal(tmp_path / "journal.sqlite", unique_id, "boot-1")
    birth = build_birth(config, "boot-1")
    topics = Topics("tablectl", unique_id)
    sub = subscribe(f"{topics.base}/#")
    tilts: list[tuple[str, str, str]] = []
    settings = MqttSettings(broker=mosquitto.url)
    pub = EventPublisher(journal, settings, unique_id, birth=birth, tilt=lambda *t: tilts.append(t))
    task = asyncio.create_task(pub.run())
    try:
        devices = [d.device_id for d in birth.devices]
        identity = {"model": "SIM", "serial": "S-1", "firmware": "f" * 7000, "firmware_hash": "ab" * 32}
        online = [DomainEvent("device.online", None, {"device_id": d, "identity": identity}) for d in devices]
        journal.append([*online, DomainEvent("round.recorded", None, {"n": 1})], datetime.now(UTC))
        pub.notify()
        last = len(devices) + 1
        await sub.await_until(lambda ms: any(m.json().get("seq") == last for m in sub.on(topics.event)), what="events")
        await sub.await_until(lambda ms: len(tilts) == 1 and not pub._retained.due(), what="the birth held back")

        def online_statuses() -> set[str]:
            statuses = [DeviceStatus.model_validate_json(m.payload) for m in sub.messages if "/device/" in m.topic]
            return {s.device_id for s in statuses if s.state == "online"}

        # Published is not yet received: the subscriber is waited for (under load the last statuses were still on
        # their way when this was asserted at once, 1 run in 5).
        await sub.await_until(lambda ms: online_statuses() == set(devices), what="every device's status online")
        assert [m.json()["seq"] for m in sub.on(topics.event)] == list(range(1, last + 1))
        [kept] = [Birth.model_validate_json(m.payload) for m in sub.on(topics.birth)]
        assert all(d.identity is None for d in kept.devices)  # the connect's: the broker keeps it
        [(name, reason, remedy)] = tilts
        assert name == OVERSIZE_TILT and f"the retained message on {topics.birth} is " in reason
        assert f"{MAX_PACKET_SIZE:,}-byte packet limit" in reason and "max_packet_size" in remedy
        assert pub.connected
        assert not any("oversize packet" in line for line in mosquitto.log), "the table sent it to the broker"
    finally:
        await pub.close()
        await asyncio.wait_for(task, 10)
        journal.close()


async def test_a_withheld_device_event_still_moves_its_status(
    mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path, unique_id: str
) -> None:
    """The shoe goes offline with a 70 KB reason: the event is withheld (tilt:oversize), and the shoe's status says
    offline all the same, naming that seq, its reason cut to MAX_TEXT; before, it stayed online for the whole boot."""
    journal = Journal(tmp_path / "journal.sqlite", unique_id, "boot-1")
    topics = Topics("tablectl", unique_id)
    sub = subscribe(topics.device("shoe"))
    tilts: list[tuple[str, str, str]] = []
    pub = EventPublisher(journal, MqttSettings(broker=mosquitto.url), unique_id, tilt=lambda *t: tilts.append(t))
    task = asyncio.create_task(pub.run())
    try:
        gone = "serial port closed: " + "x" * 70_000
        journal.append(
            [
                DomainEvent("device.online", None, {"device_id": "shoe"}),
                DomainEvent("device.offline", None, {"device_id": "shoe", "reason": gone}),
            ],
            datetime.now(UTC),
        )
        pub.notify()
        await sub.await_until(lambda ms: any(m.json()["seq"] == 2 for m in ms), what="the shoe's status of seq 2")
        [*_, last] = [DeviceStatus.model_validate_json(m.payload) for m in sub.messages]
        assert (last.state, last.online, last.seq) == ("offline", False, 2)
        assert last.reason is not None and len(last.reason) == MAX_TEXT and gone.startswith(last.reason[:-1])
        assert [t[0] for t in tilts] == [OVERSIZE_TILT] and "event seq 2 (device.offline)" in tilts[0][1]
    finally:
        await pub.close()
        await asyncio.wait_for(task, 10)
        journal.close()


async def test_the_one_status_that_runs_ahead_names_a_withheld_event_no_subscriber_received(
    mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path, unique_id: str
) -> None:
    """docs/mqtt.md, "Order": statuses never run ahead of the events, but for a withheld event's. On the wire (one
    subscriber to the events and the shoe's status, in arrival order): every status names an event received before
    it, but the one naming seq 2, which never arrives (the events after it do, seq 3 the gap's far side); a subscriber
    that comes later finds that status retained, naming seq 2, and only the tilt says why (it names seq 2 too)."""
    journal = Journal(tmp_path / "journal.sqlite", unique_id, "boot-1")
    topics = Topics("tablectl", unique_id)
    sub = subscribe(topics.event, topics.device("shoe"))
    tilts: list[tuple[str, str, str]] = []
    pub = EventPublisher(journal, MqttSettings(broker=mosquitto.url), unique_id, tilt=lambda *t: tilts.append(t))
    task = asyncio.create_task(pub.run())
    try:
        gone = {"device_id": "shoe", "reason": "serial port closed: " + "x" * 70_000}
        journal.append([DomainEvent("device.online", None, {"device_id": "shoe"})], datetime.now(UTC))
        pub.notify()
        await sub.await_until(lambda ms: any(m.json()["seq"] == 1 for m in sub.on(topics.event)), what="seq 1")
        journal.append(
            [DomainEvent("device.offline", None, gone), DomainEvent("round.recorded", None, {"n": 1})],
            datetime.now(UTC),
        )
        pub.notify()
        await sub.await_until(lambda ms: any(m.json()["seq"] == 2 and "/device/" in m.topic for m in ms), what="seq 2")
        await sub.await_until(lambda ms: any(m.json()["seq"] == 3 for m in sub.on(topics.event)), what="seq 3")
        received: set[int] = set()
        ahead: list[int] = []
        for m in sub.messages:
            if m.topic == topics.event:
                received.add(m.json()["seq"])
            elif m.json()["seq"] not in received:
                ahead.append(m.json()["seq"])
        assert sorted(received) == [1, 3] and ahead == [2]
        assert [t[0] for t in tilts] == [OVERSIZE_TILT] and tilts[0][1].startswith("event seq 2 (device.offline) is ")
        late = subscribe(topics.device("shoe"))
        await late.await_until(lambda ms: bool(ms), what="the shoe's retained status")
        [kept] = [DeviceStatus.model_validate_json(m.payload) for m in late.messages]
        assert late.messages[0].retain and (kept.state, kept.seq) == ("offline", 2)
    finally:
        await pub.close()
        await asyncio.wait_for(task, 10)
        journal.close()


def test_a_device_status_never_goes_back_to_an_event_met_again() -> None:
    """A withheld event is read again from the outbox at each reconnect: the shoe, online since seq 8, stays so."""
    tracker = DeviceTracker("T1", "boot-1", ["shoe"], started="2026-11-21T08:00:00Z")
    assert tracker.apply(_ev(5, "device.offline", reason="gone")) is not None
    assert tracker.apply(_ev(8, "device.online")) is not None
    assert tracker.apply(_ev(5, "device.offline", reason="gone")) is None
    [shoe] = tracker.statuses()
    assert (shoe.state, shoe.seq) == ("online", 8)


def _ev(seq: int, type_: str, **payload: str) -> JournaledEvent:
    return JournaledEvent(
        seq=seq,
        event_id=f"{seq:032x}",
        boot_id="boot-1",
        ts="2026-11-21T08:00:01Z",
        table_id="T1",
        round_id=None,
        type=type_,
        rule=None,
        payload={"device_id": "shoe", **payload},
    )


def test_the_settings_description_says_the_limit_bounds_every_message_the_table_publishes() -> None:
    """`[mqtt] max_packet_size` bounds the retained messages too (held back and tilting, or refused at start for the
    birth), not only events and replies as its description said: someone sizing it reads that."""
    text = MqttSettings.model_fields["max_packet_size"].description or ""
    for what in ("events", "replies", "retained", "status", "birth", "device/<id>", "progressive/<level>", "anchor"):
        assert what in text, (what, text)
