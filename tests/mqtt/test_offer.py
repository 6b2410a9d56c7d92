"""The fast path of issue 19 item 3: the journal's writer thread offers a durable commit's events to the publisher,
which writes them as one batch of QoS 1 PUBLISH packets (controller.mqtt.batch). Real mosquitto, real writer thread,
real SQLite journal; the outbox stays the truth: notes in between, reconnects and a broker killed mid-batch."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.config.table import MqttSettings
from controller.core.events import DomainEvent, JournaledEvent
from controller.mqtt import batch as batch_module
from controller.mqtt.batch import Batch
from controller.mqtt.feed import FRESH_MAX
from controller.mqtt.publisher import EventPublisher
from controller.shell.writer import JournalWriter
from controller.store.journal import Journal
from controller.store.outbox import OutboxItem
from tests.broker import Mosquitto, Received, Subscribe
from tests.mqtt.eventually import eventually


class CountingJournal(Journal):
    """A real journal that counts how often the publisher reads its outbox back."""

    reads = 0

    def outbox(self, limit: int = 200, after_seq: int = 0) -> list[OutboxItem]:
        self.reads += 1
        return super().outbox(limit, after_seq)


def step_events(*ns: int) -> list[DomainEvent]:
    # 655a.11(h): a settlement step journals one event per seat; the payload only numbers them here.
    return [DomainEvent("test.event", "655a.11(h)(1)", {"n": n}, round_id="r1") for n in ns]


@pytest.fixture
def journal(tmp_path: Path, unique_id: str) -> Iterator[CountingJournal]:
    j = CountingJournal(tmp_path / "journal.db", f"T-{unique_id}", "boot-1")
    yield j
    j.close()


def settings(mosquitto: Mosquitto, unique_id: str) -> MqttSettings:
    return MqttSettings(broker=mosquitto.url, prefix=f"test-{unique_id}")


def seqs(messages: list[Received], topic: str) -> list[int]:
    return [int(m.json()["seq"]) for m in messages if m.topic == topic]


def first_seen(seq_list: list[int]) -> list[int]:
    """Each seq at its first arrival: at-least-once delivery may repeat one, never reorder what is new."""
    seen: set[int] = set()
    out = []
    for s in seq_list:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def at_least(topic: str, count: int) -> Callable[[list[Received]], bool]:
    return lambda m: len(seqs(m, topic)) >= count


def more_than(batches: list[int], n: int) -> Callable[[], bool]:
    return lambda: len(batches) > n


@contextlib.asynccontextmanager
async def offering(
    journal: CountingJournal,
    cfg: MqttSettings,
    *,
    ready: Callable[[EventPublisher], bool] = lambda pub: pub.connected,
    what: str = "connected",
    backoff: tuple[float, float] = (0.2, 5.0),
) -> AsyncIterator[tuple[EventPublisher, JournalWriter]]:
    """A publisher running with the journal's writer thread handing it durable events (the daemon's wiring), once
    `ready`; closed after, its task ended."""
    pub = EventPublisher(journal, cfg, journal.table_id, backoff_min=backoff[0], backoff_max=backoff[1])
    writer = JournalWriter(journal, on_durable=pub.offer)
    task = asyncio.create_task(pub.run())
    try:
        await eventually(lambda: ready(pub), what=what)
        yield pub, writer
    finally:
        await pub.close()
        writer.close()
    assert task.done()


async def commit(writer: JournalWriter, events: list[DomainEvent]) -> list[JournaledEvent]:
    done = writer.submit(events, datetime.now(UTC), [])
    await writer.wait(done)
    assert done.journaled is not None
    return done.journaled


async def test_offered_steps_go_out_in_order_without_reading_the_outbox(
    mosquitto: Mosquitto, subscribe: Subscribe, journal: CountingJournal, unique_id: str
) -> None:
    cfg = settings(mosquitto, unique_id)
    topic = f"{cfg.prefix}/{journal.table_id}/event"
    sub = subscribe(topic)
    async with offering(
        journal, cfg, ready=lambda pub: pub.connected and journal.reads > 0, what="connected, outbox read once"
    ) as (pub, writer):
        await eventually(lambda: pub._feed.db_due is False, what="the outbox found empty")
        reads_before = journal.reads
        # 20 steps of 10 events, and one of 150 (more than paho's 100 in flight: it queues the rest, in order).
        for step in range(20):
            await commit(writer, step_events(*range(step * 10 + 1, step * 10 + 11)))
        await commit(writer, step_events(*range(201, 351)))
        await sub.await_until(lambda m: len(seqs(m, topic)) >= 350, what="350 events")
        assert seqs(sub.messages, topic) == list(range(1, 351))
        assert all("replayed" not in m.json() for m in sub.messages)
        # Every one of them went from the writer thread to the wire without the outbox being read back.
        assert journal.reads == reads_before
        # Acknowledged: the marks reach the file (MARK_EVERY at a time, or once idle).
        await eventually(lambda: journal.unpublished() == [], what="outbox marked")


async def test_the_anchor_rides_behind_each_batch_in_the_same_write(
    mosquitto: Mosquitto,
    subscribe: Subscribe,
    journal: CountingJournal,
    unique_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each batch's write ends with the retained anchor naming its last event (docs/mqtt.md, `anchor`): a subscriber
    sees every anchor right after the events it names, with the journal's chain hash there, and never lower."""
    cfg = settings(mosquitto, unique_id)
    topic = f"{cfg.prefix}/{journal.table_id}/event"
    anchor_topic = f"{cfg.prefix}/{journal.table_id}/anchor"
    sub = subscribe(topic, anchor_topic)
    real_send = batch_module.send
    written: list[tuple[int, str | None]] = []  # (events in the batch, the anchor written behind them)

    def recording_send(client: aiomqtt.Client, to: str, bodies: Any, then: Any = None) -> Batch:
        bodies = list(bodies)  # a generator in the publisher: each body built as its turn comes
        # The anchor is asked for once the bodies were taken (it names the last event the broker was given).
        behind = then() if callable(then) else then
        written.append((len(bodies), None if behind is None else behind[0]))
        return real_send(client, to, bodies, behind)

    monkeypatch.setattr(batch_module, "send", recording_send)
    async with offering(journal, cfg) as (_pub, writer):
        for step in range(5):
            await commit(writer, step_events(*range(step * 3 + 1, step * 3 + 4)))
            await sub.await_until(at_least(topic, (step + 1) * 3), what=f"step {step + 1}")
        await sub.await_until(
            lambda m: any(x.topic == anchor_topic and x.json()["seq"] == 15 for x in m), what="anchor at 15"
        )
        assert written == [(3, anchor_topic)] * 5
        order = [(m.topic, m.json()["seq"]) for m in sub.messages]
        anchors = [(i, seq) for i, (t, seq) in enumerate(order) if t == anchor_topic]
        assert [seq for _, seq in anchors] == [3, 6, 9, 12, 15]
        for i, seq in anchors:  # right behind the event it names
            assert order[i - 1] == (topic, seq)
        last = [m.json() for m in sub.messages if m.topic == anchor_topic][-1]
        assert last["hash"] == journal.hash_at(15) and last["boot_id"] == "boot-1"


