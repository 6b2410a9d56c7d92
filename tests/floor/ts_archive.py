"""An archive as a floor at schema migration 7 left it (gaming days of events, no ts index yet) and what the tests
of the ts index (floor/ts_index.py) read back from PostgreSQL's catalogue: test_ts_index.py's in-process tests and
test_ts_index_processes.py's real `tablectl floor` and `tablectl floor fill-rounds` processes share them."""

from __future__ import annotations

import subprocess
import uuid
from datetime import UTC, date, datetime
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from floor.schema import migrate, partition_ddl
from floor.ts_index import INDEX, LOCK_KEY
from tests.floor.conftest import ROOT, wait_for
from tests.tablectl_runs import TABLECTL, tablectl

DAYS = (date(2026, 11, 20), date(2026, 11, 21))
PER_DAY = 40_000  # enough pages (BRIN ranges of 128) that a few hours' range is cheaper through the index
BUSY = "events ts index: another floor service or `floor fill-rounds` is building it"
STILL = "events ts index: still waiting for the other process building it"


def archive_at_7(dsn: str, days: tuple[date, ...] = DAYS, per_day: int = PER_DAY) -> None:
    """An archive as a floor at migration 7 left it: gaming days of events, appended in ts order as the writer
    appends them (a round's events a few seconds apart). `dsn`'s database, fresh and unused, is made again as a copy
    of a template filled once a process for these days (CREATE DATABASE ... TEMPLATE copies its files, statistics
    included): filling 80,000 events took a second and more each time, five on a loaded machine."""
    info = conninfo_to_dict(dsn)
    key = (str(info["host"]), str(info["port"]), days, per_day)
    if key not in _TEMPLATES:
        template = f"ts_archive_{len(_TEMPLATES)}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(make_conninfo(dsn, dbname="postgres"), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {template}".encode())
        _fill(make_conninfo(dsn, dbname=template), days, per_day)
        _TEMPLATES[key] = template
    with psycopg.connect(make_conninfo(dsn, dbname="postgres"), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {info['dbname']}".encode())
        admin.execute(f"CREATE DATABASE {info['dbname']} TEMPLATE {_TEMPLATES[key]}".encode())


# The template database filled for each cluster (host, port), days and events a day, in this process.
_TEMPLATES: dict[tuple[str, str, tuple[date, ...], int], str] = {}


def _fill(dsn: str, days: tuple[date, ...], per_day: int) -> None:
    with psycopg.connect(dsn) as conn:
        migrate(conn, upto=7)
        for day in days:
            conn.execute(partition_ddl(day))
            start = datetime(day.year, day.month, day.day, 6, tzinfo=UTC)
            conn.execute(
                "INSERT INTO events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type,"
                " payload, replayed) SELECT %s, 't' || (i %% 10), i, %s || i, 'b1', %s + i * interval '2 s', '',"
                " 'r' || (i / 20), 'wager.accepted', '{\"seat\": 1, \"amount\": 500}', false"
                " FROM generate_series(1, %s) i",
                (day, f"{day}-", start, per_day),
            )
        conn.execute("ANALYZE events")


def indexed(conn: psycopg.Connection[tuple[object, ...]]) -> dict[str, str]:
    """Each partition of `events` and the index attached to the parent's BRIN index on it."""
    rows = conn.execute(
        "SELECT t.relname, c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
        " JOIN pg_index x ON x.indexrelid = c.oid JOIN pg_class t ON t.oid = x.indrelid"
        " WHERE i.inhparent = %s::regclass AND x.indisvalid",
        (INDEX,),
    ).fetchall()
    return {str(t): str(c) for t, c in rows}


def waiting_on_lock(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    """Whether a backend is blocked on the build's advisory lock (a key under 2^32: objid is the key, classid 0)."""
    row = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = %s AND NOT granted",
        (LOCK_KEY,),
    ).fetchone()
    return row is not None and int(str(row[0])) > 0


def lock_holder(conn: psycopg.Connection[tuple[object, ...]]) -> int | None:
    """The backend pid holding the build's advisory lock, if one does."""
    row = conn.execute(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = %s AND granted",
        (LOCK_KEY,),
    ).fetchone()
    return int(str(row[0])) if row else None


def build_pid(dsn: str, partition: str) -> int | None:
    """The backend running a CREATE INDEX CONCURRENTLY of `partition` (waiting on a writer, here), if one is."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT pid FROM pg_stat_progress_create_index WHERE relid = %s::regclass", (partition,)
        ).fetchone()
        return int(str(row[0])) if row else None


def invalid_indexes(conn: psycopg.Connection[tuple[object, ...]]) -> list[str]:
    """The partitions' ts indexes left INVALID (an interrupted CONCURRENTLY build's)."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid"
        " WHERE c.relname LIKE 'events\\_2%\\_ts\\_brin' AND NOT x.indisvalid ORDER BY 1"
    ).fetchall()
    return [str(r[0]) for r in rows]


def index_oids(conn: psycopg.Connection[tuple[object, ...]]) -> dict[str, int]:
    """Each partition's ts index and its oid: an index built again is another oid."""
    rows = conn.execute("SELECT relname, oid FROM pg_class WHERE relname LIKE 'events\\_2%\\_ts\\_brin'").fetchall()
    return {str(name): int(str(oid)) for name, oid in rows}


def fill_config(dsn: str, tmp: Path) -> Path:
    """A FLOOR.toml for `fill-rounds` alone (it reads the archive; its broker is never dialled)."""
    config = tmp / "floor.toml"
    config.write_text(f'name = "f"\n[database]\ndsn = "{dsn}"\n[mqtt]\nbroker = "mqtt://127.0.0.1:1"\n')
    return config


def fill_rounds(config: Path) -> subprocess.CompletedProcess[str]:
    """`tablectl floor --config F fill-rounds` run to its end, as an operator runs it."""
    return tablectl("floor", "--config", config, "fill-rounds")


def fill_rounds_started(config: Path) -> subprocess.Popen[str]:
    """`tablectl floor --config F fill-rounds` started, its output piped."""
    return subprocess.Popen(
        [*TABLECTL, "floor", "--config", str(config), "fill-rounds"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def fill_rounds_building(config: Path, dsn: str, partition: str) -> subprocess.Popen[str]:
    """`tablectl floor --config F fill-rounds` started, returned once it is building `partition`'s index."""
    fill = fill_rounds_started(config)
    wait_for(lambda: build_pid(dsn, partition) is not None, 60, f"fill-rounds building {partition}'s index")
    return fill
