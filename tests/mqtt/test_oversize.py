"""An event larger than the broker's packet limit (the shipped `max_packet_size`, which tests/broker.py's broker
runs with): mosquitto would disconnect the table at every attempt and nothing after it would go out. The publisher
holds it back instead, keeps it in the journal's outbox, goes on with the events after it on the same connection, and
raises `tilt:oversize` once naming the event, its size, the limit and the fix; once the broker and the table allow
more, it is published, flagged replayed (a real journal file, a real mosquitto)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from controller.config.broker import MAX_PACKET_SIZE
from controller.config.table import MqttSettings
from controller.core.events import DomainEvent
from controller.mqtt.limits import OVERSIZE_TILT
from controller.mqtt.publisher import EventPublisher
from controller.store.journal import Journal
from tests.broker import Mosquitto, Subscribe
from tests.mqtt.eventually import eventually


async def test_an_oversized_event_is_withheld_and_tilts_and_the_rest_goes_on(
    mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path, unique_id: str
) -> None:
    prefix, table_id = f"oversize-{unique_id}", "T1"
    topic = f"{prefix}/{table_id}/event"
    sub = subscribe(topic)
    journal = Journal(tmp_path / "journal.db", table_id, "boot-1")
    tilts: list[tuple[str, str, str]] = []
    settings = MqttSettings(broker=mosquitto.url, prefix=prefix)
    pub = EventPublisher(journal, settings, table_id, tilt=lambda *t: tilts.append(t))
    task = asyncio.create_task(pub.run())
    try:
        big = "x" * (MAX_PACKET_SIZE + 1000)
        journal.append(
            [DomainEvent("round.recorded", None, p, round_id="r1") for p in ({"n": 1}, {"blob": big}, {"n": 3})],
            datetime.now(UTC),
        )
        pub.notify()
        await sub.await_until(lambda ms: any(m.json()["seq"] == 3 for m in ms), what="the event after it")
        # One connection, QoS 1, in order: seq 2 would have come before seq 3.
        assert [m.json()["seq"] for m in sub.on(topic)] == [1, 3]
        assert pub.connected
        assert not any("oversize packet" in line for line in mosquitto.log), "the table sent it to the broker"
        # Kept in the outbox (the others' marks are committed lazily): nothing lost.
        await eventually(lambda: [e.seq for e in journal.unpublished()] == [2], what="only seq 2 unpublished")
        [(name, reason, remedy)] = tilts
        assert name == OVERSIZE_TILT
        assert "event seq 2 (round.recorded)" in reason and f"{MAX_PACKET_SIZE:,}-byte packet limit" in reason
        size = int(reason.split(" is ")[1].split(" bytes")[0].replace(",", ""))
        assert size > MAX_PACKET_SIZE
        assert "max_packet_size" in remedy and "a supervisor clears the tilt" in remedy
        # Met again (a later batch, a reconnect), it tilts no more this boot.
        journal.append([DomainEvent("round.recorded", None, {"n": 4}, round_id="r1")], datetime.now(UTC))
        pub.notify()
        await sub.await_until(lambda ms: any(m.json()["seq"] == 4 for m in ms), what="seq 4")
        assert len(tilts) == 1
    finally:
        await pub.close()
        await asyncio.wait_for(task, 10)

    # The fix: the broker and the table both allow more; the next start publishes it, flagged replayed.
    raised = 4 * MAX_PACKET_SIZE
    mosquitto.stop()
    text = mosquitto.config.read_text()
    assert f"max_packet_size {MAX_PACKET_SIZE}\n" in text
    mosquitto.config.write_text(text.replace(f"max_packet_size {MAX_PACKET_SIZE}\n", f"max_packet_size {raised}\n"))
    mosquitto.start()
    sub = subscribe(topic)  # a broker without persistence: a new subscription
    settings = MqttSettings(broker=mosquitto.url, prefix=prefix, max_packet_size=raised)
    pub = EventPublisher(journal, settings, table_id, tilt=lambda *t: tilts.append(t))
    task = asyncio.create_task(pub.run())
    try:
        await sub.await_until(lambda ms: any(m.json()["seq"] == 2 for m in ms), 15, "the withheld event")
        [again] = [m.json() for m in sub.on(topic) if m.json()["seq"] == 2]
        assert again["payload"]["blob"] == big and again["replayed"] is True
        await eventually(lambda: journal.unpublished() == [], what="outbox empty")
        assert len(tilts) == 1
    finally:
        await pub.close()
        await asyncio.wait_for(task, 10)
        journal.close()
