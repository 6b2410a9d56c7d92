"""Writing a batch of the tables' messages into PostgreSQL in one transaction, idempotently.

Events go through a temporary staging table filled by COPY, then into `event_keys` with ON CONFLICT DO NOTHING and,
for the keys that were new, into their gaming day's partition of `events`; an event whose (table, seq) or id is
already archived with another id or other content raises an integrity alarm (a table that rolled back). The
retained messages (status, birth, device, meter) are appended under their natural keys, also ON CONFLICT DO
NOTHING, so a message delivered twice is archived once. The tables' seq ranges, the gaps they leave and the live
model are written in the same transaction, and taken as current only once it commits. The statements and the rows
they take are floor/archive_rows.py's; this module runs them and keeps the state between batches.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from controller.mqtt.contract import Birth, DeviceStatus, TableEvent, TableStatus
from floor.archive_rows import ALARMS, COPY, INSERT_EVENTS, STAGING, event_row, retained_row
from floor.config import GamingDaySection, IngestSection
from floor.dbclock import DbClock
from floor.gaps import carry_since
from floor.links import LinkEventMsg, LinkLive
from floor.live import TableLive
from floor.messages import Incoming, LinkIncoming, Rejected
from floor.refusals import Run
from floor.refused_rows import RefusedWriter
from floor.schema import partition_ddl
from floor.seqtrack import Range, SeqRanges, opened_and_filled

AsyncConn = psycopg.AsyncConnection[tuple[Any, ...]]
# What the database raises for a message it cannot store (a value out of range, text it refuses), as opposed to
# psycopg.OperationalError, a server lost; ValueError and OverflowError for a stamp the writer cannot file.
REFUSED_BY_DATABASE = (psycopg.DataError, psycopg.IntegrityError, ValueError, OverflowError)


@dataclass(frozen=True, slots=True)
class Alarm:
    kind: str
    table_id: str
    seq: int
    archived_event_id: str
    received_event_id: str


@dataclass
class WriteResult:
    events_in: int = 0
    events_new: int = 0
    alarms: list[Alarm] = field(default_factory=list)
    gaps_opened: dict[str, list[Range]] = field(default_factory=dict)
    gaps_filled: dict[str, list[Range]] = field(default_factory=dict)
    rejected: int = 0
    refused_last: Rejected | None = None  # the latest refusal kept (the console shows it)

    def add(self, other: WriteResult) -> None:
        """Another transaction's result, as one (a batch written message by message, floor/writing.py)."""
        self.events_in += other.events_in
        self.events_new += other.events_new
        self.rejected += other.rejected
        self.refused_last = other.refused_last or self.refused_last
        self.alarms += other.alarms
        for table_id, gaps in other.gaps_opened.items():
            self.gaps_opened.setdefault(table_id, []).extend(gaps)
        for table_id, gaps in other.gaps_filled.items():
            self.gaps_filled.setdefault(table_id, []).extend(gaps)

    @property
    def duplicates(self) -> int:
        return self.events_in - self.events_new - len(self.alarms)


@dataclass
class FloorState:
    """What the service keeps between batches: each table's archived seqs and live model."""

    seqs: dict[str, SeqRanges] = field(default_factory=dict)
    live: dict[str, TableLive] = field(default_factory=dict)
    # Not stored: the links' topics are retained, so the broker gives them again at every subscription.
    links: dict[str, LinkLive] = field(default_factory=dict)

    def table(self, table_id: str) -> TableLive:
        if table_id not in self.live:
            self.live[table_id] = TableLive(table_id)
        return self.live[table_id]


async def load_state(conn: AsyncConn) -> FloorState:
    state = FloorState()
    cur = await conn.execute("SELECT table_id, seq_ranges, live FROM floor_tables")
    for table_id, ranges, live in await cur.fetchall():
        state.seqs[table_id] = SeqRanges.from_json(ranges)
        state.live[table_id] = TableLive.from_json(live) if live else TableLive(table_id)
    return state


