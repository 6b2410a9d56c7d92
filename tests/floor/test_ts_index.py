"""The events' BRIN index on ts (schema migration 8, floor/ts_index.py) against a real PostgreSQL: an archive at
migration 7 with two days of events migrates at once (the parent's index only), then each older partition gets its
index built concurrently and attached, said in the log; the planner reads a ts range through it; a partition made
afterwards has it from the start; an interrupted build's invalid index is built again. `tablectl floor fill-rounds`,
as a real process, does the same at a terminal, a line a partition, and leaves the partitions to a service that holds
the lock; a service finding the lock held (a real second connection, as fill-rounds holds it) waits for it, builds
only what the other left, and says "complete" itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from structlog.testing import capture_logs

from floor.config import DatabaseSection
from floor.db import connect
from floor.rounds import pending
from floor.schema import LATEST, migrate, partition_ddl, partition_name
from floor.ts_index import (
    LOCK_KEY,
    _index_one,
    index_beside,
    index_partitions,
    older_days,
    partition_index,
    valid,
)
from tests.floor.conftest import wait_for
from tests.floor.ts_archive import (
    BUSY,
    DAYS,
    STILL,
    archive_at_7,
    fill_rounds,
    index_oids,
    indexed,
    lock_holder,
    waiting_on_lock,
)

pytestmark = pytest.mark.floor


def _plan(conn: psycopg.Connection[tuple[object, ...]], day: date) -> str:
    lo = datetime(day.year, day.month, day.day, 9, tzinfo=UTC)
    rows = conn.execute(
        "EXPLAIN SELECT count(*) FROM events WHERE gaming_day = %s AND ts >= %s AND ts < %s",
        (day, lo, lo + timedelta(hours=2)),
    ).fetchall()
    return "\n".join(str(r[0]) for r in rows)


async def test_an_archive_at_7_migrates_at_once_and_each_older_day_is_indexed_beside(floor_dsn: str) -> None:
    archive_at_7(floor_dsn)
    db = DatabaseSection(dsn=floor_dsn)
    with connect(db) as conn:
        assert migrate(conn) == 7
        assert conn.execute("SELECT max(version) FROM floor_schema").fetchone() == (LATEST,) and LATEST == 8
        # The migration read no partition: the parent's index waits, invalid, for the days archived before it.
        assert indexed(conn) == {} and not valid(conn)
        assert "Seq Scan" in _plan(conn, DAYS[1])
    with capture_logs() as logs:
        await older_days(db, asyncio.Event())  # the service's task: the round summary's older days, then the index
    built = [e for e in logs if e["event"] == "events ts index built"]
    names = [partition_name(d) for d in DAYS]
    assert [(e["partition"], e["done"], e["of"]) for e in built] == [(names[0], 1, 2), (names[1], 2, 2)]
    assert logs[-1]["event"] == "events ts index complete"
    with connect(db) as conn:
        assert indexed(conn) == {n: partition_index(n) for n in names} and valid(conn)
        conn.execute("ANALYZE events")
        plan = _plan(conn, DAYS[1])
        assert f"Bitmap Index Scan on {partition_index(names[1])}" in plan, plan
        # Found through it: the two hours' events, 2 s apart from 06:00 (event i at 06:00 + 2i s).
        lo = datetime(2026, 11, 21, 9, tzinfo=UTC)
        row = conn.execute(
            "SELECT count(*) FROM events WHERE gaming_day = %s AND ts >= %s AND ts < %s",
            (DAYS[1], lo, lo + timedelta(hours=2)),
        ).fetchone()
        assert row == (3600,)
        # Nothing left: the next start's run is one query, and says nothing.
        assert index_partitions(conn) == 0 and pending(conn) == []
        # A day made afterwards (as the writer makes one) has the index from the start, attached.
        new = date(2026, 11, 22)
        conn.execute(partition_ddl(new))
        assert partition_name(new) in indexed(conn) and valid(conn)
        assert index_partitions(conn) == 0


def test_a_fresh_archive_has_a_valid_index_and_each_new_day_gets_it(floor_dsn: str) -> None:
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        assert migrate(conn) == 0
        assert valid(conn)  # no partition to wait for
        conn.execute(partition_ddl(DAYS[0]))
        conn.commit()
        assert set(indexed(conn)) == {partition_name(DAYS[0])} and valid(conn)


def test_a_stop_leaves_the_rest_for_the_next_start_and_an_interrupted_build_is_built_again(floor_dsn: str) -> None:
    archive_at_7(floor_dsn)
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        migrate(conn)
        assert index_partitions(conn, stopping=lambda: True) == 0  # the service stopping as it starts
        assert indexed(conn) == {}
        # A build interrupted mid-way: CREATE INDEX CONCURRENTLY waits for a writer's open transaction on the day,
        # and is cancelled (its statement_timeout) as a stop or a crash would, leaving its index invalid.
        first = partition_name(DAYS[0])
        with psycopg.connect(floor_dsn) as writing, psycopg.connect(floor_dsn, autocommit=True) as building:
            writing.execute(f"DELETE FROM {first} WHERE seq = 1".encode())  # uncommitted: holds the day
            building.execute("SET statement_timeout = '300ms'")
            with pytest.raises(psycopg.errors.QueryCanceled):
                building.execute(
                    f"CREATE INDEX CONCURRENTLY {partition_index(first)} ON {first} USING brin (ts)".encode()
                )
            writing.rollback()
        left = conn.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass", (partition_index(first),)
        ).fetchone()
        assert left == (False,)
        said: list[tuple[int, int, str]] = []
        assert index_partitions(conn, lambda done, of, name, _s: said.append((done, of, name))) == 2
        assert said == [(1, 2, first), (2, 2, partition_name(DAYS[1]))]
        assert set(indexed(conn)) == {first, partition_name(DAYS[1])} and valid(conn)


def test_fill_rounds_indexes_the_older_days_at_a_terminal_and_leaves_them_to_a_service_building_them(
    floor_dsn: str, tmp_path: Path
) -> None:
    archive_at_7(floor_dsn)
    config = tmp_path / "floor.toml"
    config.write_text(f'name = "f"\n[database]\ndsn = "{floor_dsn}"\n[mqtt]\nbroker = "mqtt://127.0.0.1:1"\n')
    names = [partition_name(d) for d in DAYS]
    complete = "the events ts index is complete: every gaming day's partition has its index, valid and attached"
    # A service building the index holds the lock: the command migrates, says so and leaves the days to it.
    with psycopg.connect(floor_dsn, autocommit=True) as service:
        service.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        run = fill_rounds(config)
        assert run.returncode == 0, run.stderr
        assert run.stdout.splitlines() == [
            "the round summary is complete: no gaming day waits to be summarised",
            "the events ts index: a floor service (or another fill-rounds) is building it now (2 day(s) to index): it "
            'goes on there, and a service logs "events ts index complete" when it is (or run fill-rounds again to see '
            "it)",
        ]
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        assert conn.execute("SELECT max(version) FROM floor_schema").fetchone() == (LATEST,)
        assert indexed(conn) == {} and not valid(conn)
    run = fill_rounds(config)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert [line.split(": built and attached in ")[0] for line in lines[1:3]] == [
        f"[1/2] ts index of {names[0]}",
        f"[2/2] ts index of {names[1]}",
    ]
    assert lines[0].startswith("the round summary is complete") and lines[3:] == [complete]
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        assert indexed(conn) == {n: partition_index(n) for n in names} and valid(conn)
    # Run again: nothing to do, and it says the index is complete.
    again = fill_rounds(config)
    assert again.returncode == 0 and again.stdout.splitlines()[1:] == [complete], again.stdout


def _said(logs: Sequence[Mapping[str, Any]], event: str) -> bool:
    return any(e["event"] == event for e in logs)


async def test_a_service_finding_another_building_waits_and_says_complete_without_building_again(
    floor_dsn: str,
) -> None:
    archive_at_7(floor_dsn)
    db = DatabaseSection(dsn=floor_dsn)
    with connect(db) as conn:
        migrate(conn)
    names = [partition_name(d) for d in DAYS]
    # The other process (as `floor fill-rounds` would) holds the lock on a connection of its own.
    with psycopg.connect(floor_dsn, autocommit=True) as other, capture_logs() as logs:
        other.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        service = asyncio.create_task(older_days(db, asyncio.Event()))  # the service's task, as it runs it
        await asyncio.to_thread(wait_for, lambda: _said(logs, BUSY), 30, "the service waiting for the lock")
        assert not service.done()
        # The other builds every day (its own try-lock nests in the held one) and lets the lock go.
        assert index_partitions(other) == 2
        built_by_other = index_oids(other)
        assert set(built_by_other) == {partition_index(n) for n in names}
        other.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
        await asyncio.wait_for(service, 30)
    ts = [e for e in logs if e["event"].startswith("events ts index")]
    # Between the two, the other's progress may be said (a line when its count of days left changes): never a build.
    assert ts[0]["event"] == BUSY and ts[-1]["event"] == "events ts index complete", ts
    assert {e["event"] for e in ts[1:-1]} <= {STILL}, ts
    assert ts[0]["partitions"] == 2 and ts[0]["then"] == "waiting for it to finish"
    with connect(db) as conn:
        # Not built twice: the very indexes the other built, attached, and the parent's valid.
        assert index_oids(conn) == built_by_other
        assert indexed(conn) == {n: partition_index(n) for n in names} and valid(conn)


async def test_a_service_waiting_says_the_others_progress_and_builds_only_what_it_left(floor_dsn: str) -> None:
    archive_at_7(floor_dsn)
    db = DatabaseSection(dsn=floor_dsn)
    with connect(db) as conn:
        migrate(conn)
    names = [partition_name(d) for d in DAYS]
    with psycopg.connect(floor_dsn, autocommit=True) as other, capture_logs() as logs:
        other.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        service = asyncio.create_task(index_beside(db, asyncio.Event(), wait_s=0.05))
        await asyncio.to_thread(wait_for, lambda: _said(logs, BUSY), 30, "the service waiting for the lock")
        _index_one(other, names[0])  # the other builds the first day, then is interrupted (Ctrl-C, a crash)
        first = index_oids(other)[partition_index(names[0])]

        def progress_said() -> bool:
            return any(e["event"] == STILL and e["partitions_left"] == 1 for e in logs)

        await asyncio.to_thread(wait_for, progress_said, 30, "the service saying the other's progress")
        other.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
        await asyncio.wait_for(service, 30)
    built = [(e["partition"], e["done"], e["of"]) for e in logs if e["event"] == "events ts index built"]
    assert built == [(names[1], 1, 1)]  # the second day only: the first was the other's
    assert logs[-1]["event"] == "events ts index complete"
    with connect(db) as conn:
        assert index_oids(conn)[partition_index(names[0])] == first
        assert indexed(conn) == {n: partition_index(n) for n in names} and valid(conn)


async def test_a_stop_ends_the_wait_without_saying_complete(floor_dsn: str) -> None:
    archive_at_7(floor_dsn)
    db = DatabaseSection(dsn=floor_dsn)
    with connect(db) as conn:
        migrate(conn)
    stop = asyncio.Event()
    with psycopg.connect(floor_dsn, autocommit=True) as other, capture_logs() as logs:
        other.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        service = asyncio.create_task(index_beside(db, stop, wait_s=0.05))
        await asyncio.to_thread(wait_for, lambda: _said(logs, BUSY), 30, "the service waiting for the lock")
        stop.set()
        await asyncio.wait_for(service, 30)
        assert not waiting_on_lock(other)
    assert [e["event"] for e in logs if e["event"].startswith("events ts index")] == [BUSY]
    with connect(db) as conn:
        assert indexed(conn) == {} and not valid(conn)


async def test_a_stop_during_the_wait_ends_it_at_once_not_at_the_next_try(floor_dsn: str) -> None:
    """The lock tried an hour apart: a stop said while the other holds it ends the service's task before that next
    try, the lock still the other's, nothing more said. Before, the wait was a statement blocked until its
    lock_timeout (the poll): the stop was seen only after it, a second late at the service's pace, an hour here."""
    archive_at_7(floor_dsn)
    db = DatabaseSection(dsn=floor_dsn)
    with connect(db) as conn:
        migrate(conn)
    stop = asyncio.Event()
    with psycopg.connect(floor_dsn, autocommit=True) as other, capture_logs() as logs:
        other.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        service = asyncio.create_task(index_beside(db, stop, wait_s=3600))
        await asyncio.to_thread(wait_for, lambda: _said(logs, BUSY), 30, "the service waiting for the lock")
        stop.set()
        # A hang's guard, not a measure: the try that would have seen the stop is an hour away.
        await asyncio.wait_for(service, 30)
        assert lock_holder(other) == other.info.backend_pid and not waiting_on_lock(other)
    assert [e["event"] for e in logs if e["event"].startswith("events ts index")] == [BUSY]
    with connect(db) as conn:
        assert indexed(conn) == {} and not valid(conn)


