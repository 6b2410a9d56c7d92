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
import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

import aiomqtt
import psycopg
import structlog
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from psycopg.conninfo import make_conninfo
from pydantic import ValidationError

from controller.progressive.parameters import ParameterError
from controller.release.installed import SoftwareCheck, check_installed
from floor.sdnotify import Notifier
from link.commands import CommandDesk
from link.config import LinkConfig, secret
from link.protocol import (
    HitOut,
    LinkMeter,
    LinkRequest,
    LinkResponse,
    LinkState,
    PendingJackpots,
    TableLease,
    base,
)
from link.report import reconcile
from link.schema import migrate
from link.store import Contribution, Hit, LinkRefused, LinkStore, State

log = structlog.get_logger("tablectl.link")
T = TypeVar("T")
BACKOFF_MAX = 5.0
BATCH_MAX = 2000  # contributions per transaction


class DatabaseDown(Exception):
    pass


@dataclass
class _Pending:
    table_id: str
    request: LinkRequest
    reply_to: str
    correlation: bytes


def conninfo(config: LinkConfig) -> str:
    password = secret(config.database.password_file, "database.password_file")
    extra = {"password": password} if password is not None else {}
    return make_conninfo(config.database.dsn, application_name="tablectl-link", options="-c TimeZone=UTC", **extra)


