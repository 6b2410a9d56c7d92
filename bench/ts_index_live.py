"""The older days' ts index built under live ingest (floor/ts_index.py): what `CREATE INDEX CONCURRENTLY` and then
`ALTER INDEX events_ts_brin ATTACH PARTITION` cost the archive writer while it writes today's events.

A real PostgreSQL cluster (durable: fsync on, this machine's disk) holds an archive as migration 7 left it: D older
gaming days of N events each, appended in ts order, then migrated to 8 (the parent's index invalid, the days
unindexed). The archive writer (floor/archive.py's ArchiveWriter, the floor service's own, on its own connection)
writes batches of today's events from 50 tables as fast as it can, as a floor's writer does under a backlog; each
batch's write (its one transaction, to its commit) is timed. Windows alternate in one process: the writer alone
(baseline), the writer while the service's own build (index_partitions, on a second connection in a thread, as the
service's floor-older-days task runs it, stopped after --days-per-build days as a service's stop stops it) indexes
and attaches the next older days, the writer alone again (at least as long as the build), and so on. Printed:
events/s over each window's writes and each build window's ratio to the windows alone either side (their mean), the
longest write (the stall a lock would show as) and p99, each day's CREATE and ATTACH times, and the longest write
that overlapped an ATTACH.

Run:  .venv/bin/python bench/ts_index_live.py [--builds 3] [--days-per-build 2] [--per-day 300000] [--batch 500]
      [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, ClassVar, Self

import psycopg
from benchlib import machine, percentile, progress
from older_day import insert_older_day

from floor.archive import ArchiveWriter, load_state
from floor.config import DatabaseSection, GamingDaySection
from floor.db import async_connect, connect
from floor.messages import Incoming, parse
from floor.pgcluster import PgCluster
from floor.schema import migrate, partition_name
from floor.ts_index import INDEX, index_partitions, partition_index, valid

PREFIX = "benchidx"
TABLES = 50


@dataclass
class Window:
    """One window's writes: (start, end) perf_counter of each batch's write, and its events."""

    name: str
    writes: list[tuple[float, float]] = field(default_factory=list)
    events: int = 0

    def seconds(self) -> list[float]:
        return [end - start for start, end in self.writes]

    def rate(self) -> float:
        return self.events / sum(self.seconds())


def older_archive(dsn: str, days: int, per_day: int) -> list[date]:
    """An archive as migration 7 left it (as tests/floor/test_ts_index.py makes one), then migrated to 8."""
    first = date(2026, 1, 1)
    older = [first + timedelta(days=n) for n in range(days)]
    with psycopg.connect(dsn) as conn:
        migrate(conn, upto=7)
        for n, day in enumerate(older, start=1):
            progress(f"older gaming day {day}: {per_day:,} events ({n}/{days})")
            insert_older_day(conn, day, per_day, tables=50)
            conn.commit()
    with psycopg.connect(dsn, autocommit=True) as conn:
        # The bulk load's own aftermath (hint bits, visibility map, statistics, dirty pages) done before any window.
        conn.execute("VACUUM ANALYZE events")
        conn.execute("CHECKPOINT")
    with connect(DatabaseSection(dsn=dsn)) as conn:
        migrate(conn)
        assert not valid(conn)
    return older


class Source:
    """Today's events of 50 tables, a batch at a time (made between writes: not in a write's time)."""

    def __init__(self) -> None:
        self.boot = uuid.uuid4().hex
        self.seq = 0

    def batch(self, size: int) -> list[Incoming]:
        out: list[Incoming] = []
        while len(out) < size:
            self.seq += 1
            for t in range(TABLES):
                table = f"t{t:02d}"
                body = {
                    "event_id": uuid.uuid4().hex,
                    "boot_id": self.boot,
                    "seq": self.seq,
                    "ts": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
                    "table_id": table,
                    "round_id": f"{table}-r{self.seq // 25 + 1:06d}",
                    "type": "three_card_bonus.settled",
                    "rule": "655a.11(i)(2)(ii)",
                    "payload": {"seat": self.seq % 6 + 1, "amount": 500, "outcome": "lose", "paid": 0},
                }
                m = parse(PREFIX, f"{PREFIX}/{table}/event", json.dumps(body).encode())
                assert isinstance(m, Incoming)
                out.append(m)
        return out


async def write_while(writer: ArchiveWriter, source: Source, size: int, window: Window, until: threading.Event) -> None:
    while True:  # at least one write a window, however short the build
        batch = source.batch(size)
        start = time.perf_counter()
        await writer.write(batch)
        window.writes.append((start, time.perf_counter()))
        window.events += len(batch)
        if until.is_set():
            return


class TimedCursor(psycopg.Cursor[tuple[object, ...]]):
    """The build's statements timed where they run: each day's CREATE INDEX CONCURRENTLY start and its ATTACH's
    start and end, as (partition index, CREATE start, ATTACH start, ATTACH end) in `spans`."""

    spans: ClassVar[list[tuple[str, float, float, float]]] = []  # one build a process
    created: ClassVar[dict[str, float]] = {}

    def execute(self, query: Any, params: Any = None, **kw: Any) -> Self:
        text = query.decode() if isinstance(query, bytes) else str(query)
        t0 = time.perf_counter()
        out = super().execute(query, params, **kw)
        if text.startswith("CREATE INDEX CONCURRENTLY"):
            self.created[text.split()[6]] = t0  # CREATE INDEX CONCURRENTLY IF NOT EXISTS <name> ON ...
        elif text.startswith(f"ALTER INDEX {INDEX} ATTACH PARTITION"):
            name = text.rsplit(" ", 1)[1]
            self.spans.append((name, self.created.pop(name, t0), t0, time.perf_counter()))
        return out


def timed_build(dsn: str, days: int, done: threading.Event) -> None:
    """The service's build (index_partitions, as its floor-older-days task runs it) of the next `days` older days
    (its stop between two days, asked as a service's stop is), its statements timed."""
    built: list[str] = []
    with connect(DatabaseSection(dsn=dsn)) as conn:
        conn.cursor_factory = TimedCursor
        try:
            index_partitions(conn, lambda _d, _of, name, _s: built.append(name), lambda: len(built) >= days)
        finally:
            done.set()


async def run(dsn: str, args: argparse.Namespace) -> tuple[list[Window], list[Window]]:
    """Alternating windows: the writer alone, then while a build of --days-per-build days, --builds times, then alone
    once more (each window alone at least --seconds, and as long as the build before it)."""
    conn = await async_connect(DatabaseSection(dsn=dsn))
    writer = ArchiveWriter(conn, GamingDaySection(), await load_state(conn))
    source = Source()
    await writer.write(source.batch(args.batch))  # today's partition made before any window
    alone: list[Window] = []
    building: list[Window] = []
    took = args.seconds
    for n in range(args.builds + 1):
        alone.append(Window(f"alone {n + 1}"))
        progress(f"the writer alone for {max(args.seconds, took):.1f} s ({n + 1}/{args.builds + 1})")
        stop = threading.Event()
        asyncio.get_running_loop().call_later(max(args.seconds, took), stop.set)
        await write_while(writer, source, args.batch, alone[-1], stop)
        if n == args.builds:
            break
        building.append(Window(f"building {n + 1}"))
        progress(f"the writer while the service's build indexes {args.days_per_build} older day(s) ({n + 1})")
        done = threading.Event()
        t0 = time.perf_counter()
        build = asyncio.create_task(asyncio.to_thread(timed_build, dsn, args.days_per_build, done))
        await write_while(writer, source, args.batch, building[-1], done)
        await build
        took = time.perf_counter() - t0
    await conn.close()
    return alone, building


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--builds", type=int, default=3, help="builds, each between two windows of the writer alone")
    ap.add_argument("--days-per-build", type=int, default=2, help="older gaming days each build indexes")
    ap.add_argument("--per-day", type=int, default=300_000, help="events in each older day")
    ap.add_argument("--batch", type=int, default=500, help="events per write (the floor's batch under a backlog)")
    ap.add_argument("--seconds", type=float, default=5.0, help="each window of the writer alone, at least")
    args = ap.parse_args()
    started_on = machine()
    cluster = PgCluster.create(durable=True)
    try:
        cluster.start()
        dsn = cluster.create_database("bench_ts_index")
        older = older_archive(dsn, args.builds * args.days_per_build, args.per_day)
        alone, building = asyncio.run(run(dsn, args))
        with connect(DatabaseSection(dsn=dsn)) as conn:
            assert valid(conn), "the older days' index was not complete after the builds"
    finally:
        cluster.remove()
    spans = TimedCursor.spans
    assert [s[0] for s in spans] == [partition_index(partition_name(d)) for d in older], spans
    print(f"machine: {started_on}")
    print(
        f"{len(older)} older day(s) of {args.per_day:,} events, {args.builds} build(s) of {args.days_per_build}; "
        f"the writer's batches of {args.batch} from {TABLES} tables; PostgreSQL fsync on"
    )
    ratios = []
    for n, b in enumerate(building):
        base = statistics.mean([alone[n].rate(), alone[n + 1].rate()])
        ratios.append(b.rate() / base)
        print(f"  {_said(alone[n])}")
        print(f"  {_said(b)}: {ratios[-1]:.2f}x the windows alone either side ({base:,.0f} events/s)")
    print(f"  {_said(alone[-1])}")
    longest_alone = max(max(w.seconds()) for w in alone)
    longest_building = max(max(w.seconds()) for w in building)
    print(
        f"ingest while building: {statistics.median(ratios):.2f}x the writer alone (median of {len(ratios)} builds, "
        f"baseline: the windows alone either side, same process); longest write {longest_building * 1000:.0f} ms "
        f"while building against {longest_alone * 1000:.0f} ms alone"
    )
    writes = [w for b in building for w in b.writes]
    for name, create, attach, end in spans:
        overlapping = [e - s for s, e in writes if s < end and e > attach]
        print(
            f"  {name}: CREATE INDEX CONCURRENTLY {attach - create:.2f} s, "
            f"ATTACH PARTITION {(end - attach) * 1000:.1f} ms; longest write overlapping the ATTACH "
            f"{max(overlapping, default=0.0) * 1000:.1f} ms ({len(overlapping)} write(s))"
        )


def _said(w: Window) -> str:
    s = w.seconds()
    return (
        f"{w.name}: {w.events:,} events in {len(s)} writes, {w.rate():,.0f} events/s; write p50 "
        f"{statistics.median(s) * 1000:.1f} ms, p99 {percentile(s, 99) * 1000:.1f} ms, longest {max(s) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
