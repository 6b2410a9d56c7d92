"""The publisher's retained topics on the wire (controller.mqtt.publisher): status, birth, device/<id>,
progressive/<level> and the anchor, each written like a batch of events and its PUBACK awaited, bounded. What is due
and what was sent is kept by the pure bookkeeping of controller.mqtt.retained and controller.mqtt.anchor; this module
only sends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable

import aiomqtt

from controller.mqtt import batch as packets
from controller.mqtt import limits
from controller.mqtt.anchor import AnchorTopic
from controller.mqtt.birth import growth
from controller.mqtt.contract import Birth, Topics
from controller.mqtt.messages import now_iso
from controller.mqtt.retained import Retained, RetainedTopics

# Why the table is degraded now (a task down, a task's tilt), or None: the retained status says so, with the topics
# held back as too large (Retainer._held).
Health = Callable[[], str | None]
# The retained status's body for a state and its reason (controller.mqtt.messages.status_message, this boot's).
Status = Callable[[str, str | None], str]
# Told of a retained message (topic, size, limit, what grew it) held back as too large for the broker's packet limit.
Oversize = Callable[[str, int, int, str | None], object]


class Retainer:
    def __init__(
        self,
        topics: Topics,
        retained: RetainedTopics,
        anchor: AnchorTopic,
        timeout: float,
        health: Health,
        status: Status,
    ) -> None:
        self.topics = topics
        self._retained = retained
        self._anchor = anchor
        self._timeout = timeout  # bounds each PUBACK wait, as for the events
        self._health = health
        self._status = status
        self.status_sent: tuple[str, str | None] | None = None  # what this session last retained on status
        self._limit = limits.MAX_PACKET_SIZE  # the broker's packet limit ([mqtt] max_packet_size): see limit()
        self._oversize: Oversize = lambda topic, size, limit, grown_by: None
        # Topics whose latest value is held back as too large, and what the status says of each: the broker holds an
        # older value, and a subscriber could not tell it is stale but from the status (docs/mqtt.md).
        self._held: dict[str, str] = {}
        # The last value of each topic the broker was given: what a reconnect gives it back for a held-back topic.
        self._given: dict[str, str] = {}

    def limit(self, limit: int, oversize: Oversize) -> None:
        """The broker's packet limit, and who is told of a retained message held back as larger (`retain`)."""
        self._limit, self._oversize = limit, oversize

    def _live_status(self) -> tuple[str, str | None]:
        reasons = [r for r in (self._health(), *(self._held[t] for t in sorted(self._held))) if r]
        return ("online", None) if not reasons else ("degraded", "; ".join(reasons))

    async def publish_status(self, client: aiomqtt.Client, lost: asyncio.Future[None]) -> None:
        """The retained status as the table's health says now (online, or degraded and why), when it changed."""
        now = self._live_status()
        if now != self.status_sent:
            await self.retain(client, lost, self.topics.status, self._status(*now))
            self.status_sent = now

    async def last_word(self, client: aiomqtt.Client, status: str) -> None:
        with contextlib.suppress(aiomqtt.MqttError, TimeoutError):
            async with asyncio.timeout(0.5):
                await client.publish(self.topics.status, status, qos=1, retain=True)

    async def retain(
        self,
        client: aiomqtt.Client,
        lost: asyncio.Future[None],
        topic: str,
        body: str,
        within: float | None = None,
        grown_by: Callable[[], str] | None = None,
    ) -> bool:
        """Whether `body` went out. One over the broker's packet limit would cost the connection, and again at every
        reconnect (each republishes every retained topic): it is held back, `oversize` told (with what grew it,
        `grown_by`, asked only then) and the status says the topic is stale until a value that fits goes out
        (docs/mqtt.md, "Too large for the broker")."""
        ok, size = limits.fits(topic, body, self._limit)
        if not ok:
            self._held[topic] = limits.stale_reason(self.topics.relative(topic) or topic, size, self._limit)
            self._oversize(topic, size, self._limit, grown_by() if grown_by is not None else None)
            return False
        await self._send(client, lost, topic, body, within)
        self._held.pop(topic, None)
        self._given[topic] = body
        return True

    async def _send(
        self, client: aiomqtt.Client, lost: asyncio.Future[None], topic: str, body: str, within: float | None
    ) -> None:
        # Written at once like a batch of events (controller.mqtt.batch), without aiomqtt's tasks per publish; `within`
        # bounds the PUBACK wait, so the final "offline" respects close()'s deadline.
        sent = packets.retain(client, topic, body)
        try:
            await packets.settled(sent, lost, self._timeout if within is None else within)
        finally:
            packets.forget(client, sent.mids)

    async def _retain(self, client: aiomqtt.Client, lost: asyncio.Future[None], msg: Retained) -> bool:
        grown_by = functools.partial(growth, msg.value) if isinstance(msg.value, Birth) else None
        return await self.retain(client, lost, msg.topic, msg.body, grown_by=grown_by)

    async def republish(self, client: aiomqtt.Client, lost: asyncio.Future[None]) -> None:
        """Every retained topic with its latest value, after each (re)connect (controller.mqtt.retained). A topic
        whose latest value is held back gets the last one it was given again: a broker restarted without its store
        then holds the same stale value as before (the status says it is stale), not none."""
        for msg in self._retained.on_connect():
            if not await self._retain(client, lost, msg) and msg.topic in self._given:
                await self._send(client, lost, msg.topic, self._given[msg.topic], None)
            self._retained.sent(msg)
        for topic, body in self._anchor.on_connect():
            await self.retain(client, lost, topic, body)

    async def publish_due(self, client: aiomqtt.Client, lost: asyncio.Future[None]) -> None:
        """The retained topics waiting for the outbox to be drained: the anchor, a changed birth, meters."""
        for topic, body in self._anchor.due(now_iso()):
            await self.retain(client, lost, topic, body)
        for msg in self._retained.due():
            await self._retain(client, lost, msg)
            # Only now: a newer value set while this one was in flight stays due.
            self._retained.sent(msg)