async def test_a_note_between_steps_is_read_from_the_outbox_in_its_place(
    mosquitto: Mosquitto, subscribe: Subscribe, journal: CountingJournal, unique_id: str
) -> None:
    cfg = settings(mosquitto, unique_id)
    topic = f"{cfg.prefix}/{journal.table_id}/event"
    sub = subscribe(topic)
    async with offering(journal, cfg) as (pub, writer):
        await commit(writer, step_events(1, 2, 3))
        # A shell note (TableService.note) is appended on the loop and only notified, never offered.
        journal.append([DomainEvent("device.online", None, {"device_id": "shoe"})], datetime.now(UTC))
        pub.notify()
        await commit(writer, step_events(5, 6))
        await sub.await_until(lambda m: len(seqs(m, topic)) >= 6, what="6 events")
        got = [m.json() for m in sub.messages if m.topic == topic]
        assert [e["seq"] for e in got] == [1, 2, 3, 4, 5, 6]
        assert got[3]["type"] == "device.online"
        await eventually(lambda: journal.unpublished() == [], what="outbox marked")


async def test_broker_killed_mid_batch_loses_nothing(
    mosquitto: Mosquitto,
    subscribe: Subscribe,
    journal: CountingJournal,
    unique_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The third batch is written to the socket and the broker is killed before any PUBACK can come back; three more
    steps are committed while it is away: after the restart every event is there, new ones in seq order, the
    unacknowledged ones and those journaled during the outage again and flagged `replayed` (docs/mqtt.md, "Replay")."""
    cfg = settings(mosquitto, unique_id)
    topic = f"{cfg.prefix}/{journal.table_id}/event"
    sub = subscribe(topic)
    real_send = batch_module.send
    batches: list[int] = []

    def send_then_kill(client: aiomqtt.Client, to: str, bodies: Any, then: Any = None) -> Batch:
        bodies = list(bodies)  # a generator in the publisher
        batches.append(len(bodies))
        if len(batches) != 3:
            return real_send(client, to, bodies, then)
        broker = mosquitto.proc
        assert broker is not None
        # Frozen, the broker's socket still takes the packets but nothing answers them: no PUBACK, nothing forwarded.
        broker.send_signal(signal.SIGSTOP)
        sent = real_send(client, to, bodies, then)
        mosquitto.stop(kill=True)  # SIGKILL: the batch dies unacknowledged with the broker (no persistence)
        return sent

    monkeypatch.setattr(batch_module, "send", send_then_kill)
    async with offering(journal, cfg, backoff=(0.05, 0.2)) as (pub, writer):
        for step in range(3):
            if step == 2:
                # A PUBACK says the broker took the event, not that it has forwarded it yet: the broker killed right
                # after the PUBACKs of batch 2 (the kill comes with batch 3) would lose what it had not forwarded (no
                # persistence), a loss no publisher can see. The subscriber has them all before the kill.
                await sub.await_until(lambda m: set(seqs(m, topic)) >= set(range(1, 21)), what="events 1-20")
            await commit(writer, step_events(*range(step * 10 + 1, step * 10 + 11)))
            await eventually(more_than(batches, step), what=f"batch {step + 1} sent")
        # The broker stays down until the last three steps are durable, so which events are journaled during the
        # outage does not depend on how fast a commit is against the reconnect's backoff (it lost that race under
        # load when the broker came back at once).
        await eventually(lambda: not pub.connected, what="the kill noticed")
        for step in range(3, 6):
            await commit(writer, step_events(*range(step * 10 + 1, step * 10 + 11)))
        assert len(batches) == 3  # nothing sent while the broker is away
        mosquitto.start()
        # Blocking the loop on purpose: the publisher cannot reconnect before the subscriber is back.
        sub.wait_subscribed(2)
        # A bound on failure only: the reconnect after the broker is back waits out its backoff, longer under load.
        await sub.await_until(lambda m: set(seqs(m, topic)) >= set(range(1, 61)), within=30.0, what="all 60 events")
        # The killed batch never reached anyone: the reconnect publishes it from the outbox, in its place, as a
        # replay, with what was committed during the outage; what was acknowledged before is not sent again.
        bodies = [m.json() for m in sub.messages if m.topic == topic]
        assert [b["seq"] for b in bodies] == list(range(1, 61))
        assert [b.get("replayed", False) for b in bodies] == [False] * 20 + [True] * 40
        assert len({b["event_id"] for b in bodies}) == 60
        await eventually(lambda: journal.unpublished() == [], what="outbox marked")


async def test_offers_past_the_memory_bound_during_an_outage_come_from_the_outbox(
    mosquitto: Mosquitto, subscribe: Subscribe, journal: CountingJournal, unique_id: str
) -> None:
    cfg = settings(mosquitto, unique_id)
    topic = f"{cfg.prefix}/{journal.table_id}/event"
    sub = subscribe(topic)
    async with offering(journal, cfg, backoff=(0.05, 0.2)) as (pub, writer):
        mosquitto.stop()
        await eventually(lambda: not pub.connected, what="outage noticed")
        total = FRESH_MAX + 200
        for start in range(1, total + 1, 100):
            await commit(writer, step_events(*range(start, start + 100)))
        assert len(pub._feed.fresh) <= FRESH_MAX  # bounded: the rest is only in the journal
        mosquitto.start()
        sub.wait_subscribed(2)
        await sub.await_until(lambda m: len(set(seqs(m, topic))) >= total, what=f"{total} events", within=30)
        assert first_seen(seqs(sub.messages, topic)) == list(range(1, total + 1))
        await eventually(lambda: journal.unpublished() == [], what="outbox marked")


async def test_close_during_a_batch_still_publishes_the_offered_events_after_it(
    mosquitto: Mosquitto,
    subscribe: Subscribe,
    journal: CountingJournal,
    unique_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """close() lands while the first batch of an offered step awaits its PUBACKs, with more of the step still in
    memory: the final drain publishes the rest (found by `tablectl demo --floor`, whose tables close right after
    their last round: the events taken for the next batch were dropped and the table closed with them unpublished)."""
    cfg = settings(mosquitto, unique_id)
    topic = f"{cfg.prefix}/{journal.table_id}/event"
    sub = subscribe(topic)
    real_send = batch_module.send
    batches: list[int] = []
    closing: list[asyncio.Future[None]] = []

    def send_then_close(client: aiomqtt.Client, to: str, bodies: Any, then: Any = None) -> Batch:
        bodies = list(bodies)  # a generator in the publisher
        batches.append(len(bodies))
        sent = real_send(client, to, bodies, then)
        if len(batches) == 1:
            # Scheduled now, so close() runs before the loop reads this batch's PUBACKs off the socket.
            closing.append(asyncio.ensure_future(pub.close()))
        return sent

    monkeypatch.setattr(batch_module, "send", send_then_close)
    async with offering(journal, cfg) as (pub, writer):
        # One step of 250 events: offered at once, sent as a batch of 200 and then one of 50.
        await commit(writer, step_events(*range(1, 251)))
        await eventually(lambda: bool(closing) and closing[0].done(), what="closed")
        await sub.await_until(lambda m: len(set(seqs(m, topic))) >= 250, what="all 250 events")
        assert first_seen(seqs(sub.messages, topic)) == list(range(1, 251))
        assert batches[0] == 200
        # Every one acknowledged and marked before the publisher stopped: nothing left for the next boot to replay.
        assert journal.unpublished() == []