class LinkService:
    def __init__(self, config: LinkConfig, notifier: Notifier | None = None) -> None:
        self.config = config
        self.notifier = notifier or Notifier(None)
        self.base = base(config.mqtt.prefix, config.link.id)
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="link-db")
        self.store: LinkStore | None = None
        self.state: State | None = None
        self.display: dict[str, int] = {}
        self.db_ok_at = 0.0
        self.write_started: float | None = None
        self.leases: dict[str, float] = {}
        self.last_seen: dict[str, str] = {}
        self.queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self.client: aiomqtt.Client | None = None
        self.wake = asyncio.Event()
        self.stopping = asyncio.Event()
        self.failure: BaseException | None = None
        self.desk = CommandDesk(self)
        self.published_meters: dict[str, int] = {}
        self.published_state: str = ""
        self.published_jackpots: str = ""
        sw = config.software
        # The installed code against its signed release manifest, once per process (5321.18's self-check at
        # power-up authenticating the controller's software; 605a.4(c)).
        self.software: SoftwareCheck = check_installed(sw.manifest, sw.release_keys, sw.required)

    # -- the database, on its one thread ------------------------------------------------------------------

    def _connect(self) -> None:
        if self.store is not None:
            with contextlib.suppress(psycopg.Error):
                self.store.conn.close()
        self.store = None
        conn = psycopg.connect(conninfo(self.config), autocommit=True)
        migrate(conn)
        store = LinkStore(conn)
        if store.initialise(self.config):
            log.info("a new link: meters seeded from the config", link_id=self.config.link.id)
        self.store = store
        self._refresh()

    def _refresh(self) -> None:
        assert self.store is not None
        self.state = self.store.state()
        self.display = self.store.display()

    async def db(self, fn: Callable[[LinkStore], T], *, write: bool = False) -> T:
        """Run fn(store) on the database thread; DatabaseDown (and a reconnect under way) if the server is lost."""
        loop = asyncio.get_running_loop()

        def call() -> T:
            if self.store is None:
                self._connect()
            assert self.store is not None
            out = fn(self.store)
            self.db_ok_at = time.monotonic()
            return out

        if write:
            self.write_started = time.monotonic()
        try:
            return await loop.run_in_executor(self.executor, call)
        except psycopg.OperationalError as err:
            self.db_ok_at = 0.0
            if self.store is not None:
                with contextlib.suppress(psycopg.Error):
                    self.store.conn.close()
            self.store = None
            log.error("PostgreSQL lost; reconnecting", error=str(err).strip()[:300])
            self.notifier.send(STATUS=f"PostgreSQL unreachable: {str(err).strip()[:200]}")
            raise DatabaseDown(str(err)) from None
        finally:
            if write:
                self.write_started = None

    def db_healthy(self) -> bool:
        now = time.monotonic()
        half = self.config.link.lease_ms / 2000
        if self.write_started is not None and now - self.write_started > half:
            return False  # a commit waiting (a standby gone): the link is not operating
        return now - self.db_ok_at < half

    async def _start(self) -> None:
        delay = 0.5
        while True:
            try:
                await self.db(lambda s: None)
                break
            except DatabaseDown:
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)
        # The self-check at power-up (5321.18): the link operates only if its books balance.
        rec = await self.db(lambda s: reconcile(s.conn))
        if not rec.balanced:
            log.error("self-check failed: the link's books do not balance; tilted", problems=rec.problems)
            problem = "; ".join(rec.problems)[:500]
            await self.db(lambda s: s.set_status("tilted", "self-check", "startup", problem), write=True)
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
            await self.db(lambda s: s.set_status("tilted", "self-check", "startup", problem), write=True)
        await self.db(lambda s: self._refresh())

    # -- running ------------------------------------------------------------------------------------------

    async def run(self) -> None:
        secret(self.config.mqtt.password_file, "mqtt.password_file")
        await self._start()
        assert self.state is not None
        log.info("link ready", link_id=self.config.link.id, status=self.state.status, seq=self.state.seq)
        tasks = [
            asyncio.create_task(self._listen(), name="link-listener"),
            asyncio.create_task(self._commit_loop(), name="link-contributions"),
            asyncio.create_task(self._publish_loop(), name="link-publisher"),
            asyncio.create_task(self._probe(), name="link-probe"),
        ]
        for task in tasks:
            task.add_done_callback(self._died)
        self.notifier.send(READY=1, STATUS=f"link {self.state.status}")
        try:
            await self.stopping.wait()
        finally:
            self.notifier.send(STOPPING=1, STATUS="stopping")
            for task in tasks:
                task.remove_done_callback(self._died)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            self.executor.shutdown(wait=True)
            if self.store is not None:
                self.store.conn.close()
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
            will=aiomqtt.Will(f"{self.base}/state", b'{"status": "offline"}', qos=1, retain=True),
        )

    async def _listen(self) -> None:
        delay = 0.5
        while True:
            try:
                async with self._client() as client:
                    self.client, delay, self.published_state, self.published_jackpots = client, 0.5, "", ""
                    self.published_meters.clear()
                    await client.subscribe([(f"{self.base}/request/+", 1), (f"{self.base}/cmd/+", 1)])
                    self.wake.set()
                    log.info("listening for the tables", broker=self.config.mqtt.broker, topic=self.base)
                    async for message in client.messages:
                        await self._dispatch(message)
            except aiomqtt.MqttError as err:
                self.client = None
                log.error("broker connection lost; reconnecting", error=str(err), retry_in_s=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)

    async def _dispatch(self, message: aiomqtt.Message) -> None:
        topic = str(message.topic)
        payload = bytes(message.payload) if isinstance(message.payload, bytes | bytearray) else b""
        last = topic.rsplit("/", 1)[-1]
        if topic.startswith(f"{self.base}/cmd/"):
            if last != "reply":
                asyncio.create_task(self.desk.handle(last, payload)).add_done_callback(self._died)
            return
        props = message.properties
        reply_to = getattr(props, "ResponseTopic", None) if props else None
        correlation = getattr(props, "CorrelationData", b"") if props else b""
        if not isinstance(reply_to, str):
            log.warning("a request without a response topic ignored", topic=topic)
            return
        pending: _Pending | None = None
        try:
            request = LinkRequest.model_validate_json(payload)
            pending = _Pending(last, request, reply_to, bytes(correlation))
            if self.config.table(last) is None:
                raise LinkRefused(
                    f"table {last!r} is not on link {self.config.link.id}: add it to [[tables]] in the link config"
                )
        except (ValidationError, LinkRefused) as err:
            reason = str(err).splitlines()[0] if isinstance(err, LinkRefused) else _first(err)
            log.warning("a table's request refused", table_id=last, reason=reason)
            await self._answer(
                reply_to, bytes(correlation), LinkResponse(ok=False, kind="?", error=reason, status=self._status())
            )
            return
        self.last_seen[last] = datetime.now(UTC).isoformat(timespec="seconds")
        if request.kind == "contribute":
            self.queue.put_nowait(pending)
        elif request.kind == "claim":
            asyncio.create_task(self._claim(pending)).add_done_callback(self._died)
        elif request.kind == "paid":
            asyncio.create_task(self._paid(pending)).add_done_callback(self._died)
        else:
            await self._heartbeat(pending)

    def _status(self) -> str:
        return self.state.status if self.state else "closed"

    def lease_for(self, table_id: str) -> int:
        """A lease only while the link is open, its database answers and commits, and the self-check passed."""
        if self._status() != "open" or not self.db_healthy():
            self.leases.pop(table_id, None)
            return 0
        self.leases[table_id] = time.monotonic() + self.config.link.lease_ms / 1000
        return self.config.link.lease_ms

    async def _heartbeat(self, p: _Pending) -> None:
        lease = self.lease_for(p.table_id)
        error = None if lease else f"link {self._status()}" + ("" if self.db_healthy() else ", database unreachable")
        await self._answer(
            p.reply_to,
            p.correlation,
            LinkResponse(
                ok=True, kind="heartbeat", status=self._status(), lease_ms=lease, display=self.display, error=error
            ),
        )

    async def _answer(self, topic: str, correlation: bytes, response: LinkResponse) -> None:
        client = self.client
        if client is None:
            return  # the table resends: the same key changes nothing
        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        props.CorrelationData = correlation
        with contextlib.suppress(aiomqtt.MqttError):
            await client.publish(topic, response.model_dump_json(exclude_none=True), qos=1, properties=props)

    # -- contributions: batched, one synchronous commit for what arrived together --------------------------

    async def _commit_loop(self) -> None:
        while True:
            batch = [await self.queue.get()]
            size = len(batch[0].request.contributions)
            while not self.queue.empty() and size < BATCH_MAX:
                nxt = self.queue.get_nowait()
                batch.append(nxt)
                size += len(nxt.request.contributions)
            await self._commit(batch)

    async def _commit(self, batch: list[_Pending]) -> None:
        rows = [
            Contribution(p.table_id, p.request.round_id or "", c.seat, c.wager, c.cents)
            for p in batch
            for c in p.request.contributions
        ]
        try:
            result = await self.db(lambda s: s.contribute(rows), write=True)
        except DatabaseDown:
            return  # unacknowledged: the tables resend after reconnecting
        except (ParameterError, LinkRefused) as err:
            if len(batch) > 1:
                for p in batch:  # one table's bad wager must not hold the others' contributions back
                    await self._commit([p])
                return
            await self._answer(
                batch[0].reply_to,
                batch[0].correlation,
                LinkResponse(ok=False, kind="contribute", error=str(err), status=self._status()),
            )
            return
        self.display = result.display
        self.wake.set()
        for p in batch:
            keys = [(p.table_id, p.request.round_id or "", c.seat, c.wager) for c in p.request.contributions]
            new = sum(1 for k in keys if k in result.fresh)
            lease = self.lease_for(p.table_id)
            response = LinkResponse(
                ok=True,
                kind="contribute",
                status=self._status(),
                lease_ms=lease,
                display=self.display,
                new=new,
                duplicates=len(keys) - new,
            )
            await self._answer(p.reply_to, p.correlation, response)

    async def _claim(self, p: _Pending) -> None:
        claim = p.request.claim
        table = self.config.table(p.table_id)
        if claim is None or p.request.round_id is None or table is None:
            await self._answer(
                p.reply_to,
                p.correlation,
                LinkResponse(
                    ok=False,
                    kind="claim",
                    error="a claim needs round_id and claim {seat, level, percent, rule}",
                    status=self._status(),
                ),
            )
            return
        round_id = p.request.round_id
        try:
            hit, new = await self.db(
                lambda s: s.claim(
                    p.table_id, round_id, claim.seat, claim.level, claim.percent, claim.rule, table.asset_number
                ),
                write=True,
            )
        except DatabaseDown:
            return
        except (LinkRefused, ParameterError) as err:
            await self._answer(
                p.reply_to, p.correlation, LinkResponse(ok=False, kind="claim", error=str(err), status=self._status())
            )
            return
        if new:
            log.info(
                "jackpot claimed",
                table_id=hit.table_id,
                level=hit.level,
                amount_cents=hit.amount_cents,
                order=hit.hit_seq,
            )
            await self.db(lambda s: self._refresh())
            self.wake.set()
        await self._answer(
            p.reply_to,
            p.correlation,
            LinkResponse(ok=True, kind="claim", status=self._status(), display=self.display, hit=self.hit_out(hit)),
        )

    async def _paid(self, p: _Pending) -> None:
        """The winning table paid its hit (validated there by a signed command): the hit leaves every sign's pending
        list. Answered after the commit, so the table resends until then; a resend changes nothing."""
        paid, round_id = p.request.paid, p.request.round_id
        if paid is None or round_id is None:
            await self._answer(
                p.reply_to,
                p.correlation,
                LinkResponse(
                    ok=False,
                    kind="paid",
                    error="a paid report needs round_id and paid {seat, level, amount_cents, by}",
                    status=self._status(),
                ),
            )
            return
        try:
            hit, new = await self.db(
                lambda s: s.paid(p.table_id, round_id, paid.seat, paid.level, paid.amount_cents, paid.by), write=True
            )
        except DatabaseDown:
            return
        except LinkRefused as err:
            await self._answer(
                p.reply_to, p.correlation, LinkResponse(ok=False, kind="paid", error=str(err), status=self._status())
            )
            return
        if new:
            log.info("jackpot paid at its table", table_id=hit.table_id, level=hit.level, amount_cents=hit.amount_cents)
            self.wake.set()
        await self._answer(
            p.reply_to,
            p.correlation,
            LinkResponse(ok=True, kind="paid", status=self._status(), display=self.display, hit=self.hit_out(hit)),
        )

    def hit_out(self, hit: Hit) -> HitOut:
        table = self.config.table(hit.table_id)
        return HitOut(
            table_id=hit.table_id,
            asset_number=table.asset_number if table else "?",
            round_id=hit.round_id,
            seat=hit.seat,
            level=hit.level,
            order=hit.hit_seq,
            amount_cents=hit.amount_cents,
            meter_before_cents=hit.meter_before_cents,
            validated_by=hit.validated_by,
        )

    # -- what every sign and the console see --------------------------------------------------------------

    async def _publish_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), timeout=1.0)
            self.wake.clear()
            client = self.client
            if client is None or self.state is None:
                continue
            try:
                await self._publish_events(client)
                await self._publish_retained(client)
            except (aiomqtt.MqttError, DatabaseDown) as err:
                log.warning("publishing paused", error=str(err)[:200])

    async def _publish_events(self, client: aiomqtt.Client) -> None:
        assert self.state is not None
        after = self.state.published_seq
        while True:
            events = await self.db(partial(_events_after, after=after))
            if not events:
                return
            await asyncio.gather(*(client.publish(f"{self.base}/event", _json(e), qos=1) for e in events))
            after = int(events[-1]["seq"])
            await self.db(partial(LinkStore.mark_published, seq=after))
            await self.db(lambda s: self._refresh())

    async def _publish_retained(self, client: aiomqtt.Client) -> None:
        assert self.state is not None
        link_id = self.config.link.id
        for level, cents in self.display.items():
            if self.published_meters.get(level) != cents:
                meter = LinkMeter(link_id=link_id, level=level, display_cents=cents, seq=self.state.seq)
                await client.publish(f"{self.base}/progressive/{level}", meter.model_dump_json(), qos=1, retain=True)
                self.published_meters[level] = cents
        now = time.monotonic()
        state = LinkState(
            link_id=link_id,
            status=self.state.status,
            tilt=self.state.tilt,
            database="up" if self.db_healthy() else "down",
            seq=self.state.seq,
            tables={
                t.table_id: TableLease(
                    asset_number=t.asset_number,
                    leased=self.leases.get(t.table_id, 0) > now,
                    last_seen=self.last_seen.get(t.table_id),
                )
                for t in self.config.tables
            },
        )
        text = state.model_dump_json(exclude={"seq"})
        if text != self.published_state:
            await client.publish(f"{self.base}/state", state.model_dump_json(), qos=1, retain=True)
            self.published_state = text
        hits = await self.db(lambda s: s.hits())
        pending = PendingJackpots(link_id=link_id, pending=[self.hit_out(h) for h in hits if h.validated_by is None])
        text = pending.model_dump_json()
        if text != self.published_jackpots:
            await client.publish(f"{self.base}/jackpot", text, qos=1, retain=True)
            self.published_jackpots = text

    async def _probe(self) -> None:
        """The database answers (for the leases) and systemd's watchdog hears from us while it does."""
        interval = self.config.link.lease_ms / 4000
        watchdog = self.notifier.watchdog_interval
        last_ping = 0.0
        while True:
            with contextlib.suppress(DatabaseDown):
                await self.db(lambda s: s.conn.execute("SELECT 1").fetchone())
            now = time.monotonic()
            if watchdog is not None and self.db_healthy() and now - last_ping >= watchdog:
                self.notifier.send(
                    WATCHDOG=1, STATUS=f"link {self._status()}: seq {self.state.seq if self.state else 0}"
                )
                last_ping = now
            self.wake.set()
            await asyncio.sleep(interval)


def _events_after(store: LinkStore, after: int) -> list[dict[str, Any]]:
    return store.events_after(after, 500)


def _first(err: ValidationError) -> str:
    e = err.errors()[0] if err.errors() else None
    if e is None:
        return str(err)
    where = ".".join(str(p) for p in e["loc"])
    return f"{where}: {e['msg']}" if where else str(e["msg"])


def _json(event: dict[str, Any]) -> str:
    return json.dumps(event, sort_keys=True, separators=(",", ":"))
