"""What every sign and the floor's console see of the link (docs/mqtt.md, "The link"): the link's events in seq
order, and its retained topics: each level's meter, the link's state (status, database, every table's lease) and
the jackpots pending across the link. Each retained topic is published only when it changed, and all of them again
after a reconnect (the broker's connection clears what was published). The state also carries what the link refused
(link/refusals.py); a change of those counts alone is published at most once a REFUSALS_EVERY_S, so a flood of junk
on the link's topics is not a flood of retained publishes, and the last counts follow within that time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from functools import partial
from typing import Any

import aiomqtt
import structlog

from link.broker import Broker
from link.config import LinkConfig
from link.database import DatabaseDown, LinkDatabase
from link.protocol import LinkMeter, LinkRefusals, LinkState, PendingJackpots, TableLease
from link.refusals import Refusals
from link.store import LinkStore
from link.tables import TableDesk, hit_out

log = structlog.get_logger("tablectl.link")
# The least time between two state publishes that differ only in the refusal counts. The loop wakes at least once a
# second (Signs.loop), so counts that changed are published within about this plus a second.
REFUSALS_EVERY_S = 1.0


class Signs:
    def __init__(self, config: LinkConfig, db: LinkDatabase, broker: Broker, tables: TableDesk) -> None:
        self.config = config
        self.db = db
        self.broker = broker
        self.tables = tables
        self.published_meters: dict[str, int] = {}
        self.published_state = ""
        self.published_jackpots = ""
        self.published_state_bare = ""  # the last state published, its refusals left out
        self.refusals_published_at = float("-inf")

    def connected(self) -> None:
        """A new connection: every retained topic goes out again."""
        self.published_state, self.published_jackpots, self.published_state_bare = "", "", ""
        self.published_meters.clear()

    async def loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    await self.broker.wake.wait()
            self.broker.wake.clear()
            client = self.broker.client
            if client is None or self.db.state is None:
                continue
            try:
                await self._events(client)
                await self._retained(client)
            except (aiomqtt.MqttError, DatabaseDown) as err:
                log.warning("publishing paused", error=str(err)[:200])

    async def _events(self, client: aiomqtt.Client) -> None:
        if self.db.state is None:  # read at the service's start, before this task runs
            raise DatabaseDown("the link's state was not read yet")
        after = self.db.state.published_seq
        base = self.broker.base
        while True:
            events = await self.db.call(partial(_events_after, after=after))
            if not events:
                return
            await asyncio.gather(*(client.publish(f"{base}/event", _json(e), qos=1) for e in events))
            after = int(events[-1]["seq"])
            await self.db.call(partial(LinkStore.mark_published, seq=after))
            await self.db.call(lambda s: self.db.refresh())

    async def _retained(self, client: aiomqtt.Client) -> None:
        state, base = self.db.state, self.broker.base
        if state is None:  # read at the service's start, before this task runs
            raise DatabaseDown("the link's state was not read yet")
        link_id = self.config.link.id
        for level, cents in self.db.display.items():
            if self.published_meters.get(level) != cents:
                meter = LinkMeter(link_id=link_id, level=level, display_cents=cents, seq=state.seq)
                await client.publish(f"{base}/progressive/{level}", meter.model_dump_json(), qos=1, retain=True)
                self.published_meters[level] = cents
        now = time.monotonic()
        link_state = LinkState(
            link_id=link_id,
            status=state.status,
            tilt=state.tilt,
            database="up" if self.db.healthy() else "down",
            seq=state.seq,
            tables={
                t.table_id: TableLease(
                    asset_number=t.asset_number,
                    leased=self.tables.leases.get(t.table_id, 0) > now,
                    last_seen=self.tables.last_seen.get(t.table_id),
                )
                for t in self.config.tables
            },
            refusals=refusals_out(self.tables.refusals),
        )
        # Without refusals the field is left out, not null: a floor older than it still reads a quiet link's state.
        quiet = {"refusals"} if link_state.refusals is None else set()
        text = link_state.model_dump_json(exclude={"seq", *quiet})
        bare = link_state.model_dump_json(exclude={"seq", "refusals"})
        counts_only = bare == self.published_state_bare
        if text != self.published_state and (not counts_only or now - self.refusals_published_at >= REFUSALS_EVERY_S):
            await client.publish(f"{base}/state", link_state.model_dump_json(exclude=quiet), qos=1, retain=True)
            self.published_state, self.published_state_bare = text, bare
            if link_state.refusals is not None:
                self.refusals_published_at = now
        meter_after = self.config.link.jackpot_meter_after
        hits = await self.db.call(lambda s: s.hits(meter_after))
        pending = PendingJackpots(
            link_id=link_id, pending=[hit_out(self.config, h) for h in hits if h.validated_by is None]
        )
        # Left out unless [link] jackpot_meter_after: a floor older than the field refuses the list whole.
        text = pending.model_dump_json(exclude=None if meter_after else {"pending": {"__all__": {"meter_after_cents"}}})
        if text != self.published_jackpots:
            await client.publish(f"{base}/jackpot", text, qos=1, retain=True)
            self.published_jackpots = text


def refusals_out(refusals: Refusals) -> LinkRefusals | None:
    """The state's account of what the link refused; None while nothing was."""
    if not refusals.counts:
        return None
    return LinkRefusals(
        total=refusals.total,
        counts=dict(sorted(refusals.counts.items())),
        last_kind=refusals.last_kind,
        last_at=refusals.last_at,
        last_topic=refusals.last_topic,
        last_reason=refusals.last_reason,
    )


def _events_after(store: LinkStore, after: int) -> list[dict[str, Any]]:
    return store.events_after(after, 500)


def _json(event: dict[str, Any]) -> str:
    return json.dumps(event, sort_keys=True, separators=(",", ":"))
