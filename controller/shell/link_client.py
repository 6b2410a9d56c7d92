"""A linked table's client of the link controller (docs/linked-progressives.md, "The table side").

- **The lease.** A heartbeat every `[progressive] heartbeat_ms`; the lease runs `lease_ms` from when the heartbeat
  was sent (this process's monotonic clock). While it is fresh the engine takes progressive wagers; the moment it
  lapses (no answer, the link closed or tilted, the broker gone, this client down) the engine is told
  (`LinkLease(fresh=False)`) and locks them out. The lapse is timed by its own task, apart from the connection, so a
  broker outage or a stuck connection cannot keep a lease alive.
- **The outbox.** What the engine put in `TableState.link_outbox` (journaled with the step that made it: a lock-out's
  contributions, a hit's claim) is sent, and sent again every `resend_ms` under the same key, until the link answers;
  the answer goes back into the engine (`LinkAnswered`), which takes the request out of the outbox in the same
  journaled step. A kill -9 anywhere resends from the journal; the link's keys make a resend change nothing.
- **The signs.** The link's retained `progressive/<level>` and `jackpot` topics become `LinkBroadcast` inputs.

A bad payload from the broker is logged and dropped; nothing here holds state the journal does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from typing import Protocol

import aiomqtt
import structlog
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from pydantic import ValidationError

from controller.config.table import TableConfig
from controller.core.invariant import present
from controller.engine.inputs import Input, LinkAnswered, LinkBroadcast, LinkLease
from controller.engine.state import LinkRequest, TableState
from controller.mqtt.connection import client_kwargs
from controller.mqtt.link_wire import (
    ClaimOut,
    ContributionOut,
    JackpotsIn,
    MeterIn,
    PaidOut,
    RequestOut,
    ResponseIn,
    topics,
)
from controller.progressive.link import LinkJackpot

log = structlog.get_logger("tablectl.link")
BACKOFF_MAX = 5.0


class LinkedTable(Protocol):
    @property
    def state(self) -> TableState: ...

    def submit(self, inp: Input) -> None: ...


def request_body(req: LinkRequest) -> RequestOut:
    if req.kind == "contribute":
        return RequestOut(
            kind="contribute",
            round_id=req.round_id,
            contributions=[ContributionOut(seat=c.seat, wager=c.wager, cents=c.cents) for c in req.contributions],
        )
    if req.kind == "paid":
        return RequestOut(
            kind="paid",
            round_id=req.round_id,
            paid=PaidOut(seat=req.seat, level=req.level, amount_cents=req.amount_cents, by=req.by),
        )
    return RequestOut(
        kind="claim",
        round_id=req.round_id,
        claim=ClaimOut(seat=req.seat, level=req.level, percent=req.percent, rule=req.rule),
    )


class LinkClient:
    def __init__(self, table: LinkedTable, config: TableConfig, broker: str | None = None) -> None:
        link = present(config.progressive.link, "[progressive.link] of the table a LinkClient serves")
        self.table = table
        self.config = config
        self.broker = broker
        self.link = link
        self.request_topic, self.response_topic, self.base = topics(config.mqtt.prefix, link, config.table_id)
        self.heartbeat_s = config.progressive.heartbeat_ms / 1000
        self.resend_s = config.progressive.resend_ms / 1000
        self.wake = asyncio.Event()
        self.lease_until = 0.0
        self.renewed: tuple[float, int] | None = None  # the last lease granted: when its heartbeat was sent, its term
        self.lapse_why = "no lease from the link yet"
        self.levels: tuple[str, ...] = ()
        self.inflight: dict[bytes, tuple[str, float]] = {}  # correlation -> (key, or "" for a heartbeat; sent at)
        self.last_sent: dict[str, float] = {}
        self.told: bool | None = None  # what the engine was last told of the lease by this client
        self.lease_changed = asyncio.Event()
        self.connected = False

    def kick(self) -> None:
        """The engine put requests in the outbox (SendLink)."""
        self.wake.set()

    # -- the lease, timed apart from the connection ---------------------------------------------------------------

    async def watch_lease(self) -> None:
        while True:
            now = time.monotonic()
            fresh = now < self.lease_until
            if not fresh and self.told is not False and (self.table.state.link_lease or self.told is None):
                log.warning("link lease lapsed: progressive wagers locked out", link=self.link, why=self.lapse_why)
                self.told = False
                self.table.submit(LinkLease(False, self.lapse_why))
            elif fresh and self.told is not True and not self.table.state.link_lease:
                log.info("link lease granted: progressive wagers open", link=self.link)
                self.told = True
                self.table.submit(LinkLease(True, levels=self.levels))
            self.lease_changed.clear()
            timeout = max(0.005, self.lease_until - now) if fresh else 0.25
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self.lease_changed.wait()

    def _renew(self, sent_at: float, answer: ResponseIn) -> None:
        if answer.lease_ms > 0:
            self.lease_until = max(self.lease_until, sent_at + answer.lease_ms / 1000)
            self.renewed = (sent_at, answer.lease_ms)
            self.levels = tuple(sorted(answer.display))
            self.lapse_why = f"no answer from the link within the lease ({answer.lease_ms} ms)"
        else:
            # The link grants none (closed, tilted, its database lost): it is operating no more, so the lease
            # ends now rather than running out (5321.18: unplayable when the controller is inoperable).
            self.lease_until = 0.0
            self.lapse_why = f"the link grants no lease ({answer.error or answer.status}){self._last_lease()}"
        self.lease_changed.set()

    def _last_lease(self) -> str:
        """The figures an operator needs to tell a lease withdrawn from one that had run out."""
        if self.renewed is None:
            return ""
        sent_at, term = self.renewed
        age = round((time.monotonic() - sent_at) * 1000)
        return f"; the last lease, of {term} ms, was renewed {age} ms ago"

    # -- the connection ----------------------------------------------------------------------------------------

    async def run(self) -> None:
        self.told = None  # (re)started: the engine is told the lease's state afresh
        watcher = asyncio.create_task(self.watch_lease(), name="link-lease")
        delay = 0.5
        try:
            while True:
                if watcher.done():
                    watcher.result()  # a watcher that died is this task's failure: the supervisor sees it
                try:
                    await self._session()
                except aiomqtt.MqttError as err:
                    self.connected = False
                    self.lapse_why = f"the broker connection to the link was lost ({err})"
                    log.warning("link connection lost; reconnecting", error=str(err), retry_in_s=delay)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, BACKOFF_MAX)
                else:
                    delay = 0.5
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher

    async def _session(self) -> None:
        kwargs = client_kwargs(self.config.mqtt, self.broker)
        ident = f"{self.config.table_id}-link-{uuid.uuid4().hex[:6]}"
        async with aiomqtt.Client(**kwargs, identifier=ident, protocol=aiomqtt.ProtocolVersion.V5, keepalive=10) as c:
            await c.subscribe(
                [(self.response_topic, 1), (f"{self.base}/progressive/+", 1), (f"{self.base}/jackpot", 1)]
            )
            self.connected = True
            self.last_sent.clear()  # what was sent on the last connection may be lost: send it again now
            log.info("linked", link=self.link, topic=self.base)
            tasks = [
                asyncio.create_task(self._receive(c), name="link-receive"),
                asyncio.create_task(self._heartbeats(c), name="link-heartbeat"),
                asyncio.create_task(self._send_outbox(c), name="link-outbox"),
            ]
            try:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
                for t in done:
                    t.result()
            finally:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

    async def _publish(self, c: aiomqtt.Client, body: RequestOut, key: str) -> None:
        corr = uuid.uuid4().bytes
        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        props.ResponseTopic = self.response_topic
        props.CorrelationData = corr
        now = time.monotonic()
        self.inflight[corr] = (key, now)
        if len(self.inflight) > 1000:  # answers that never came: forget the oldest
            for old in list(self.inflight)[:500]:
                del self.inflight[old]
        await c.publish(self.request_topic, body.model_dump_json(exclude_none=True), qos=1, properties=props)

    async def _heartbeats(self, c: aiomqtt.Client) -> None:
        while True:
            await self._publish(c, RequestOut(kind="heartbeat"), "")
            await asyncio.sleep(self.heartbeat_s)

    async def _send_outbox(self, c: aiomqtt.Client) -> None:
        while True:
            now = time.monotonic()
            due = now + self.resend_s
            outbox = self.table.state.link_outbox
            for key in [k for k in self.last_sent if k not in outbox]:
                del self.last_sent[key]
            for key, req in list(outbox.items()):
                last = self.last_sent.get(key)
                if last is not None and now - last < self.resend_s:
                    due = min(due, last + self.resend_s)
                    continue
                if last is not None:
                    log.info("link request resent", key=key)
                self.last_sent[key] = now
                await self._publish(c, request_body(req), key)
            self.wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.01, due - time.monotonic())):
                    await self.wake.wait()

    async def _receive(self, c: aiomqtt.Client) -> None:
        async for message in c.messages:
            topic = str(message.topic)
            payload = message.payload if isinstance(message.payload, bytes | bytearray) else b""
            try:
                if topic == self.response_topic:
                    self._answer(message, bytes(payload))
                elif topic == f"{self.base}/jackpot":
                    self._jackpots(bytes(payload))
                elif topic.startswith(f"{self.base}/progressive/") and payload:
                    m = MeterIn.model_validate_json(payload)
                    self.table.submit(LinkBroadcast({m.level: m.display_cents}))
            except (ValidationError, ValueError) as err:
                log.warning("a malformed message from the link dropped", topic=topic, error=str(err)[:300])

    def _jackpots(self, payload: bytes) -> None:
        if not payload or json.loads(payload).get("status") == "offline":
            return
        pending = JackpotsIn.model_validate_json(payload).pending
        jackpots = tuple(LinkJackpot(h.table_id, h.asset_number, h.level, h.amount_cents, h.order) for h in pending)
        self.table.submit(LinkBroadcast({}, jackpots))

    def _answer(self, message: aiomqtt.Message, payload: bytes) -> None:
        props = message.properties
        corr = getattr(props, "CorrelationData", None) if props is not None else None
        sent = self.inflight.pop(bytes(corr), None) if corr is not None else None
        if sent is None:
            return  # not ours (another boot's request) or answered already
        key, sent_at = sent
        answer = ResponseIn.model_validate_json(payload)
        self._renew(sent_at, answer)
        if not key:
            return
        if not answer.ok:
            log.warning("the link refused a request", key=key, error=answer.error)
            self.table.submit(LinkAnswered(key, False, error=answer.error or "refused"))
            return
        hit = answer.hit
        self.table.submit(
            LinkAnswered(
                key,
                True,
                new=answer.new,
                duplicates=answer.duplicates,
                amount_cents=hit.amount_cents if hit else 0,
                order=hit.order if hit else 0,
                meter_before_cents=hit.meter_before_cents if hit else 0,
                meter_after_cents=hit.meter_after_cents if hit else None,
            )
        )
