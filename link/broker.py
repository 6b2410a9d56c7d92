"""The link's one MQTT v5 connection as its desks see it (docs/linked-progressives.md, "Protocol"): the client of
the current connection (None while the broker is away: the tables resend, so nothing is lost), the link's topic
prefix, and the wake-up that has the signs published again after a change.
"""

from __future__ import annotations

import asyncio
import contextlib

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from link.protocol import LinkResponse


class Broker:
    def __init__(self, base: str) -> None:
        self.base = base
        self.client: aiomqtt.Client | None = None
        self.wake = asyncio.Event()

    async def answer(self, topic: str, correlation: bytes, response: LinkResponse) -> None:
        """A table's answer on its response topic with its correlation data (MQTT v5), QoS 1."""
        client = self.client
        if client is None:
            return  # the table resends: the same key changes nothing
        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        props.CorrelationData = correlation
        with contextlib.suppress(aiomqtt.MqttError):
            await client.publish(topic, response.model_dump_json(exclude_none=True), qos=1, properties=props)
