"""`tablectl link`: the linked progressive controller as a service (docs/linked-progressives.md).

One MQTT v5 connection answers the tables' requests (heartbeat, contribute, claim) on their response topics with
their correlation data, and takes signed supervisor commands. Every database call runs on one worker thread, one
at a time (link.store), and a table is answered only after the commit returned, which with a synchronous standby
means both servers have it. Contributions that arrive together are committed together (one transaction, one
synchronous commit for the lot). A lost database is reconnected with backoff through the multi-host DSN, which
follows the writable primary after a promotion; meanwhile no lease is granted and nothing is acknowledged, so
the tables lock progressive wagers out and keep resending.

A task that dies stops the service with its error (systemd restarts it, and nothing is lost: what was not
acknowledged is resent by the tables); none dies silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import aiomqtt
import structlog

from controller.release.installed import SoftwareCheck, check_installed
from floor.sdnotify import Notifier
from link.broker import Broker
from link.commands import CommandDesk
from link.config import LinkConfig, secret
from link.database import DatabaseDown, LinkDatabase
from link.protocol import base
from link.report import reconcile
from link.signs import Signs
from link.tables import TableDesk

log = structlog.get_logger("tablectl.link")
BACKOFF_MAX = 5.0


class LinkService:
    """The link's tasks over its seams: the database thread (link.database), the connection (link.broker), the
    tables' requests (link.tables), the signed commands (link.commands) and the signs (link.signs)."""

    def __init__(self, config: LinkConfig, notifier: Notifier | None = None) -> None:
        self.config = config
        self.notifier = notifier or Notifier(None)
        self.db = LinkDatabase(config, self.notifier)
        self.broker = Broker(base(config.mqtt.prefix, config.link.id))
        self.stopping = asyncio.Event()
        self.failure: BaseException | None = None
        sw = config.software
        # The installed code against its signed release manifest, once per process (5321.18's self-check at
        # power-up authenticating the controller's software; 605a.4(c)).
        self.software: SoftwareCheck = check_installed(sw.manifest, sw.release_keys, sw.required)
        self.tables = TableDesk(config, self.db, self.broker)
        self.desk = CommandDesk(config, self.db, self.broker, self.software)
        self.signs = Signs(config, self.db, self.broker, self.tables)

    async def _start(self) -> None:
        db = self.db
        delay = 0.5
        while True:
            try:
                await db.call(lambda s: None)
                break
            except DatabaseDown:
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)
        # The self-check at power-up (5321.18): the link operates only if its books balance.
        rec = await db.call(lambda s: reconcile(s.conn))
        if not rec.balanced:
            log.error("self-check failed: the link's books do not balance; tilted", problems=rec.problems)
            problem = "; ".join(rec.problems)[:500]
            await db.call(lambda s: s.set_status("tilted", "self-check", "startup", problem), write=True)
        judgement = self.software.judgement
        log.info(
            "software checked",
            verdict=judgement.verdict,
            digest=judgement.digest,
            require_verified=self.software.require_verified,
        )
        if self.software.refused:
            # Inoperable until a release that verifies is installed: no lease, so every linked table locks its
            # progressive wagers out; clear_tilt and open_link are refused while this code runs.
            problem = f"software: {judgement.problem or judgement.verdict}"[:500]
            log.error("self-check failed: the installed link code does not verify; tilted", problem=problem)
            await db.call(lambda s: s.set_status("tilted", "self-check", "startup", problem), write=True)
        await db.call(lambda s: db.refresh())

    # -- running ------------------------------------------------------------------------------------------

    async def run(self) -> None:
        secret(self.config.mqtt.password_file, "mqtt.password_file")
        await self._start()
        state = self.db.state
        assert state is not None
        log.info("link ready", link_id=self.config.link.id, status=state.status, seq=state.seq)
        tasks = [
            asyncio.create_task(self._listen(), name="link-listener"),
            asyncio.create_task(self.tables.commit_loop(), name="link-contributions"),
            asyncio.create_task(self.signs.loop(), name="link-publisher"),
            asyncio.create_task(self._probe(), name="link-probe"),
        ]
        for task in tasks:
            task.add_done_callback(self._died)
        self.notifier.send(READY=1, STATUS=f"link {state.status}")
        try:
            await self.stopping.wait()
        finally:
            self.notifier.send(STOPPING=1, STATUS="stopping")
            for task in tasks:
                task.remove_done_callback(self._died)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            self.db.close()
        if self.failure is not None:
            raise self.failure

    def stop(self) -> None:
        self.stopping.set()

    def _died(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        self.failure = task.exception()
        log.error("a link task died; stopping", task=task.get_name(), error=repr(self.failure))
        self.stopping.set()

    def _client(self) -> aiomqtt.Client:
        m = self.config.mqtt
        address = m.address
        return aiomqtt.Client(
            address.host,
            address.port,
            identifier=m.client_id or f"tablectl-link-{self.config.link.id}",
            protocol=aiomqtt.ProtocolVersion.V5,
            username=m.username,
            password=secret(m.password_file, "mqtt.password_file"),
            tls_params=aiomqtt.TLSParameters(ca_certs=str(m.ca_file) if m.ca_file else None) if address.tls else None,
            keepalive=15,
            will=aiomqtt.Will(f"{self.broker.base}/state", b'{"status": "offline"}', qos=1, retain=True),
        )

    async def _listen(self) -> None:
        delay = 0.5
        topics = self.broker.base
        while True:
            try:
                async with self._client() as client:
                    self.broker.client, delay = client, 0.5
                    self.signs.connected()
                    await client.subscribe([(f"{topics}/request/+", 1), (f"{topics}/cmd/+", 1)])
                    self.broker.wake.set()
                    log.info("listening for the tables", broker=self.config.mqtt.broker, topic=topics)
                    async for message in client.messages:
                        await self._dispatch(message)
            except aiomqtt.MqttError as err:
                self.broker.client = None
                log.error("broker connection lost; reconnecting", error=str(err), retry_in_s=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)

    async def _dispatch(self, message: aiomqtt.Message) -> None:
        topic = str(message.topic)
        payload = bytes(message.payload) if isinstance(message.payload, bytes | bytearray) else b""
        last = topic.rsplit("/", 1)[-1]
        if topic.startswith(f"{self.broker.base}/cmd/"):
            if last != "reply":
                asyncio.create_task(self.desk.handle(last, payload)).add_done_callback(self._died)
            return
        props = message.properties
        reply_to = getattr(props, "ResponseTopic", None) if props else None
        correlation = getattr(props, "CorrelationData", b"") if props else b""
        if not isinstance(reply_to, str):
            log.warning("a request without a response topic ignored", topic=topic)
            return
        task = await self.tables.take(last, payload, reply_to, bytes(correlation))
        if task is not None:
            task.add_done_callback(self._died)

    async def _probe(self) -> None:
        """The database answers (for the leases) and systemd's watchdog hears from us while it does."""
        interval = self.config.link.lease_ms / 4000
        watchdog = self.notifier.watchdog_interval
        last_ping = 0.0
        while True:
            with contextlib.suppress(DatabaseDown):
                await self.db.call(lambda s: s.conn.execute("SELECT 1").fetchone())
            now = time.monotonic()
            if watchdog is not None and self.db.healthy() and now - last_ping >= watchdog:
                seq = self.db.state.seq if self.db.state else 0
                self.notifier.send(WATCHDOG=1, STATUS=f"link {self.db.status()}: seq {seq}")
                last_ping = now
            self.broker.wake.set()
            await asyncio.sleep(interval)
