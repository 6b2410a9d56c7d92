"""The outbox publisher against a real mosquitto, watched by an independent paho subscriber."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, MutableMapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from controller.config.table import MqttSettings
from controller.core.events import DomainEvent
from controller.mqtt.connection import parse_broker_url
from controller.mqtt.publisher import MARK_EVERY, EventPublisher
from controller.store.failure import StorageError, storage_error
from controller.store.journal import Journal
from tests.broker import Mosquitto, Received, Subscribe, Subscriber, find_mosquitto
from tests.mqtt.eventually import eventually

PUBLIC_FIELDS = {"event_id", "boot_id", "seq", "ts", "table_id", "round_id", "type", "rule", "payload"}


def append(journal: Journal, publisher: EventPublisher | None, *ns: int) -> None:
    journal.append(
        [
            DomainEvent(
                type="test.event", rule="655a.11(h)(2)", payload={"n": n}, round_id="r1", sealed={"hole": ["AS", "KD"]}
            )
            for n in ns
        ],
        datetime.now(UTC),
    )
    if publisher is not None:
        publisher.notify()


def events_of(messages: list[Received], topic: str) -> list[dict[str, Any]]:
    return [m.json() for m in messages if m.topic == topic]


def status_is(topic: str, state: str) -> Callable[[list[Received]], bool]:
    return lambda msgs: any(m.topic == topic and m.json()["state"] == state for m in msgs)


class Table:
    def __init__(self, tmp_path: Path, prefix: str, table_id: str) -> None:
        self.prefix, self.table_id = prefix, table_id
        self.status = f"{prefix}/{table_id}/status"
        self.event = f"{prefix}/{table_id}/event"
        self.journal = Journal(tmp_path / "journal.db", table_id, "boot-1")

    def settings(self, url: str) -> MqttSettings:
        return MqttSettings(broker=url, prefix=self.prefix)


@pytest.fixture
def table(tmp_path: Path, unique_id: str) -> Iterator[Table]:
    t = Table(tmp_path, f"test-{unique_id}", "T1")
    yield t
    t.journal.close()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("mqtt://127.0.0.1:1883", ("127.0.0.1", 1883)),
        ("mqtt://broker.casino.local", ("broker.casino.local", 1883)),
        ("mqtt://[::1]:2883", ("::1", 2883)),
    ],
)
def test_parse_broker_url(url: str, expected: tuple[str, int]) -> None:
    assert parse_broker_url(url) == expected


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("127.0.0.1:1883", "scheme"),
        ("http://h:1883", "scheme"),
        ("mqtt://:1883", "host"),
        ("mqtt://h:99999", "port"),
        ("mqtt://h:abc", "port"),
        ("mqtt://u:p@h:1883", "credentials"),
        ("mqtt://h:1883/x", "path"),
    ],
)
def test_parse_broker_url_rejects_with_example(url: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as info:
        parse_broker_url(url)
    assert "mqtt://127.0.0.1:1883" in str(info.value)


async def test_publishes_in_seq_order_with_public_fields(
    mosquitto: Mosquitto, subscribe: Subscribe, table: Table
) -> None:
    sub = subscribe(f"{table.prefix}/#")
    pub = EventPublisher(table.journal, table.settings(mosquitto.url), table.table_id)
    task = asyncio.create_task(pub.run())
    await sub.await_until(status_is(table.status, "online"), what="status online")
    assert pub.connected

    append(table.journal, pub, 1, 2, 3)
    append(table.journal, pub, 4)
    await sub.await_until(lambda m: len(events_of(m, table.event)) == 4, what="4 events")
    got = events_of(sub.messages, table.event)
    assert [e["seq"] for e in got] == [1, 2, 3, 4]
    assert [e["payload"]["n"] for e in got] == [1, 2, 3, 4]
    for body, stored in zip(got, table.journal.events(), strict=True):
        # Exactly the public fields: no sealed part, and no replayed flag on live events.
        assert set(body) == PUBLIC_FIELDS
        assert body == stored.public()
    assert all(m.payload.startswith(b'{"event_id":') for m in sub.on(table.event))  # compact JSON
    await eventually(lambda: table.journal.unpublished() == [], what="outbox empty")

    # A late subscriber still learns the table is online: the status is retained.
    late = subscribe(table.status)
    late.wait_until(lambda m: bool(m), what="retained status")
    assert late.messages[0].retain and late.messages[0].json()["state"] == "online"
    assert late.messages[0].json()["boot_id"] == "boot-1"

    await pub.close()
    assert task.done() and task.result() is None
    await sub.await_until(status_is(table.status, "offline"), what="status offline")
    assert not pub.connected


async def test_backlog_from_before_start_is_replayed(mosquitto: Mosquitto, subscribe: Subscribe, table: Table) -> None:
    append(table.journal, None, 1, 2)  # journaled while no publisher ran (e.g. before a restart)
    sub = subscribe(table.event)
    pub = EventPublisher(table.journal, table.settings(mosquitto.url), table.table_id)
    task = asyncio.create_task(pub.run())
    await sub.await_until(lambda m: len(m) == 2, what="backlog")
    append(table.journal, pub, 3)
    await sub.await_until(lambda m: len(m) == 3, what="live event")
    got = [m.json() for m in sub.messages]
    assert [(e["seq"], e.get("replayed")) for e in got] == [(1, True), (2, True), (3, None)]
    await pub.close()
    assert task.done()


async def test_close_drains_what_is_left(mosquitto: Mosquitto, subscribe: Subscribe, table: Table) -> None:
    sub = subscribe(f"{table.prefix}/#")
    pub = EventPublisher(table.journal, table.settings(mosquitto.url), table.table_id)
    task = asyncio.create_task(pub.run())
    await eventually(lambda: pub.connected, what="connected")
    append(table.journal, pub, *range(1, 51))
    await pub.close(drain_timeout=5.0)
    assert task.done() and task.result() is None
    assert table.journal.unpublished() == []
    sub.wait_until(status_is(table.status, "offline"), what="status offline")
    assert [e["seq"] for e in events_of(sub.messages, table.event)] == list(range(1, 51))
    # offline comes after the last event
    assert sub.messages[-1].topic == table.status


async def test_broker_outage_loses_nothing_and_replays_in_order(
    mosquitto: Mosquitto, subscribe: Subscribe, table: Table
) -> None:
    sub = subscribe(f"{table.prefix}/#")
    pub = EventPublisher(table.journal, table.settings(mosquitto.url), table.table_id, backoff_max=0.5)
    task = asyncio.create_task(pub.run())
    try:
        await eventually(lambda: pub.connected, what="connected")
        append(table.journal, pub, 1, 2)
        await sub.await_until(lambda m: len(events_of(m, table.event)) == 2, what="live events")

        mosquitto.stop()
        await eventually(lambda: not pub.connected, what="publisher notices the outage")
        append(table.journal, pub, 3, 4, 5)
        append(table.journal, pub, 6)
        assert [e.seq for e in table.journal.unpublished()] == [3, 4, 5, 6]  # kept, nothing lost
        assert not task.done()

        mosquitto.start()
        # Deliberately blocking the event loop: the publisher (which runs on it) cannot reconnect and
        # publish the backlog before the subscriber has resubscribed, so it cannot miss any of it.
        sub.wait_subscribed(2)
        await sub.await_until(lambda m: len(events_of(m, table.event)) >= 6, what="backlog after restart")
        append(table.journal, pub, 7)
        await sub.await_until(lambda m: len(events_of(m, table.event)) >= 7, what="live event after restart")

        got = events_of(sub.messages, table.event)
        assert [e["seq"] for e in got] == [1, 2, 3, 4, 5, 6, 7]
        assert len({e["event_id"] for e in got}) == 7
        assert [e.get("replayed", False) for e in got] == [False, False, True, True, True, True, False]
        await eventually(lambda: table.journal.unpublished() == [], what="outbox empty")
        await sub.await_until(status_is(table.status, "online"), what="online again")
    finally:
        mosquitto.start()  # leave the session's broker running even if this test failed midway
        await pub.close()


OUTAGE_UNTIL_ROUND = 40


@pytest.fixture
def floor_broker() -> Iterator[Mosquitto]:
    """A broker configured as a floor's is (persistence on, systemd/mosquitto/mosquitto.conf): what it acknowledged
    survives its restart. On the leash (its persistence file too): gone with this run, however it ends."""
    binary = find_mosquitto()
    assert binary is not None, "mosquitto is not installed (python3 dev.py test installs it)"
    broker = Mosquitto.leashed(binary, persistence=True)
    broker.start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture
def floor_subscriber(floor_broker: Mosquitto, unique_id: str) -> Iterator[Subscriber]:
    """The outage test's subscriber to its table's events, with a session the broker keeps (clean session off)."""
    sub = Subscriber(floor_broker.host, floor_broker.port, [f"outage/{unique_id}/event"], session=f"floor-{unique_id}")
    try:
        sub.wait_subscribed()
        yield sub
    finally:
        sub.close()


async def test_rounds_played_through_an_outage_are_replayed_in_order(
    floor_broker: Mosquitto, floor_subscriber: Subscriber, unique_id: str, tmp_path: Path
) -> None:
    """The demo table on real ptys keeps playing while the broker is down; afterwards the subscriber gets every
    round journaled meanwhile, in seq order, each event marked "replayed": true. The outage spans 38 rounds,
    about 2,500 events: several minutes of play at a table's pace (here at pace 0, in seconds).

    The broker and the subscriber are set up as a floor's (persistence on, the subscriber's session kept): the table's
    promise ends at the broker's PUBACK (docs/mqtt.md, "Guarantees"), so events the broker acknowledged just before
    its SIGTERM reach the subscriber after the restart. The broker is stopped when this companion hears round 2
    complete, and the publisher may have had those events acknowledged already (the writer thread hands them over
    before the service's listeners hear of them): no ordering between listeners and broker is assumed."""
    import random

    from controller.config.table import TableConfig, demo_config
    from controller.engine.inputs import CloseTable
    from controller.people.demo import RandomPolicy
    from controller.people.floor import SimulatedFloor
    from controller.shell.runner import build_devices, run_table
    from controller.shell.service import TableService
    from drivers.sim.table import SimulatedTable

    data = demo_config().model_dump()
    data["table_id"], data["mqtt"]["prefix"] = unique_id, "outage"
    config = TableConfig.model_validate(data)
    topic = f"outage/{unique_id}/event"
    mosquitto, sub = floor_broker, floor_subscriber
    path = tmp_path / "journal.sqlite"
    window: dict[str, int] = {}
    rng = random.Random(7)

    async def outage(service: TableService) -> None:
        events = service.subscribe("test", "lossless")
        completed = 0
        while True:
            ev = await events.get()
            if ev.type != "round.completed":
                continue
            completed += 1
            if completed == 1:
                # Round 1 reaches the subscriber live while round 2 is played.
                await sub.await_until(
                    lambda m: any(b'"round.completed"' in x.payload for x in m),
                    within=30,
                    what="round 1 completed, live",
                )
            elif completed == 2:
                # Blocking the loop from here on: the publisher takes no PUBACK and sends nothing more. The writer
                # thread may have handed round 2's last events to the publisher before this companion heard of them,
                # so the broker may be acknowledging them as it is stopped: those are the broker's to deliver after
                # its restart (persistence, the kept session; docs/mqtt.md, "Latency"), and the outbox replays
                # whatever the publisher has not seen acknowledged.
                window["live"] = len(sub.on(topic))
                mosquitto.stop()  # blocks the loop until the broker is gone: nothing after this reaches it live
                window["down"] = service.journal.last_seq
            elif completed == OUTAGE_UNTIL_ROUND:
                window["up"] = service.journal.last_seq
                mosquitto.start()
                # Still blocking the loop: the publisher cannot replay before the subscriber is back.
                sub.wait_subscribed(2)
                journaled = service.journal.last_seq

                def backlog_in(m: list[Received], n: int = journaled) -> bool:
                    return len({x.json()["seq"] for x in m}) >= n

                await sub.await_until(
                    backlog_in,
                    within=30,
                    what="the backlog after the broker came back",
                )
                service.submit(CloseTable())
                return

    async with SimulatedTable(config.game.seats, rng) as sims:

        def people(service: TableService) -> list[Coroutine[Any, Any, None]]:
            return [SimulatedFloor(service, sims, RandomPolicy(rng), None, 0.0).run(), outage(service)]

        try:
            await asyncio.wait_for(
                run_table(
                    config,
                    build_devices(config, sims.ports),
                    broker=mosquitto.url,
                    journal_path=path,
                    companions=people,
                ),
                timeout=90,
            )
        finally:
            mosquitto.start()

    journal = Journal(path, unique_id, "check")
    stored = journal.events()
    journal.close()
    # The broker acknowledged everything before the publisher closed; the subscriber may still be reading it.
    try:
        await sub.await_until(
            lambda m: len({x.json()["seq"] for x in m if x.topic == topic}) >= len(stored),
            within=30,
            what="every journaled event at the subscriber",
        )
    except AssertionError:
        seen = {m.json()["seq"] for m in sub.on(topic)}
        missing = [e.seq for e in stored if e.seq not in seen]
        raise AssertionError(f"missing at the subscriber: seqs {missing[:50]} ({len(missing)}); {window}") from None
    unique: dict[str, dict[str, Any]] = {}
    for m in sub.on(topic):
        unique.setdefault(m.json()["event_id"], m.json())  # duplicates allowed, gaps not
    got = list(unique.values())
    assert [e["seq"] for e in got] == [e.seq for e in stored] == list(range(1, len(stored) + 1))
    down = [e for e in got if window["down"] < e["seq"] <= window["up"]]
    # Rounds 3 to 40 were journaled with the broker down (all but the first of them at least, whatever the lag).
    assert sum(e["type"] == "round.completed" for e in down) >= OUTAGE_UNTIL_ROUND - 3
    assert all(e.get("replayed") is True for e in down)
    # Round 1 was played and published live, before the broker went down.
    live = [m.json() for m in sub.on(topic)[: window["live"]] if m.json()["round_id"] == f"{unique_id}-r000001"]
    assert any(e["type"] == "round.completed" for e in live) and not any(e.get("replayed") for e in live)
    assert got[-1]["type"] == "table.closed"


async def test_no_broker_keeps_running_and_closes_promptly(table: Table) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused
        with capture_logs() as logs:
            pub = EventPublisher(
                table.journal,
                table.settings(f"mqtt://127.0.0.1:{port}"),
                table.table_id,
                backoff_min=0.01,
                backoff_max=0.05,
            )
            task = asyncio.create_task(pub.run())
            append(table.journal, pub, 1, 2)

            def failures() -> list[MutableMapping[str, Any]]:
                return [e for e in logs if e["event"] == "mqtt broker unavailable"]

            await eventually(lambda: len(failures()) >= 3, what="three failed connection attempts")
            assert not task.done() and not pub.connected
            assert failures()[0]["broker"] == f"127.0.0.1:{port}" and failures()[0]["error"]
            assert "start it (systemctl start mosquitto) or point [mqtt] broker" in failures()[0]["fix"]
            assert [e.seq for e in table.journal.unpublished()] == [1, 2]

            started = time.monotonic()
            await pub.close(drain_timeout=1.0)
            assert time.monotonic() - started < 1.0
            assert task.done() and not task.cancelled() and task.result() is None


WILL_SCRIPT = """
import asyncio, sys
from controller.config.table import MqttSettings
from controller.store.journal import Journal
from controller.mqtt.publisher import EventPublisher

async def main() -> None:
    path, url, prefix, table_id = sys.argv[1:5]
    settings = MqttSettings(broker=url, prefix=prefix)
    await EventPublisher(Journal(path, table_id, "boot-will"), settings, table_id).run()

asyncio.run(main())
"""


def test_last_will_on_abrupt_disconnect(
    mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path, unique_id: str
) -> None:
    prefix = f"test-{unique_id}"
    status = f"{prefix}/T9/status"
    sub = subscribe(status)
    stderr = (tmp_path / "stderr.txt").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-c", WILL_SCRIPT, str(tmp_path / "j.db"), mosquitto.url, prefix, "T9"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    try:
        sub.wait_until(status_is(status, "online"), timeout=20, what="online from the child")
        proc.kill()  # no DISCONNECT packet: the broker must publish the will
        proc.wait(timeout=10)
        sub.wait_until(status_is(status, "lost"), what="last will")
        lost = sub.messages[-1].json()
        assert lost["state"] == "lost" and lost["boot_id"] == "boot-will"
        # The will is retained, so a supervisor connecting later sees the table as lost.
        late = subscribe(status)
        late.wait_until(lambda m: bool(m), what="retained will")
        assert late.messages[0].retain and late.messages[0].json()["state"] == "lost"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr.close()


class MarkingJournal(Journal):
    """A real journal that notes the thread each outbox mark commits on, and can refuse them as a full disk does
    (the disk itself cannot be filled here)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mark_threads: list[str] = []
        self.refuse = False

    def mark_published(self, seqs: Sequence[int], replayed: bool) -> None:
        if seqs:
            self.mark_threads.append(threading.current_thread().name)
        if self.refuse and seqs:
            raise storage_error(sqlite3.OperationalError("database or disk is full"), self.path, "marking events")
        super().mark_published(seqs, replayed)


async def test_outbox_marks_are_committed_off_the_loop_and_a_refused_mark_stops_the_publisher(
    mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path, unique_id: str
) -> None:
    """Their fsync would hold up the next batch of a step's events (bench/event_latency.py): the marks of every
    MARK_EVERY acknowledged events commit on an executor thread; a disk that refuses them still stops the table."""
    journal = MarkingJournal(tmp_path / "journal.db", "T1", "boot-1")
    prefix = f"test-{unique_id}"
    sub = subscribe(f"{prefix}/#")
    pub = EventPublisher(journal, MqttSettings(broker=mosquitto.url, prefix=prefix), "T1")
    task = asyncio.create_task(pub.run())
    try:
        await eventually(lambda: pub.connected, what="connected")
        for n in range(1, MARK_EVERY + 51):
            append(journal, pub, n)
        await eventually(lambda: journal.unpublished() == [], what="every event marked")
        loop_thread = threading.current_thread().name
        assert journal.mark_threads and loop_thread not in journal.mark_threads
        journal.refuse = True
        append(journal, pub, *range(1000, 1000 + MARK_EVERY))
        with pytest.raises(StorageError, match="disk is full"):
            await asyncio.wait_for(task, 10)
        await sub.await_until(
            lambda ms: any(m.topic == f"{prefix}/T1/status" and "stopped" in m.json().get("reason", "") for m in ms),
            what="the retained status saying the table stopped",
        )
    finally:
        await pub.close()
        journal.close()
