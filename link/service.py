"""`tablectl link`: the linked progressive controller as a service (docs/linked-progressives.md).

One MQTT v5 connection answers the tables' requests (heartbeat, contribute, claim) on their response topics with
their correlation data, and takes signed supervisor commands. Every database call runs on one worker thread, one
at a time (link.store), and a table is answered only after the commit returned, which with a synchronous standby
means both servers have it. Contributions that arrive together are committed together (one transaction, one
synchronous commit for the lot). A lost database is reconnected with backoff through the multi-host DSN, which
follows the writable primary after a promotion; meanwhile no lease is granted and nothing is acknowledged, so
the tables lock progressive wagers out and keep resending.

A task that ends (raises, is cancelled, returns) stops the service with its error (systemd restarts it, and nothing
is lost: what was not acknowledged is resent by the tables); none dies silently (floor/tasks.py). A database call
that does not return (a stalled server) is logged by the probe, and the watchdog is not pinged meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import aiomqtt
import structlog

from controller.release.installed import SoftwareCheck, check_installed
from floor.db import where
from floor.sdnotify import Notifier
from floor.tasks import ServiceTasks, stopped_within
from link.broker import Broker
from link.commands import CommandDesk
from link.config import LinkConfig, secret
from link.database import DatabaseDown, LinkDatabase
from link.protocol import base
from link.refusals import Refusals
from link.report import reconcile
from link.signs import Signs
from link.tables import TableDesk

log = structlog.get_logger("tablectl.link")
BACKOFF_MAX = 5.0
# One database call running longer than this is stuck (a server that stopped answering without closing the
# connection): said at error level; the link grants no lease and systemd's watchdog is no longer pinged meanwhile.
DB_STUCK_S = 10.0


class LinkService:
    """The link's tasks over its seams: the database thread (link.database), the connection (link.broker), the
    tables' requests (link.tables), the signed commands (link.commands) and the signs (link.signs)."""

    def __init__(self, config: LinkConfig, notifier: Notifier | None = None) -> None:
        self.config = config
        self.notifier = notifier or Notifier(None)
        self.stopping = asyncio.Event()
        self.db = LinkDatabase(config, self.notifier, self.stopping)
        self.broker = Broker(base(config.mqtt.prefix, config.link.id))
        self.failure: BaseException | None = None
        self.tasks = ServiceTasks("link", self._died)
        self._said_stuck = False
        sw = config.software
        # The installed code against its signed release manifest, once per process (5321.18's self-check at
        # power-up authenticating the controller's software; 605a.4(c)).
        self.software: SoftwareCheck = check_installed(sw.manifest, sw.release_keys, sw.required)
        self.tables = TableDesk(config, self.db, self.broker)
        self.desk = CommandDesk(config, self.db, self.broker, self.software)
        # One count of what the link refused, by kind, for the status line and the link's state (link/refusals.py).
        self.refusals = self.tables.refusals = self.desk.refusals = Refusals()
        self.refusal_log = self.desk.refusal_log = self.tables.refusal_log  # its lines bounded, shared
        self.signs = Signs(config, self.db, self.broker, self.tables)

    async def _start(self) -> bool:
        """The database reached and the power-up self-checks done; False when stopped before the database answered
        (the retry's backoff waits on the stop: a stop then ends the link at once, not once the database is up)."""
        db = self.db
        delay = 0.5
        while True:
            try:
                await db.call(lambda s: None)
                break
            except DatabaseDown:
                if await stopped_within(self.stopping, delay):
                    log.info("link stopped before its database was reachable")
                    return False
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
        return True

    # -- running ------------------------------------------------------------------------------------------

    async def run(self) -> None:
        secret(self.config.mqtt.password_file, "mqtt.password_file")
        if not await self._start():
            self.db.close()
            return
        state = self.db.state
        if state is None:  # _start read it
            raise DatabaseDown("the link's state was not read at the start")
        log.info(
            "link ready",
            link_id=self.config.link.id,
            status=state.status,
            seq=state.seq,
            database=where(self.config.database),
        )
        self.tasks.start("link-listener", self._listen())
        self.tasks.start("link-contributions", self.tables.commit_loop())
        self.tasks.start("link-publisher", self.signs.loop())
        self.tasks.start("link-probe", self._probe())
        self.tasks.start("link-refusal-log", self.refusal_log.run())
        self.notifier.send(READY=1, STATUS=f"link {state.status}")
        try:
            await self.stopping.wait()
        finally:
            # Said as the floor's service says it: without it journald showed the last command, then nothing.
            log.info("link stopping", failed=self.failure is not None)
            self.notifier.send(STOPPING=1, STATUS="stopping")
            await self.tasks.close()
            self.refusal_log.say_due(everything=True)  # a flood's last counts said, not lost with the process
            self.db.close()
            log.info("link stopped", link_id=self.config.link.id)
        if self.failure is not None:
            raise self.failure

    def stop(self) -> None:
        self.stopping.set()

    def _died(self, err: BaseException) -> None:
        """A task ended (floor/tasks.py logged it): the service stops with its error, so `tablectl` exits 1."""
        if self.failure is None:
            self.failure = err
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
                self.tasks.start(f"link-command:{last}", self.desk.handle(last, payload), may_return=True)
            return
        props = message.properties
        reply_to = getattr(props, "ResponseTopic", None) if props else None
        correlation = getattr(props, "CorrelationData", b"") if props else b""
        if not isinstance(reply_to, str):
            # Unanswerable, so counted as every refusal is (the status line, the retained state): a table that never
            # hears back is then seen from the floor, not only in the link's log.
            self.refusals.note("no_response_topic", topic=topic, reason="no ResponseTopic: nowhere to answer")
            self.refusal_log.refused(
                "a request without a response topic ignored", topic, len(payload), "no ResponseTopic"
            )
            return
        hit = await self.tables.take(last, payload, reply_to, bytes(correlation))
        if hit is not None:  # a claim or a paid report: answered after its own commit, the next request meanwhile
            self.tasks.start(f"link-hit:{last}", hit, may_return=True)

    async def _probe(self) -> None:
        """The database answers (for the leases) and systemd's watchdog hears from us while it does."""
        interval = self.config.link.lease_ms / 4000
        watchdog = self.notifier.watchdog_interval
        last_ping = 0.0
        said_refused = 0
        while True:
            # Bounded: a call that does not return holds the one database thread, and the probe must go on to say so.
            with contextlib.suppress(DatabaseDown, TimeoutError):
                async with asyncio.timeout(DB_STUCK_S / 2):
                    await self.db.call(lambda s: s.conn.execute("SELECT 1").fetchone())
            self._check_stuck()
            now = time.monotonic()
            if watchdog is not None and self.db.healthy() and now - last_ping >= watchdog:
                self.notifier.send(WATCHDOG=1, STATUS=self.status_line())
                last_ping = now
                said_refused = self.refusals.total
            elif self.refusals.total != said_refused and self.db.healthy():
                self.notifier.send(STATUS=self.status_line())  # a refusal is said at once, with or without a watchdog
                said_refused = self.refusals.total
            self.broker.wake.set()
            await asyncio.sleep(interval)

    def status_line(self) -> str:
        """systemd's status line (`systemctl status tablectl-link`): the link's status and seq, and what it refused
        since it started, by kind (docs/linked-progressives.md, "Refusals")."""
        seq = self.db.state.seq if self.db.state else 0
        refused = self.refusals.text()
        return f"link {self.db.status()}: seq {seq}" + (f"; {refused}: journalctl -u tablectl-link" if refused else "")

    def _check_stuck(self) -> None:
        """Say once, at error level, that a database call has not returned (the leases and the pings stop)."""
        stuck = self.db.running_for()
        if stuck > DB_STUCK_S and not self._said_stuck:
            self._said_stuck = True
            log.error(
                "a link task is stuck; the watchdog is no longer pinged",
                task="link-db",
                stuck_s=round(stuck, 1),
                limit_s=DB_STUCK_S,
                then="no lease is granted; systemd restarts the service after WatchdogSec, which loses nothing",
            )
            self.notifier.send(STATUS=f"UNHEALTHY (a database call stuck for {stuck:.0f} s)")
        elif stuck <= DB_STUCK_S:
            self._said_stuck = False
