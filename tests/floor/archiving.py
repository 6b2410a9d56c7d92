"""The floor's archive writer on a migrated database, and a table's message as the floor receives it: the archive's
tests use them (tests/floor/test_archive.py), and so do the report's tests that archive events and run its SQL
(test_report_abandoned.py, test_report_shapes.py). Shared here, so that no test module imports another."""

from __future__ import annotations

import json
import uuid
from datetime import date
from typing import Any

from controller.core.events import DomainEvent
from floor.archive import ArchiveWriter, load_state
from floor.config import DatabaseSection, GamingDaySection
from floor.db import async_connect, connect
from floor.dbclock import DbClock
from floor.messages import Incoming, LinkIncoming, Rejected, parse
from floor.schema import migrate

PREFIX = "tablectl"


def msg(content: dict[str, Any], topic: str | None = None) -> Incoming | Rejected:
    parsed = parse(PREFIX, topic or f"{PREFIX}/{content['table_id']}/event", json.dumps(content).encode())
    assert parsed is not None and not isinstance(parsed, LinkIncoming)
    return parsed


async def writer(dsn: str, clock: DbClock | None = None) -> ArchiveWriter:
    db = DatabaseSection(dsn=dsn)
    with connect(db) as sync:
        assert migrate(sync) == 0
    conn = await async_connect(db)
    return ArchiveWriter(conn, GamingDaySection(), await load_state(conn), clock)


def events_published(table: str, events: list[DomainEvent], day: date, first: int = 1) -> list[dict[str, Any]]:
    """The table's events as it publishes them (docs/mqtt.md): one a second from 12:00 UTC of `day`, seq `first` on
    (a journal whose earlier events are not archived, or no longer)."""
    return [
        {
            "event_id": uuid.uuid4().hex,
            "boot_id": "b1",
            "seq": seq,
            "ts": f"{day.isoformat()}T{12 + seq // 3600:02d}:{seq // 60 % 60:02d}:{seq % 60:02d}.000000Z",
            "table_id": table,
            "round_id": e.round_id,
            "type": e.type,
            "rule": e.rule,
            "payload": dict(e.payload),
        }
        for seq, e in enumerate(events, first)
    ]
