"""The floor service's broker side (floor/service.py): the listener's persistent MQTT v5 session, what it queues for
the writer (floor/writing.py), and the acknowledgements the writer gives once a batch committed.

paho's manual acknowledgement is on (floor/listener_client.py): a message is acknowledged only after the transaction
that archived it committed, and only on the connection that received it (`generation`): a message of an earlier
connection is redelivered by the broker on the new one, so acknowledging its old mid would acknowledge another.
"""

from __future__ import annotations

import asyncio

import aiomqtt
import structlog

from floor.config import FloorConfig
from floor.console.server import ConsoleServer
from floor.listener_client import Connack, broker_lost, listener_client
from floor.messages import Queued, Rejected, parse, subscriptions, topic_owner
from floor.refusal_log import RefusalLog
from floor.sdnotify import Notifier
from floor.session_watch import SessionWatch

log = structlog.get_logger("tablectl.floor")
BACKOFF_MAX = 10.0


class Intake:
    def __init__(
        self,
        config: FloorConfig,
        notifier: Notifier,
        console: ConsoleServer | None,
        refusal_log: RefusalLog,
        session: SessionWatch,
    ) -> None:
        self.config = config
        self.notifier = notifier
        self.console = console
        self.refusal_log = refusal_log
        self.session = session
        self.queue: asyncio.Queue[Queued] = asyncio.Queue()
        self.client: aiomqtt.Client | None = None
        self.generation = 0
        self.mqtt_up = False

    async def listen(self) -> None:
        """For ever: connected, subscribed, and every message queued; a lost broker retried with backoff (said)."""
        delay = 0.5
        while True:
            try:
                client = listener_client(self.config, connack := Connack())
                async with client:
                    self.generation += 1
                    self.client, delay = client, 0.5
                    await self._subscribe(client, self.session.connected(connack.session_present))
                    await self._take(client)
            except aiomqtt.MqttError as err:
                self.mqtt_up = False
                why = broker_lost(err, self.config.mqtt.client_id)
                log.error("broker connection lost; reconnecting", error=why, retry_in_s=delay)
                self.notifier.send(STATUS=f"broker unreachable: {why}")
                if self.console is not None:
                    self.console.broker(why)
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)

    async def _subscribe(self, client: aiomqtt.Client, lost: bool) -> None:
        prefix = self.config.mqtt.prefix
        await client.subscribe([(topic, 1) for topic in subscriptions(prefix)])
        # Subscribed: a fresh session gets nothing published before its SUBACK; the broker holds ours now.
        self.mqtt_up = self.session.had = True
        if self.console is not None:  # every page says the floor hears the tables again
            self.console.broker(None)
            if lost:
                self.console.session_lost()
        log.info("subscribed to the tables", broker=self.config.mqtt.broker, prefix=prefix)

    async def _take(self, client: aiomqtt.Client) -> None:
        prefix, tables = self.config.mqtt.prefix, frozenset(self.config.ingest.tables)
        async for message in client.messages:
            parsed = parse(prefix, str(message.topic), bytes(message.payload), tables)
            if parsed is None:
                self.ack(self.generation, message.mid, message.qos)
                continue
            if isinstance(parsed, Rejected):  # a line each, or its topic's summary once a minute
                owner = topic_owner(prefix, parsed.topic)
                self.refusal_log.refused("message refused", parsed.topic, parsed.size, parsed.reason, table_id=owner)
            self.queue.put_nowait(Queued(parsed, str(message.topic), self.generation, message.mid, message.qos))

    def ack(self, generation: int, mid: int, qos: int) -> None:
        if qos > 0 and self.client is not None and generation == self.generation and self.mqtt_up:
            self.client._client.ack(mid, qos)
