"""`tablectl floor fill-rounds` as a real process when its ts index build fails in the two states its error names
besides a dropped invalid index (floor/ts_index.py `_left`), each driven for real on a real PostgreSQL cluster:

- built but not attached: another session holds `events` itself (ONLY the parent, as a long report's transaction
  or a DDL would) and the database's lock_timeout is low, so the day's CREATE INDEX CONCURRENTLY (which never
  touches the parent) succeeds and its ATTACH, which needs the parent's ACCESS SHARE, fails on the lock;
- connection lost: the build's backend is ended by pg_terminate_backend (an administrator, a server restart)
  while its CREATE INDEX CONCURRENTLY waits on a writer's open transaction on the day.

Each must exit 1 with one line saying the day, what PostgreSQL said and what it left, and a rerun must complete the
day (the built index attached as it is, not built again; the invalid one dropped and built again).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg
import pytest

from floor.config import DatabaseSection
from floor.db import connect
from floor.schema import migrate, partition_name
from floor.ts_index import partition_index, valid
from tests.floor.ts_archive import (
    DAYS,
    archive_at_7,
    build_pid,
    fill_config,
    fill_rounds,
    fill_rounds_building,
    index_oids,
    indexed,
    invalid_indexes,
    lock_holder,
)

pytestmark = pytest.mark.floor
PREFIX = "tablectl floor fill-rounds: the ts index of {} was not built: PostgreSQL said "


def _migrated(dsn: str) -> None:
    archive_at_7(dsn, DAYS, 2_000)
    with connect(DatabaseSection(dsn=dsn)) as conn:
        migrate(conn)  # before the other session's lock: fill-rounds' migration is not what waits on it


def _reran_completes(config: Path, dsn: str) -> None:
    again = fill_rounds(config)
    assert again.returncode == 0, again.stderr
    names = [partition_name(d) for d in DAYS]
    assert [line.split(": built and attached in ")[0] for line in again.stdout.splitlines() if line[:1] == "["] == [
        f"[1/2] ts index of {names[0]}",
        f"[2/2] ts index of {names[1]}",
    ], again.stdout
    assert again.stdout.splitlines()[-1].startswith("the events ts index is complete"), again.stdout
    with psycopg.connect(dsn) as conn:
        assert indexed(conn) == {n: partition_index(n) for n in names} and valid(conn)
        assert invalid_indexes(conn) == []


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "cannot reach" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "[1/2]" not in done.stdout, done.stdout  # no day said built
    return lines[0]


def test_fill_rounds_whose_attach_fails_says_built_but_not_attached_and_a_rerun_attaches_it(
    floor_dsn: str, tmp_path: Path
) -> None:
    _migrated(floor_dsn)
    first = partition_name(DAYS[0])
    config = fill_config(floor_dsn, tmp_path)
    with psycopg.connect(floor_dsn, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {admin.info.dbname} SET lock_timeout = '300ms'".encode())
    try:
        with psycopg.connect(floor_dsn) as holder:
            holder.execute(b"LOCK TABLE ONLY events IN ACCESS EXCLUSIVE MODE")  # left open while fill-rounds runs
            done = fill_rounds(config)
            holder.rollback()
    finally:
        with psycopg.connect(floor_dsn, autocommit=True) as admin:
            admin.execute(f"ALTER DATABASE {admin.info.dbname} RESET lock_timeout".encode())
    line = _one_line(done)
    assert line.startswith(PREFIX.format(first) + '"canceling statement due to lock timeout" (SQLSTATE 55P03)'), line
    assert f"Its index {partition_index(first)} is built but not attached: the next run attaches it." in line, line
    assert "fill-rounds` again: it resumes from this day" in line, line
    assert "another session is in its way (holding a lock it needs, or in a deadlock with it: " in line, line
    with psycopg.connect(floor_dsn) as conn:
        assert lock_holder(conn) is None  # let go: the rerun (or a service) takes it
        built = index_oids(conn)
        assert list(built) == [partition_index(first)] and indexed(conn) == {} and invalid_indexes(conn) == []
    _reran_completes(config, floor_dsn)
    with psycopg.connect(floor_dsn) as conn:
        assert index_oids(conn)[partition_index(first)] == built[partition_index(first)]  # attached, not rebuilt


def test_fill_rounds_whose_connection_is_lost_says_so_and_a_rerun_builds_the_day_again(
    floor_dsn: str, tmp_path: Path
) -> None:
    _migrated(floor_dsn)
    first = partition_name(DAYS[0])
    config = fill_config(floor_dsn, tmp_path)
    with psycopg.connect(floor_dsn) as writer:
        writer.execute(f"LOCK TABLE {first} IN ROW EXCLUSIVE MODE".encode())  # an insert's lock, left open
        fill = fill_rounds_building(config, floor_dsn, first)
        writer.execute("SELECT pg_terminate_backend(%s)", (build_pid(floor_dsn, first),))
        out, err = fill.communicate(timeout=120)
        # The session went with its advisory lock, and left its index INVALID (it waited on the writer, still open).
        assert lock_holder(writer) is None
        assert invalid_indexes(writer) == [partition_index(first)], invalid_indexes(writer)
        writer.rollback()
    line = _one_line(subprocess.CompletedProcess(fill.args, fill.returncode, out, err))
    assert line.startswith(PREFIX.format(first) + '"terminating connection due to administrator command"'), line
    assert "(SQLSTATE 57P01)" in line, line
    assert "The connection was lost, so its index may be left INVALID: the next run drops it and builds it" in line
    assert "fill-rounds` again: it resumes from this day" in line, line
    # No other session is in its way: what ended the connection is in the server's log, not a session to stop.
    assert "stop it first" not in line and "If the connection is lost again, PostgreSQL's log says why" in line, line
    _reran_completes(config, floor_dsn)
