"""What every sign and the floor's console see of the link (docs/mqtt.md, "The link"): the link's events in seq
order, and its retained topics: each level's meter, the link's state (status, database, every table's lease) and
the jackpots pending across the link. Each retained topic is published only when it changed, and all of them again
after a reconnect (the broker's connection clears what was published).
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
from link.protocol import LinkMeter, LinkState, PendingJackpots, TableLease
from link.store import LinkStore
from link.tables import TableDesk, hit_out

log = structlog.get_logger("tablectl.link")


class Signs:
    def __init__(self, config: LinkConfig, db: LinkDatabase, broker: Broker, tables: TableDesk) -> None:
        self.config = config
        self.db = db
        self.broker = broker
        self.tables = tables
        self.published_meters: dict[str, int] = {}
        self.published_state = ""
        self.published_jackpots = ""

    def connected(self) -> None:
        """A new connection: every retained topic goes out again."""
        self.published_state, self.published_jackpots = "", ""
        self.published_meters.clear()

    async def loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.broker.wake.wait(), timeout=1.0)
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
        assert self.db.state is not None
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
        assert state is not None
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
        )
        text = link_state.model_dump_json(exclude={"seq"})
        if text != self.published_state:
            await client.publish(f"{base}/state", link_state.model_dump_json(), qos=1, retain=True)
            self.published_state = text
        hits = await self.db.call(lambda s: s.hits())
        pending = PendingJackpots(
            link_id=link_id, pending=[hit_out(self.config, h) for h in hits if h.validated_by is None]
        )
        text = pending.model_dump_json()
        if text != self.published_jackpots:
            await client.publish(f"{base}/jackpot", text, qos=1, retain=True)
            self.published_jackpots = text


def _events_after(store: LinkStore, after: int) -> list[dict[str, Any]]:
    return store.events_after(after, 500)


def _json(event: dict[str, Any]) -> str:
    return json.dumps(event, sort_keys=True, separators=(",", ":"))
