"""The outbox publisher: drains the journal to the MQTT broker, surviving broker outages.

Delivery is at-least-once: an event is marked published only after the broker's PUBACK, so an event
whose PUBACK was lost is published again after reconnecting. Consumers dedupe by `event_id` and detect
gaps by `seq` (DESIGN.md, MQTT contract; docs/mqtt.md).

Besides the events it keeps the table's retained topics (status: online or degraded and why; birth, device/<id>
and progressive/<level> through controller.mqtt.retained), published again after every reconnect, so a broker
that lost its retained store is repaired. A journal row it cannot publish is quarantined (controller.store.outbox).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable

import aiomqtt
import structlog

from controller.config.broker import parse_broker_address
from controller.config.table import MqttSettings
from controller.core.events import DomainEvent, JournaledEvent
from controller.mqtt import batch as packets
from controller.mqtt import limits
from controller.mqtt.anchor import AnchorTopic
from controller.mqtt.connection import broker_fix, client_kwargs, until_lost
from controller.mqtt.contract import Birth, JournalAnchor, ProgressiveMeter, Topics
from controller.mqtt.feed import EventFeed
from controller.mqtt.marks import OutboxMarks
from controller.mqtt.messages import now_iso, quarantined, status_message
from controller.mqtt.offloop import JournalThread, append_later
from controller.mqtt.reads import fewer_reads
from controller.mqtt.retained import RetainedTopics
from controller.mqtt.retainer import Health, Retainer
from controller.mqtt.wake import Wake
from controller.store.failure import StorageError
from controller.store.journal import Journal
from controller.store.outbox import DamagedRow

# Outbox marks are committed (off the loop, controller.mqtt.marks) for MARK_EVERY acknowledged events at once, or
# once the publisher was idle MARK_DELAY seconds, or at close (see _drain).
MARK_EVERY = 100
MARK_DELAY = 0.5

# Journals shell events (TableService.note, off the loop): the quarantine of a damaged row in seq order with the rest
# (without a service, tests and tools: on the outbox's thread, ahead of its next read: offloop.append_later).
Note = Callable[[list[DomainEvent]], object]
# Raises a tilt (name, reason, remedy) at the table: the service steps a RaiseTilt (controller/shell/supervised.py).
Tilt = Callable[[str, str, str], object]


class EventPublisher:
    """Publishes the journal's outbox in seq order and keeps the table's retained topics; reconnects with
    backoff until cancelled or closed.

    Run `run()` as a task in the daemon's event loop, call `notify()` after each `Journal.append` (or `offer(events)`
    with a durable commit's events, which spares reading them back from the file), and stop with `await close()`
    (which drains, then publishes the retained "offline" status). All methods must be called from the event loop's
    thread.

    `settings` are the config's [mqtt] (broker URL, prefix, credentials, TLS); `broker` overrides its URL
    (the --broker option). `birth`, when given, is published retained and names the devices whose
    device/<id> topics start as "unknown" until this boot's device events say otherwise.
    """

    def __init__(
        self,
        journal: Journal,
        settings: MqttSettings,
        table_id: str,
        *,
        broker: str | None = None,
        birth: Birth | None = None,
        client_id: str | None = None,
        connect_timeout: float = 3.0,
        keepalive: int | None = None,
        backoff_min: float = 0.2,
        backoff_max: float = 5.0,
        note: Note | None = None,
        health: Health | None = None,
        tilt: Tilt | None = None,
    ) -> None:
        self._journal = journal
        self._tilt: Tilt = tilt or (lambda name, reason, remedy: None)
        self._note: Note = note or (lambda e: append_later(self._reads, journal, e, self._log))
        self._stop_reason: str | None = None  # a fault that stops the table, said in the final "offline"
        self._settings = settings
        self._broker_url = broker
        # Parsed now so a malformed URL fails at start; credentials and TLS files are read at each connection
        # attempt, so fixing a password file heals a running daemon.
        address = parse_broker_address(broker or settings.broker)
        self.broker = f"{address.host}:{address.port}"
        self._table_id = table_id
        self.topics = Topics(settings.prefix, table_id)
        self._client_id = client_id or f"tablectl-{table_id}"
        # Also bounds each PUBACK wait: a broker that stops answering is treated as an outage.
        self._timeout = connect_timeout
        self._keepalive = settings.keepalive_s if keepalive is None else keepalive
        self._backoff_min = backoff_min
        self._backoff_max = backoff_max
        self._retained = RetainedTopics(self.topics, journal.boot_id, birth, birth.ts if birth else now_iso())
        self._anchor = AnchorTopic(journal, self.topics)  # retained `anchor` (controller.mqtt.anchor)
        # What is too large for the broker, held back and tilted once a boot (controller.mqtt.limits).
        self._withheld = limits.Withheld(
            self._tilt, structlog.get_logger(__name__, broker=self.broker, table_id=table_id)
        )
        self._retainer = Retainer(
            self.topics, self._retained, self._anchor, self._timeout, health or (lambda: None), self._status
        )
        self._retainer.limit(settings.max_packet_size, self._withheld.retained)
        self._boot_seq = journal.last_seq  # events up to here were journaled in earlier runs
        self._had_outage = False
        self._wake = Wake()
        self._reads = JournalThread(f"journal-outbox-{table_id}")  # the outbox's reads and marks, off the loop
        self._feed = EventFeed(journal, self._reads)  # what to send next: offered events, or the outbox's
        self._connected = False
        self._closing = False
        self._close_deadline: float | None = None
        self._cancelled_by_close = False
        self._task: asyncio.Task[None] | None = None
        # A lazy proxy rather than log.bind(), which would freeze the structlog configuration in force now.
        self._log = structlog.get_logger(__name__, broker=self.broker, table_id=table_id)
        self._marks = OutboxMarks(journal, self._reads, self._wake, self._log)  # PUBACKed, not yet marked

    @property
    def connected(self) -> bool:
        return self._connected

    def notify(self) -> None:
        """New events were appended: wake the drain loop, which reads them from the outbox."""
        self._feed.db_due = True
        self._wake.set()

    def offer(self, events: list[JournaledEvent]) -> None:
        """A commit's events, durable (the journal's writer thread calls this through call_soon_threadsafe once the
        commit and the anchor file are synced): published from memory, without reading the outbox back under the
        journal's lock, as long as they follow without a gap on what was sent; otherwise the outbox has them."""
        self._feed.offer(events)
        self._wake.set()

    def publish_progressive(self, meter: ProgressiveMeter) -> None:
        """Publish (retained) this meter's values on progressive/<level>, and again after every reconnect.

        Call it after journaling the events that changed the meter: it goes out once those are published, so
        a supervisor never sees a meter ahead of the events that explain it. Only the latest value per level
        is kept; a value replaced before it went out is never published.
        """
        self._retained.set_meter(meter)
        self._wake.set()

    @property
    def birth(self) -> Birth | None:
        return self._retained.birth

    def health_changed(self) -> None:
        """A task went down or came back, a task's tilt was raised or cleared: publish the status again."""
        self._wake.set()

    def _status(self, state: str, reason: str | None = None) -> str:
        return status_message(state, self._table_id, self._journal.boot_id, reason)

    async def run(self) -> None:
        """Connect, publish, reconnect; returns after `close()`, otherwise runs until cancelled."""
        self._task = asyncio.current_task()
        try:
            await self._connect_loop()
        except asyncio.CancelledError:
            # close() cancels a publisher that has nothing to drain; that is a normal stop, so return
            # normally, unless someone else cancelled us as well.
            task = asyncio.current_task()
            if self._cancelled_by_close and task is not None and task.uncancel() == 0:
                return
            raise  # anything else goes to the task supervisor (controller/shell/tasks.py)
        finally:
            self._reads.close()  # once the marks the last session left are committed (a restart starts another)

    def _client(self) -> aiomqtt.Client | None:
        try:
            kwargs = client_kwargs(self._settings, self._broker_url)
        except Exception as err:
            # A password or TLS file unusable (whatever reading it raised): the table plays on; retried until fixed.
            self._log.error(
                "mqtt settings unusable; events stay in the journal",
                error=str(err) or type(err).__name__,
                last_seq=self._journal.last_seq,
            )
            return None
        client = aiomqtt.Client(
            **kwargs,
            identifier=self._client_id,
            will=aiomqtt.Will(self.topics.status, self._status("lost"), qos=1, retain=True),
            timeout=self._timeout,
            keepalive=self._keepalive,
            # A drained batch is sent at once (see _drain); paho queues what exceeds this, in order.
            max_inflight_messages=100,
        )
        # aiomqtt warns past 10 pending calls; a drained batch is up to 200 by design.
        client.pending_calls_threshold = 1000
        packets.fast_pubacks(client)
        fewer_reads(client)  # the PUBACKs that arrived together in one recv (controller.mqtt.reads)
        return client

    async def _connect_loop(self) -> None:
        backoff = self._backoff_min
        while not self._closing:
            client = self._client()
            if client is None:
                self._had_outage = True
                backoff = self._backoff_max
            else:
                try:
                    async with client:
                        self._connected = True
                        backoff = self._backoff_min
                        self._log.info("mqtt connected", last_seq=self._journal.last_seq)
                        await self._session(client)
                except aiomqtt.MqttError as exc:
                    self._had_outage = True
                    self._log.warning(
                        "mqtt connection lost" if self._connected else "mqtt broker unavailable",
                        error=str(exc) or type(exc).__name__,
                        fix=broker_fix(str(exc)),
                        retry_in=backoff,
                        last_seq=self._journal.last_seq,
                    )
                finally:
                    self._connected = False
            if self._closing:
                return
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self._backoff_max)

    async def _session(self, client: aiomqtt.Client) -> None:
        # Every publish races `lost` (controller.mqtt.connection.guard): an idle publisher notices a lost
        # connection at once, and a publish whose PUBACK will never come fails at once.
        lost = asyncio.ensure_future(until_lost(client))
        try:
            # A replay is what was journaled while the broker was away (an earlier run, a lost connection); the
            # events of this boot's first moments, before a connection that succeeded at once, are live.
            replay_upto = self._journal.last_seq if self._had_outage else self._boot_seq
            self._feed.db_due = True  # a new session starts from the file: what the last one left unacknowledged
            self._retainer.status_sent = None
            await self._retainer.publish_status(client, lost)
            await self._retainer.republish(client, lost)
            while True:
                self._wake.clear()
                if self._closing:
                    await self._final(client, lost, replay_upto)
                    return
                await self._drain(client, lost, replay_upto)
                if self._closing:
                    continue
                await self._retainer.publish_due(client, lost)
                await self._retainer.publish_status(client, lost)
                marks_due = bool(len(self._marks))
                # Journaled but neither offered nor notified yet (an offer on its way from the writer thread): looked
                # for in the outbox if nothing comes meanwhile, so no event waits on a wake-up that never comes.
                behind = self._journal.last_seq > self._feed.sent_upto
                woken = await self._wake.wait(lost, MARK_DELAY if marks_due or behind else None)
                if lost.done():
                    lost.result()
                if not woken:
                    self._marks.soon()  # quiet for MARK_DELAY: commit the marks of what was acknowledged
                    if self._journal.last_seq > self._feed.sent_upto:
                        self._feed.db_due = True
        except asyncio.CancelledError:
            if not self._closing:
                # Cancelled without close(): still leave an honest retained status behind, briefly.
                await self._retainer.last_word(client, self._status("offline", self._stop_reason))
            raise
        except aiomqtt.MqttError:
            raise
        except Exception as err:
            # The journal failed (the table stops) or a bug (restarted): no retained "online" may outlive this session.
            if isinstance(err, StorageError):
                await self._retainer.last_word(client, self._status("offline", f"stopped: {err}"))
            else:
                await self._retainer.last_word(
                    client, self._status("degraded", f"the event publisher failed ({err!r})")
                )
            raise
        finally:
            self._session_ended(lost)

    def _session_ended(self, lost: asyncio.Future[None]) -> None:
        # Acknowledged is acknowledged, whatever ended the session; the next one starts from the file, read after these
        # marks (off the loop, in order: controller.mqtt.marks).
        self._marks.forget()
        self._feed.sent_upto = 0
        lost.cancel()
        if lost.done() and not lost.cancelled():
            lost.exception()  # retrieved here, so asyncio does not warn "exception never retrieved"

    async def _final(self, client: aiomqtt.Client, lost: asyncio.Future[None], replay_upto: int) -> None:
        loop = asyncio.get_running_loop()
        deadline = self._close_deadline if self._close_deadline is not None else loop.time() + 2.0
        try:
            async with asyncio.timeout_at(deadline):
                await self._drain(client, lost, replay_upto, final=True)
                await self._marks.settle()
                await self._retainer.publish_due(client, lost)
        except TimeoutError:
            self._log.warning("mqtt close: outbox not fully drained", sent_upto=self._feed.sent_upto)  # no journal read
        remaining = max(deadline - loop.time(), 0.05)
        await self._retainer.retain(
            client, lost, self.topics.status, self._status("offline", self._stop_reason), remaining
        )
        self._log.info("mqtt closed", last_seq=self._journal.last_seq)

    async def _drain(
        self, client: aiomqtt.Client, lost: asyncio.Future[None], replay_upto: int, final: bool = False
    ) -> None:
        while True:
            self._marks.check()
            if len(self._marks) >= MARK_EVERY:
                self._marks.soon()
            # Acknowledged events whose marks are not yet committed are still unpublished in the file: skip them.
            if self._closing and not final:
                # close() was called: hand over to the deadline-bounded final drain. Checked before taking rows:
                # offered events taken here and not sent would be gone from memory, and the final drain, finding
                # nothing offered and nothing due from the outbox, would close with them unpublished.
                return
            rows = await self._feed.next_rows()
            if not rows:
                return
            batch = [ev for ev in rows if not isinstance(ev, DamagedRow)]
            for damaged in (r for r in rows if isinstance(r, DamagedRow)):
                self._quarantine(damaged)
            if not batch:
                self._feed.sent_upto = rows[-1].seq
                continue
            # The whole batch is in flight at once, written as it is built (controller.mqtt.batch): MQTT keeps one
            # connection's QoS 1 messages in order, so a PUBACK wait per event would only add round trips.
            flags = [ev.seq <= replay_upto for ev in batch]
            withheld: set[int] = set()
            anchors: list[tuple[str, str, JournalAnchor]] = []
            # Built one at a time as its packet is queued; one the broker would refuse is held back (limits.Withheld).
            bodies = limits.within(
                batch, flags, self.topics.event, self._settings.max_packet_size, withheld, self._withheld.event
            )
            then = functools.partial(self._anchor.behind, batch, withheld, anchors, now_iso)
            sent = packets.send(client, self.topics.event, bodies, then)
            try:
                # Bounded like every other PUBACK wait: a broker that stops answering is treated as an outage.
                await packets.settled(sent, lost, self._timeout)
            finally:
                packets.forget(client, sent.mids)
            # Every PUBACK is in. The marks are committed lazily (MARK_EVERY, MARK_DELAY, at close): a crash before
            # that only publishes these again (deduped by event_id). A withheld event stays in the outbox.
            given = [(ev, r) for ev, r in zip(batch, flags, strict=True) if ev.seq not in withheld]
            for ev, replayed in given:
                self._marks.acknowledged(ev.seq, replayed)
            self._feed.sent_upto = rows[-1].seq
            # The retained topics these events change (a device's status), once each event is acknowledged; if
            # what follows is lost with the connection, the reconnect republishes the latest values anyway.
            if given:
                self._anchor.acknowledged(given[-1][0])
            for anchor in anchors:
                self._anchor.sent(anchor[2])
            # A withheld event moves its device's status too: left out, the status would stay at a state the device has
            # left for the rest of the boot (its replay at a later start is another boot's). The status names its seq,
            # as the tilt does; a device status is bounded (controller.mqtt.device_status), so it goes out.
            for ev in batch:
                for msg in self._retained.after_event(ev):
                    await self._retainer.retain(client, lost, msg.topic, msg.body)

    def _quarantine(self, row: DamagedRow) -> None:
        """A row that cannot be published as journaled: kept as found, reported in an event (published in its turn: a
        consumer that saw the gap learns why), passed over (the note and the mark off the loop: docs/journal.md)."""
        self._log.error("journal row quarantined: not publishable as journaled", seq=row.seq, reason=row.reason)
        self._note([quarantined(row, str(self._journal.path))])
        self._marks.acknowledged(row.seq, replayed=False)
        self._marks.soon()

    async def close(self, drain_timeout: float = 2.0, reason: str | None = None) -> None:
        """Drain what is left if connected, publish retained "offline" (saying `reason`, a fault that stopped the
        table, when given), disconnect; bounded by the timeout."""
        self._closing = True
        self._stop_reason = reason
        task = self._task
        if task is None or task.done():
            return
        loop = asyncio.get_running_loop()
        # Leave a tenth of the budget for cancelling the task if the broker stalls.
        self._close_deadline = loop.time() + drain_timeout * 0.9
        self._wake.set()
        if not self._connected:
            # Nothing to drain to; stop reconnecting now rather than waiting for a backoff to end.
            self._cancelled_by_close = True
            task.cancel()
        done, _ = await asyncio.wait((task,), timeout=drain_timeout * 0.9)
        if not done:
            self._log.warning("mqtt close timed out; dropping the connection")
            self._cancelled_by_close = True
            task.cancel()
            await asyncio.wait((task,), timeout=drain_timeout * 0.1)
        if task.done() and not task.cancelled() and task.exception() is not None:
            self._log.warning("mqtt publisher ended with an error while closing", error=repr(task.exception()))
