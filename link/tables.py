"""The tables' requests to the link (docs/linked-progressives.md, "Protocol" and "The lease"): heartbeat, contribute,
claim and paid, each answered on the table's response topic only after the commit returned. Contributions that
arrive together are committed together (one transaction, one synchronous commit for the lot); a lease is granted
only while the link is open, its self-check passed and its database answers and commits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import psycopg
import structlog
from pydantic import ValidationError

from controller.progressive.parameters import ParameterError
from floor.messages import unstorable
from floor.refusal_log import RefusalLog
from link.broker import Broker
from link.config import LinkConfig
from link.database import DatabaseDown, LinkDatabase
from link.protocol import MAX_REQUEST_BYTES, HitOut, LinkRequest, LinkResponse
from link.records import Contribution, Hit, LinkRefused
from link.refusals import REFUSED_REMEDY, Kind, Refusals

log = structlog.get_logger("tablectl.link")
BATCH_MAX = 2000  # contributions per transaction


@dataclass
class Pending:
    table_id: str
    request: LinkRequest
    reply_to: str
    correlation: bytes


class TableDesk:
    def __init__(self, config: LinkConfig, db: LinkDatabase, broker: Broker) -> None:
        self.config = config
        self.db = db
        self.broker = broker
        self.leases: dict[str, float] = {}
        self.last_seen: dict[str, str] = {}
        self.queue: asyncio.Queue[Pending] = asyncio.Queue()
        self.refusals = Refusals()  # the service's: its status line says them
        self.refusal_log = RefusalLog.defaults(log, REFUSED_REMEDY)  # the service's: lines bounded as the floor's

    async def take(
        self, table_id: str, payload: bytes, reply_to: str, correlation: bytes
    ) -> Coroutine[None, None, None] | None:
        """A table's request: refused at once if malformed or from a table not on the link; a contribution queued
        for the next commit; a heartbeat answered here; a claim or a paid report handed back for the service to run
        as a supervised task of its own (floor/tasks.py)."""
        # The link answers a table on its own response topic only: a ResponseTopic pointing elsewhere (another
        # table's answers, the link's own topics, a wildcard) would have the link publish there with its rights.
        expected = f"{self.broker.base}/response/{table_id}"
        topic = f"{self.broker.base}/request/{table_id}"  # a publisher's words, logged bounded per topic
        wrong_topic = reply_to != expected
        if wrong_topic:
            self.refusal_log.refused(
                "a request's response topic refused",
                topic,
                len(payload),
                f"its response topic {reply_to!r} is not {expected}",
                table_id=table_id,
                response_topic=reply_to,
            )
            reply_to = expected
        kind: Kind = "request_malformed"
        try:
            if wrong_topic:
                kind = "response_topic"
                raise LinkRefused(f"the response topic must be {expected}, the requesting table's own")
            if len(payload) > MAX_REQUEST_BYTES:
                kind = "request_too_big"
                raise LinkRefused(f"request of {len(payload)} bytes, over the {MAX_REQUEST_BYTES} a request may have")
            # Strict: a table sends numbers as numbers; "500", 500.0 or true for cents is refused, not coerced.
            request = LinkRequest.model_validate_json(payload, strict=True)
            bad = unstorable(request.model_dump())
            if bad:
                raise LinkRefused(f"request: {bad}")
            pending = Pending(table_id, request, reply_to, correlation)
            if self.config.table(table_id) is None:
                kind = "table_not_on_link"
                raise LinkRefused(
                    f"table {table_id!r} is not on link {self.config.link.id}: add it to [[tables]] in the link config"
                )
        except (ValidationError, LinkRefused) as err:
            reason = str(err).splitlines()[0] if isinstance(err, LinkRefused) else _first(err)
            self.refusal_log.refused(
                "a table's request refused", topic, len(payload), reason, table_id=table_id, kind=kind
            )
            self.refusals.note(kind, topic=topic, reason=reason)
            await self.broker.answer(
                reply_to, correlation, LinkResponse(ok=False, kind="?", error=reason, status=self.db.status())
            )
            return None
        self.last_seen[table_id] = datetime.now(UTC).isoformat(timespec="seconds")
        if request.kind == "contribute":
            self.queue.put_nowait(pending)
        elif request.kind == "claim":
            return self._claim(pending)
        elif request.kind == "paid":
            return self._paid(pending)
        else:
            await self._heartbeat(pending)
        return None

    def _topic(self, p: Pending) -> str:
        return f"{self.broker.base}/request/{p.table_id}"

    def lease_for(self, table_id: str) -> int:
        """A lease only while the link is open, its database answers and commits, and the self-check passed."""
        if self.db.status() != "open" or not self.db.healthy():
            self.leases.pop(table_id, None)
            return 0
        self.leases[table_id] = time.monotonic() + self.config.link.lease_ms / 1000
        return self.config.link.lease_ms

    def no_lease_why(self) -> str:
        """What a table's `progressive.locked_out` says when an answer grants no lease: the link's status and, while
        it is open, why its database keeps it from granting one."""
        status = self.db.status()
        why = self.db.unhealthy_why()
        return f"link {status}" + (f", {why}" if why else "")

    async def _heartbeat(self, p: Pending) -> None:
        lease = self.lease_for(p.table_id)
        status = self.db.status()
        error = None if lease else self.no_lease_why()
        await self.broker.answer(
            p.reply_to,
            p.correlation,
            LinkResponse(
                ok=True, kind="heartbeat", status=status, lease_ms=lease, display=self.db.display, error=error
            ),
        )

    # -- contributions: batched, one synchronous commit for what arrived together --------------------------

    async def commit_loop(self) -> None:
        while True:
            batch = [await self.queue.get()]
            size = len(batch[0].request.contributions)
            while not self.queue.empty() and size < BATCH_MAX:
                nxt = self.queue.get_nowait()
                batch.append(nxt)
                size += len(nxt.request.contributions)
            await self._commit(batch)

    async def _commit(self, batch: list[Pending]) -> None:
        rows = [
            Contribution(p.table_id, p.request.round_id or "", c.seat, c.wager, c.cents)
            for p in batch
            for c in p.request.contributions
        ]
        try:
            result = await self.db.call(lambda s: s.contribute(rows), write=True)
        except DatabaseDown:
            return  # unacknowledged: the tables resend after reconnecting
        except (ParameterError, LinkRefused, psycopg.DataError) as err:
            if len(batch) > 1:
                for p in batch:  # one table's bad wager must not hold the others' contributions back
                    await self._commit([p])
                return
            self.refusals.note("contribution", topic=self._topic(batch[0]), reason=_said(err))
            log.warning("a table's contribution refused", table_id=batch[0].table_id, reason=_said(err))
            await self.broker.answer(
                batch[0].reply_to,
                batch[0].correlation,
                LinkResponse(ok=False, kind="contribute", error=_said(err), status=self.db.status()),
            )
            return
        self.db.display = result.display
        self.broker.wake.set()
        for p in batch:
            keys = [(p.table_id, p.request.round_id or "", c.seat, c.wager) for c in p.request.contributions]
            new = sum(1 for k in keys if k in result.fresh)
            lease = self.lease_for(p.table_id)
            response = LinkResponse(
                ok=True,
                kind="contribute",
                status=self.db.status(),
                lease_ms=lease,
                display=self.db.display,
                new=new,
                duplicates=len(keys) - new,
                error=None if lease else self.no_lease_why(),
            )
            await self.broker.answer(p.reply_to, p.correlation, response)

    # -- hits ---------------------------------------------------------------------------------------------

    async def _refuse(self, p: Pending, kind: Literal["claim", "paid"], error: str) -> None:
        self.refusals.note(kind, topic=self._topic(p), reason=error)
        log.warning(f"a table's {kind} refused", table_id=p.table_id, reason=error)
        await self.broker.answer(
            p.reply_to, p.correlation, LinkResponse(ok=False, kind=kind, error=error, status=self.db.status())
        )

    async def _claim(self, p: Pending) -> None:
        claim = p.request.claim
        table = self.config.table(p.table_id)
        if claim is None or p.request.round_id is None or table is None:
            await self._refuse(p, "claim", "a claim needs round_id and claim {seat, level, percent, rule}")
            return
        round_id = p.request.round_id
        try:
            hit, new = await self.db.call(
                lambda s: s.claim(
                    p.table_id, round_id, claim.seat, claim.level, claim.percent, claim.rule, table.asset_number
                ),
                write=True,
            )
        except DatabaseDown:
            return
        except (LinkRefused, ParameterError, psycopg.DataError) as err:
            await self._refuse(p, "claim", _said(err))
            return
        if new:
            log.info(
                "jackpot claimed",
                table_id=hit.table_id,
                level=hit.level,
                amount_cents=hit.amount_cents,
                order=hit.hit_seq,
            )
            await self.db.call(lambda s: self.db.refresh())
            self.broker.wake.set()
        await self._answer_hit(p, "claim", hit)

    async def _paid(self, p: Pending) -> None:
        """The winning table paid its hit (validated there by a signed command): the hit leaves every sign's pending
        list. Answered after the commit, so the table resends until then; a resend changes nothing."""
        paid, round_id = p.request.paid, p.request.round_id
        if paid is None or round_id is None:
            await self._refuse(p, "paid", "a paid report needs round_id and paid {seat, level, amount_cents, by}")
            return
        try:
            hit, new = await self.db.call(
                lambda s: s.paid(p.table_id, round_id, paid.seat, paid.level, paid.amount_cents, paid.by), write=True
            )
        except DatabaseDown:
            return
        except (LinkRefused, psycopg.DataError) as err:
            await self._refuse(p, "paid", _said(err))
            return
        if new:
            log.info("jackpot paid at its table", table_id=hit.table_id, level=hit.level, amount_cents=hit.amount_cents)
            self.broker.wake.set()
        await self._answer_hit(p, "paid", hit)

    async def _answer_hit(self, p: Pending, kind: str, hit: Hit) -> None:
        # Renewed as every answer is: the table's client reads an answer's lease_ms of 0 as "the link grants no
        # lease" and locks its progressive wagers out, so a claim answered without one did so at every hit.
        lease = self.lease_for(p.table_id)
        response = LinkResponse(
            ok=True,
            kind=kind,
            status=self.db.status(),
            lease_ms=lease,
            display=self.db.display,
            hit=hit_out(self.config, hit),
            error=None if lease else self.no_lease_why(),
        )
        await self.broker.answer(p.reply_to, p.correlation, response)


def hit_out(config: LinkConfig, hit: Hit) -> HitOut:
    table = config.table(hit.table_id)
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
        meter_after_cents=hit.meter_after_cents,
    )


def _said(err: Exception) -> str:
    """A refusal's reason; the database's own words for what it would not store (the checks in take() let by)."""
    if isinstance(err, psycopg.DataError):
        log.error("the database refused a table's request", error=str(err).strip()[:300])
        return f"the link's database refused it: {str(err).strip().splitlines()[0][:200]}"
    return str(err)


def _first(err: ValidationError) -> str:
    e = err.errors()[0] if err.errors() else None
    if e is None:
        return str(err)
    where = ".".join(str(p) for p in e["loc"])
    return f"{where}: {e['msg']}" if where else str(e["msg"])