class ArchiveWriter:
    """Writes batches on one connection; keeps which gaming days have a partition already."""

    def __init__(
        self,
        conn: AsyncConn,
        gd: GamingDaySection,
        state: FloorState,
        clock: DbClock | None = None,
        ingest: IngestSection | None = None,
        ticks: Callable[[], float] = time.monotonic,
    ) -> None:
        self.conn = conn
        # What rejected_messages may take (floor/refusals.py): each row bounded, a flood coalesced into counted rows.
        self.refused = RefusedWriter(ingest or IngestSection(), ticks)
        self.gd = gd
        self.state = state
        # The database's clock stamps when a gap opened, as `tablectl floor gaps` measures it (floor/dbclock.py).
        self.clock = clock or DbClock()
        self._days: set[date] = set()

    def use(self, conn: AsyncConn) -> None:
        """Go on with a new connection after the last one failed (its uncommitted batch is written again)."""
        self.conn = conn
        self._days.clear()
        self.clock.reset()

    async def write(self, batch: Sequence[Incoming | LinkIncoming | Rejected]) -> WriteResult:
        """Archive the batch in one transaction; the in-memory state moves on only once it committed."""
        result = WriteResult()
        events: dict[str, tuple[Incoming, TableEvent]] = {}
        # An id delivered twice in one batch with another body: written after the first, so it meets the first's
        # key and raises its alarm as it would in the next batch (kept aside, it would vanish without one).
        again: dict[tuple[str, bytes], tuple[Incoming, TableEvent]] = {}
        for m in batch:
            if isinstance(m, Incoming) and isinstance(m.model, TableEvent):
                first = events.setdefault(m.model.event_id, (m, m.model))
                if first[0].digest != m.digest:
                    again.setdefault((m.model.event_id, m.digest), (m, m.model))
        result.events_in = len(events) + len(again)
        rows = [event_row(m, e, self.gd) for m, e in events.values()]
        rows_again = [event_row(m, e, self.gd) for m, e in again.values()]
        if self.clock.due:
            await self.clock.sync(self.conn)
        now = self.clock.stamp()
        seqs, live = self._next_state(batch, [e for _, e in events.values()], now)
        links = [m for m in batch if isinstance(m, LinkIncoming)]
        known = set(self._days)
        try:
            async with self.conn.transaction():
                await self._ensure_partitions({r[0] for r in rows + rows_again})
                for part in (rows, rows_again):
                    if part:
                        await self._write_events(part, result)
                new_runs = await self._write_retained(batch, result)
                await self._write_tables(seqs, live, result)
                await self._write_link_events(links)
        except BaseException:
            self._days = known  # a partition made in the rolled-back transaction is gone with it
            raise
        self.state.seqs.update(seqs)
        self.state.live.update(live)
        for run, row in new_runs:
            run.row = row
        for m in links:
            self.state.links.setdefault(m.link_id, LinkLive(m.link_id)).apply(m.model, now)
        return result

    async def _write_link_events(self, links: list[LinkIncoming]) -> None:
        rows = [
            (m.link_id, e.seq, e.ts, e.type, e.rule, e.table_id, e.round_id, Jsonb(e.payload))
            for m in links
            if isinstance(e := m.model, LinkEventMsg)
        ]
        if rows:
            async with self.conn.cursor() as cur:
                await cur.executemany(
                    "INSERT INTO link_events (link_id, seq, ts_text, type, rule, table_id, round_id, payload)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    rows,
                )

    def _next_state(
        self, batch: Sequence[Incoming | LinkIncoming | Rejected], events: list[TableEvent], now: str
    ) -> tuple[dict[str, SeqRanges], dict[str, TableLive]]:
        seqs: dict[str, SeqRanges] = {}
        by_table: dict[str, list[int]] = {}
        for e in events:
            by_table.setdefault(e.table_id, []).append(e.seq)
        for table_id, new in by_table.items():
            seqs[table_id] = self.state.seqs.get(table_id, SeqRanges()).with_seqs(new)
        live: dict[str, TableLive] = {}
        for m in batch:
            if not isinstance(m, Incoming):
                continue
            if m.table_id not in live:
                live[m.table_id] = copy.deepcopy(self.state.table(m.table_id))
            _apply(live[m.table_id], m, now)
        for table_id, ranges in seqs.items():
            model = live.setdefault(table_id, copy.deepcopy(self.state.table(table_id)))
            gaps = ranges.gaps()
            model.gap_since = carry_since(model.gaps, model.gap_since, gaps, now)
            model.gaps = [[a, b] for a, b in gaps]
        return seqs, live

    async def _ensure_partitions(self, days: Iterable[date]) -> None:
        for day in sorted(set(days) - self._days):
            await self.conn.execute(partition_ddl(day))
            self._days.add(day)

    async def _write_events(self, rows: list[tuple[Any, ...]], result: WriteResult) -> None:
        async with self.conn.cursor() as cur:
            await cur.execute(STAGING)
            async with cur.copy(COPY) as copy_:
                for row in rows:
                    await copy_.write_row(row)
            await cur.execute(INSERT_EVENTS)
            result.events_new += max(cur.rowcount, 0)
            await cur.execute(ALARMS)
            result.alarms += [Alarm(*r) for r in await cur.fetchall()]
            await cur.execute("TRUNCATE staging_events")

    async def _write_retained(
        self, batch: Sequence[Incoming | LinkIncoming | Rejected], result: WriteResult
    ) -> list[tuple[Run, int]]:
        async with self.conn.cursor() as cur:
            for m in batch:
                if isinstance(m, Rejected):
                    result.rejected += 1
                    continue
                if isinstance(m, LinkIncoming):
                    continue  # its events are written with the links'; its retained state is not kept
                sql, params = retained_row(m, self.gd)
                if sql:
                    await cur.execute(sql, params)
        refused = [m for m in batch if isinstance(m, Rejected)]
        result.refused_last = refused[-1] if refused else None
        return await self.refused.write(self.conn, refused)

    async def _write_tables(self, seqs: dict[str, SeqRanges], live: dict[str, TableLive], result: WriteResult) -> None:
        async with self.conn.cursor() as cur:
            for table_id, ranges in seqs.items():
                before = self.state.seqs.get(table_id, SeqRanges()).gaps()
                opened, filled = opened_and_filled(before, ranges.gaps())
                for first, last in opened:
                    await cur.execute(
                        "INSERT INTO seq_gaps (table_id, first_seq, last_seq) VALUES (%s, %s, %s)"
                        " ON CONFLICT DO NOTHING",
                        (table_id, first, last),
                    )
                if filled:
                    # Every open row none of whose seqs is missing now: a gap filled in parts over several batches
                    # (a resend's events, a replay) shrinks in memory while its row keeps its first extent.
                    now_missing = ranges.gaps()
                    await cur.execute(
                        "SELECT first_seq, last_seq FROM seq_gaps WHERE table_id = %s AND filled_at IS NULL",
                        (table_id,),
                    )
                    for first, last in await cur.fetchall():
                        if not any(not (last < a or b < first) for a, b in now_missing):
                            await cur.execute(
                                "UPDATE seq_gaps SET filled_at = now() WHERE table_id = %s AND filled_at IS NULL"
                                " AND first_seq = %s AND last_seq = %s",
                                (table_id, first, last),
                            )
                if opened:
                    result.gaps_opened[table_id] = opened
                if filled:
                    result.gaps_filled[table_id] = filled
            for alarm in result.alarms:
                live.setdefault(alarm.table_id, copy.deepcopy(self.state.table(alarm.table_id))).alarms += 1
            for table_id, model in live.items():
                ranges = seqs.get(table_id, self.state.seqs.get(table_id, SeqRanges()))
                await cur.execute(
                    "INSERT INTO floor_tables (table_id, archived_through, seq_ranges, live) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (table_id) DO UPDATE SET archived_through = excluded.archived_through,"
                    " seq_ranges = excluded.seq_ranges, live = excluded.live, updated_at = now()",
                    (table_id, ranges.through, Jsonb(ranges.to_json()), Jsonb(model.to_json())),
                )


def _apply(live: TableLive, m: Incoming, now: str) -> None:
    model = m.model
    if isinstance(model, TableEvent):
        live.apply_event(model)
    elif isinstance(model, TableStatus):
        live.apply_status(model, now)
    elif isinstance(model, Birth):
        live.apply_birth(model)
    elif isinstance(model, DeviceStatus):
        live.apply_device(model)
    else:
        live.apply_meter(model)
