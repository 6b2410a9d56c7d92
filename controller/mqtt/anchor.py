"""The anchor the broker retains for a table (<prefix>/<table_id>/anchor, docs/mqtt.md): published after each batch
of events the broker acknowledged, read back at start with a bounded wait (docs/journal.md, "The anchor").

The anchor file beside the journal (controller.store.anchor) finds a journal that went back in time; this one finds
it too when that file went with it (the state directory restored from a backup, a new disk), and it says what the
floor has: a seq at or below it is one the floor may hold, so the table never publishes another event under it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiomqtt
import structlog
from pydantic import ValidationError

from controller.config.table import MqttSettings
from controller.core.events import JournaledEvent
from controller.mqtt.connection import client_kwargs, quiet_late_acks
from controller.mqtt.contract import JournalAnchor, Topics
from controller.mqtt.session import SessionClient, kept, session
from controller.store.anchor import Claim
from controller.store.journal import Journal

log = structlog.get_logger(__name__)

# How long the start waits for the broker's retained anchor: a broker that is away must not keep the table from
# opening (the anchor file beside the journal is checked all the same).
READ_WITHIN = 3.0


def _source(topic: str) -> str:
    return f"the broker's retained anchor ({topic})"


class AnchorTopic:
    """What the publisher retains on `anchor`: the last acknowledged seq and its chain hash, written behind each batch
    of events in the same write (`with_batch`), or once the outbox is drained (`due`), and again after a reconnect."""

    def __init__(self, journal: Journal, topics: Topics) -> None:
        self._journal = journal
        self._topics = topics
        self._acked: JournaledEvent | None = None
        self._last: JournalAnchor | None = None

    def acknowledged(self, last: JournaledEvent) -> None:
        """Every event up to `last` was acknowledged by the broker."""
        if self._acked is None or last.seq > self._acked.seq:
            self._acked = last

    def due(self, ts: str) -> list[tuple[str, str]]:
        """(topic, body) to retain now: the last acknowledged seq, unless it was anchored already in this boot (the
        anchor never goes below the one before it: events published again after a reconnect are not new)."""
        acked = self._acked
        if acked is None or (self._last is not None and acked.seq <= self._last.seq):
            return []
        anchor = self._naming(acked.seq, ts)
        if anchor is None:  # not a row of this journal (cannot happen for an event it returned): publish nothing
            return []
        self._last = anchor
        return [(self._topics.anchor, anchor.model_dump_json())]

    def with_batch(self, last: JournaledEvent, ts: str) -> tuple[str, str, JournalAnchor] | None:
        """The anchor to write right behind a batch of events ending at `last`, in the same write (topic, body, and
        the model to pass to `sent` once its PUBACK is in), or None when it would not be higher than the last one.
        The broker handles one connection's packets in order (MQTT 5.0 section 4.6), so once it has the anchor it
        has had every event before it: the anchor still never names a seq the broker was not given."""
        if self._last is not None and last.seq <= self._last.seq:
            return None
        anchor = self._naming(last.seq, ts)
        return None if anchor is None else (self._topics.anchor, anchor.model_dump_json(), anchor)

    def behind(
        self,
        batch: list[JournaledEvent],
        withheld: set[int],
        anchors: list[tuple[str, str, JournalAnchor]],
        now: Callable[[], str],
    ) -> tuple[str, str] | None:
        """`with_batch` for a batch written as it is built, called once every body was taken: it names the last event
        the broker was given (not one of `withheld`), and goes in `anchors` for `sent` once acknowledged."""
        given = [ev for ev in batch if ev.seq not in withheld]
        anchor = self.with_batch(given[-1], now()) if given else None
        if anchor is None:
            return None
        anchors.append(anchor)
        return anchor[:2]

    def _naming(self, seq: int, ts: str) -> JournalAnchor | None:
        """The anchor naming `seq` with the journal's chain hash there; None when `seq` is not a row of it."""
        hash_ = self._journal.hash_at(seq)
        if hash_ is None:
            return None
        manifest = self._journal.critical.manifest
        return JournalAnchor(
            table_id=self._topics.table_id,
            boot_id=self._journal.boot_id,
            seq=seq,
            hash=hash_,
            round_no=0 if manifest is None else manifest.round_no,
            ts=ts,
        )

    def sent(self, anchor: JournalAnchor) -> None:
        """The broker acknowledged an anchor written by `with_batch` (and so the events before it)."""
        if self._last is None or anchor.seq > self._last.seq:
            self._last = anchor

    def on_connect(self) -> list[tuple[str, str]]:
        """After a reconnect, the last anchor again (a broker restarted without persistence lost it)."""
        return [] if self._last is None else [(self._topics.anchor, self._last.model_dump_json())]


async def read_retained_anchor(
    settings: MqttSettings, table_id: str, broker: str | None = None, within: float = READ_WITHIN
) -> Claim | None:
    """The anchor the broker retains for this table, or None when there is none or it could not be read within
    `within` seconds (the log says which)."""
    topic = Topics(settings.prefix, table_id).anchor
    quiet_late_acks()  # a SUBACK just after the wait gave up is no error: the warning below says what happened
    try:
        kwargs = client_kwargs(settings, broker)
    except Exception as err:  # whatever reading a secret raises (a /dev/zero password file: MemoryError), as the
        # publisher and the listener survive it: the start goes on, checked against the anchor file alone
        log.warning("retained journal anchor not read: mqtt settings unusable", error=str(err) or type(err).__name__)
        return None
    try:
        async with asyncio.timeout(within):
            body = await _fetch(kwargs, topic, table_id, within)
    except (aiomqtt.MqttError, TimeoutError, OSError) as err:
        log.warning(
            "retained journal anchor not read: the journal is checked against its anchor file alone",
            topic=topic,
            error=str(err) or type(err).__name__,
        )
        return None
    if body is None:
        log.info("no retained journal anchor on the broker: a table that never published", topic=topic)
        return None
    try:
        anchor = JournalAnchor.model_validate_json(body)
    except ValidationError as err:
        log.warning("retained journal anchor unusable: ignored", topic=topic, error=str(err).splitlines()[0])
        return None
    if anchor.table_id != table_id:
        log.warning("retained journal anchor is another table's: ignored", topic=topic, table_id=anchor.table_id)
        return None
    log.info("retained journal anchor read", topic=topic, seq=anchor.seq, round_no=anchor.round_no)
    return Claim(_source(topic), table_id, anchor.seq, anchor.hash, None, anchor.round_no)


async def _fetch(kwargs: dict[str, Any], topic: str, table_id: str, within: float) -> bytes | None:
    # A session: a Ctrl-C in the connect (the start's signals cancel this read) leaves no socket or task behind.
    client = SessionClient(**kwargs, identifier=f"tablectl-{table_id}-anchor", timeout=within)
    async with session(client):
        await kept(client.subscribe(topic, qos=1))
        # The broker answers one client's packets in order, so the second SUBACK comes after the retained message
        # the first subscription was sent, if there is one: its absence is known without waiting for it.
        await kept(client.subscribe(topic, qos=1))
        body: bytes | None = None
        for _ in range(len(client.messages)):
            message = await anext(client.messages)
            if message.retain and isinstance(message.payload, bytes | bytearray):
                body = bytes(message.payload)
        return body