async def test_the_others_builds_go_through_while_the_service_waits(floor_dsn: str) -> None:
    """The other's CREATE INDEX CONCURRENTLY waits for every snapshot older than its own to end. Before, the
    service waited in a blocked pg_advisory_lock, which holds one: the two deadlocked, and PostgreSQL broke it at
    deadlock_timeout by failing one of them (the service's wait, which stopped the service, or the other's build).
    At the default 1 s, the length of the service's own wait, that was a race; at 100 ms (a DBA may set it lower)
    it was certain. Now the service tries the lock between pauses and holds no snapshot while it waits."""
    archive_at_7(floor_dsn)
    db = DatabaseSection(dsn=floor_dsn)
    with connect(db) as conn:
        migrate(conn)
        conn.execute(f"ALTER DATABASE {conn.info.dbname} SET deadlock_timeout = '100ms'".encode())
        conn.commit()
    names = [partition_name(d) for d in DAYS]
    with psycopg.connect(floor_dsn, autocommit=True) as other, capture_logs() as logs:
        other.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        service = asyncio.create_task(index_beside(db, asyncio.Event()))  # at the service's own pace
        await asyncio.to_thread(wait_for, lambda: _said(logs, BUSY), 30, "the service waiting for the lock")
        for name in names:
            await asyncio.to_thread(_index_one, other, name)
        other.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
        await asyncio.wait_for(service, 30)
    events = [e["event"] for e in logs if e["event"].startswith("events ts index")]
    assert events[0] == BUSY and events[-1] == "events ts index complete" and set(events[1:-1]) <= {STILL}, logs
    with connect(db) as conn:
        assert indexed(conn) == {n: partition_index(n) for n in names} and valid(conn)
