"""`tablectl floor fill-rounds` as a real process when PostgreSQL fails its ts index build: a deadlock with an older
floor service (one that still waits for the build's advisory lock in a blocked `pg_advisory_lock`, as services did
before, holding a snapshot the build's CREATE INDEX CONCURRENTLY must outlive), on a real PostgreSQL cluster.

The order is held, not slept: a writer's open transaction on the day keeps the build waiting until the older
service is blocked on the lock; committed, the build reaches its wait for the older service's snapshot, and
PostgreSQL's deadlock check (deadlock_timeout 100 ms on the database; an hour in the older service's session, so
the check that finds the cycle is the build's) fails the build. The command must say so in one error naming the day,
what PostgreSQL said, what it left and the fix, exit 1, leave no invalid index; a rerun then completes the day.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import psycopg
import pytest
from structlog.testing import capture_logs

from floor.config import DatabaseSection
from floor.db import connect
from floor.schema import migrate, partition_name
from floor.ts_index import LOCK_KEY, IndexBuildFailed, index_beside, index_partitions, partition_index, valid
from tests.floor.conftest import wait_for
from tests.floor.ts_archive import (
    DAYS,
    archive_at_7,
    fill_config,
    fill_rounds,
    fill_rounds_building,
    index_oids,
    indexed,
    lock_holder,
    waiting_on_lock,
)

pytestmark = pytest.mark.floor


def test_fill_rounds_deadlocked_by_an_older_service_says_so_leaves_no_invalid_index_and_a_rerun_completes(
    floor_dsn: str, tmp_path: Path
) -> None:
    archive_at_7(floor_dsn, DAYS, 2_000)
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        migrate(conn)
        conn.execute(f"ALTER DATABASE {conn.info.dbname} SET deadlock_timeout = '100ms'".encode())
        conn.commit()
    config = fill_config(floor_dsn, tmp_path)
    first = partition_name(DAYS[0])
    old_service = psycopg.connect(floor_dsn, autocommit=True)
    old_service.execute("SET deadlock_timeout = '1h'")  # its check never runs here: the build's finds the cycle
    writer = psycopg.connect(floor_dsn)
    writer.execute(f"LOCK TABLE {first} IN ROW EXCLUSIVE MODE".encode())  # an insert's lock, left open
    got: list[object] = []
    try:
        fill = fill_rounds_building(config, floor_dsn, first)
        # The older service blocks on the build's lock, its statement's snapshot held (test code: a thread).
        blocked = threading.Thread(
            target=lambda: got.append(old_service.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,)).fetchone())
        )
        blocked.start()
        wait_for(lambda: waiting_on_lock(writer), 60, "the older service blocked on the lock")
        writer.commit()  # the build goes on, to its wait for the older service's snapshot: the deadlock
        out, err = fill.communicate(timeout=120)
        blocked.join(60)
        # fill-rounds' session ended: the older service got the lock.
        assert len(got) == 1, got
        assert lock_holder(writer) == old_service.info.backend_pid
        old_service.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
    finally:
        writer.close()
        old_service.close()
    assert fill.returncode == 1, (fill.returncode, out, err)
    assert "Traceback" not in err and "a bug" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"tablectl floor fill-rounds: the ts index of {first} was not built: "), err
    assert 'PostgreSQL said "deadlock detected" (SQLSTATE 40P01: Process ' in err, err
    assert f"Its INVALID index {partition_index(first)} was dropped" in err, err
    assert "fill-rounds` again: it resumes from this day" in err and "stop it first" in err, err
    assert "[1/2]" not in out, out  # no day said built
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        # Nothing half-done: no index (invalid or not) on either day, nothing attached, the parent's still invalid.
        assert index_oids(conn) == {} and indexed(conn) == {} and not valid(conn)
    again = fill_rounds(config)
    assert again.returncode == 0, again.stderr
    names = [partition_name(d) for d in DAYS]
    assert [line.split(": built and attached in ")[0] for line in again.stdout.splitlines()[1:3]] == [
        f"[1/2] ts index of {names[0]}",
        f"[2/2] ts index of {names[1]}",
    ], again.stdout
    assert again.stdout.splitlines()[-1].startswith("the events ts index is complete"), again.stdout
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        assert indexed(conn) == {n: partition_index(n) for n in names} and valid(conn)


def test_a_build_cancelled_by_statement_timeout_whose_invalid_index_cannot_be_dropped_says_so(floor_dsn: str) -> None:
    """The statement_timeout cancels the build waiting for a writer's open transaction on the day, and the drop of its
    invalid index, which waits for that writer too: the error says the index is left INVALID and why, the lock is
    let go; the writer gone, the next run drops it and builds every day."""
    archive_at_7(floor_dsn, DAYS, 2_000)
    first = partition_name(DAYS[0])
    with connect(DatabaseSection(dsn=floor_dsn)) as conn, psycopg.connect(floor_dsn) as writer:
        migrate(conn)
        conn.commit()  # the migration's locks let go: the writer's must be the only one in the build's way
        conn.execute("SET statement_timeout = '300ms'")
        writer.execute(f"LOCK TABLE {first} IN ROW EXCLUSIVE MODE".encode())  # an insert's lock, left open
        with pytest.raises(IndexBuildFailed) as failed:
            index_partitions(conn)
        writer.rollback()
        said = str(failed.value)
        assert failed.value.partition == first
        assert said.startswith(f'the ts index of {first} was not built: PostgreSQL said "canceling statement'), said
        assert "(SQLSTATE 57014)" in said, said
        assert f"Its index {partition_index(first)} is left INVALID (dropping it failed too: " in said, said
        assert "the next run drops it and builds it again" in said and "fill-rounds` again" in said, said
        assert lock_holder(conn) is None and set(index_oids(conn)) == {partition_index(first)}
        assert indexed(conn) == {}
        conn.execute("SET statement_timeout = 0")
        assert index_partitions(conn) == 2
        names = [partition_name(d) for d in DAYS]
        assert indexed(conn) == {n: partition_index(n) for n in names} and valid(conn)


async def test_the_service_says_a_failed_build_and_goes_on_archiving(floor_dsn: str) -> None:
    """The service's task (floor.service: `older_days`, may return) meets the same failure: it logs the error with
    the partition and ends, instead of raising it, which stopped the whole service (systemd restarted it, to fail the
    same way while the other session stayed) for a day that is only slower to read without its index; the next start
    builds it."""
    archive_at_7(floor_dsn, DAYS, 2_000)
    first = partition_name(DAYS[0])
    db = DatabaseSection(dsn=floor_dsn)
    with connect(db) as conn:
        migrate(conn)
        conn.execute(f"ALTER DATABASE {conn.info.dbname} SET statement_timeout = '300ms'".encode())
        conn.commit()
    try:
        with psycopg.connect(floor_dsn) as writer, capture_logs() as logs:
            writer.execute(f"LOCK TABLE {first} IN ROW EXCLUSIVE MODE".encode())  # an insert's lock, left open
            await asyncio.wait_for(index_beside(db, asyncio.Event()), 60)  # a hang's guard: it returns
            writer.rollback()
    finally:
        with psycopg.connect(floor_dsn, autocommit=True) as conn:
            conn.execute(f"ALTER DATABASE {conn.info.dbname} RESET statement_timeout".encode())
    said = [e for e in logs if e["event"].startswith("events ts index")]
    assert [(e["event"], e["log_level"], e["partition"]) for e in said] == [
        ("events ts index not built; archiving goes on", "error", first)
    ], said
    assert "(SQLSTATE 57014)" in said[0]["problem"] and "fill-rounds` again" in said[0]["problem"]
    with capture_logs() as logs:
        await asyncio.wait_for(index_beside(db, asyncio.Event()), 60)
    assert [e["event"] for e in logs if e["event"] == "events ts index complete"] == ["events ts index complete"]
    with connect(db) as conn:
        assert valid(conn) and indexed(conn) == {n: partition_index(n) for n in map(partition_name, DAYS)}


def test_fill_rounds_stopped_by_a_statement_timeout_says_so_not_that_the_archive_is_unreachable(
    floor_dsn: str, tmp_path: Path
) -> None:
    """A statement PostgreSQL cancels (here its first, the migration's look at the schema's version, waiting for a
    writer's lock on that table until the database's statement_timeout) is the work stopped, not a dsn to check: exit
    1 and what PostgreSQL said, where fill-rounds said "cannot reach the archive ... check [database] dsn", exit 2."""
    archive_at_7(floor_dsn, DAYS, 200)
    db = DatabaseSection(dsn=floor_dsn)
    with connect(db) as conn:
        migrate(conn)
        conn.commit()
    config = fill_config(floor_dsn, tmp_path)
    with psycopg.connect(floor_dsn) as writer:
        writer.execute(f"ALTER DATABASE {writer.info.dbname} SET statement_timeout = '300ms'".encode())
        writer.commit()
        try:
            writer.execute(b"LOCK TABLE floor_schema IN ACCESS EXCLUSIVE MODE")  # left open while fill-rounds runs
            done = fill_rounds(config)
        finally:
            writer.rollback()
            writer.execute(f"ALTER DATABASE {writer.info.dbname} RESET statement_timeout".encode())
            writer.commit()
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tablectl floor fill-rounds: PostgreSQL stopped its work: "), lines
    assert "(SQLSTATE 57014)" in lines[0] and "cannot reach" not in lines[0] and "Traceback" not in done.stderr
    assert fill_rounds(config).returncode == 0  # the lock gone, the same command does the work
