"""How long a floor service's stop (SIGTERM, as systemd sends it) takes while the service builds an older day's ts
index (floor/ts_index.py), or with `--step summary` while it summarises an older day's rounds (floor/rounds.py), this
checkout against a baseline checkout's, run alternately in the same conditions.

A real PostgreSQL cluster (durable: fsync on, this machine's disk) holds a template archive as migration 7 left it,
then migrated to 8: one older gaming day of N events, unindexed. Each run copies it to a fresh database, starts a
checkout's real `tablectl floor` on it (its own .venv, its own code; a broker that never answers, which the
older-days task does not need), waits for the day's CREATE INDEX CONCURRENTLY to show in
pg_stat_progress_create_index, sends SIGTERM and times the process's exit. Printed per run: each side's stop time,
whether the day's index was left built (the stop waited for it) or not, and the ratio this/baseline; then the
medians. Before the fix a stop waited for the build (on a big day, minutes: past systemd's TimeoutStopSec).

`--step summary`: the template is an archive as migration 6 left it (the day's rounds not summarised), migrated to 8
(the day pending), its events in `--tables` tables (one summary transaction each); the stop is sent once a table's
summary statement shows in pg_stat_activity, and "left" says whether the day was left pending (the stop did not wait
for the whole day) and how many of its round-days were committed. `--step list`: the same archive, the stop sent once
the summary's first statement, the day's table list (a scan of the day), shows active.

Run:  .venv/bin/python bench/ts_index_stop.py --base /path/to/baseline-checkout [--per-day 2000000] [--runs 3]
      [--step summary|list --tables 4]
"""

from __future__ import annotations

import argparse
import signal
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import psycopg
from benchlib import machine, print_medians, progress, spawn_service
from older_day import insert_older_day

from floor.pgcluster import PgCluster
from floor.schema import migrate, partition_name
from floor.ts_index import partition_index

HERE = Path(__file__).resolve().parents[1]
DAY = date(2026, 1, 1)


@dataclass(frozen=True, slots=True)
class Stop:
    seconds: float
    left: str  # what the day was left with: "built" (the stop waited for the build to finish) or not; pending or not
    status: int


def template(cluster: PgCluster, per_day: int, step: str = "index", tables: int = 50) -> str:
    """The archive every run copies: one older day of `per_day` events in `tables` tables, migrated to 8 (the day
    unindexed; with step "summary", archived at 6: the day also pending)."""
    name = "tsstop_template"
    with psycopg.connect(cluster.dsn(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}".encode())
    progress(f"older gaming day {DAY}: {per_day:,} events")
    with psycopg.connect(cluster.dsn(name)) as conn:
        migrate(conn, upto=7 if step == "index" else 6)
        insert_older_day(conn, DAY, per_day, tables)
        conn.commit()
        migrate(conn)
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE events")
    return name


def summarising(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%INSERT INTO round_days%'"
        " AND pid <> pg_backend_pid()"
    ).fetchone()
    return row is not None and int(str(row[0])) > 0


def listing(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT DISTINCT table_id FROM%'"
        " AND pid <> pg_backend_pid()"
    ).fetchone()
    return row is not None and int(str(row[0])) > 0


def building(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_progress_create_index WHERE relid = %s::regclass", (partition_name(DAY),)
    ).fetchone()
    return row is not None and int(str(row[0])) > 0


# The point of the older days' work each --step sends the stop at, as seen from another session.
REACHED = {"index": building, "summary": summarising, "list": listing}


def stop_once(cluster: PgCluster, source: str, checkout: Path, tmp: Path, step: str = "index") -> Stop:
    """A fresh copy of the template, `checkout`'s floor started on it, stopped once its build is under way."""
    name = "tsstop_" + uuid.uuid4().hex[:8]
    with psycopg.connect(cluster.dsn(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name} TEMPLATE {source} STRATEGY FILE_COPY".encode())
    dsn = cluster.dsn(name)
    config = tmp / f"{name}.toml"
    config.write_text(
        f'name = "bench"\n[database]\ndsn = "{dsn}"\n[mqtt]\nbroker = "mqtt://127.0.0.1:1"\nprefix = "{name}"\n'
    )
    with (tmp / f"{name}.log").open("wb") as out:
        proc = spawn_service(checkout, "floor", config, out)
        try:
            deadline = time.monotonic() + 120
            with psycopg.connect(dsn, autocommit=True) as watch:  # one session: a poll is a query, not a connection
                while not REACHED[step](watch):
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"{checkout}'s floor never built (exit {proc.poll()}): see {out.name}")
                    time.sleep(0.01)
            t0 = time.perf_counter()
            proc.send_signal(signal.SIGTERM)
            status = proc.wait(timeout=600)
            seconds = time.perf_counter() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    with psycopg.connect(dsn) as conn:
        left = index_left(conn) if step == "index" else summary_left(conn)
    with psycopg.connect(cluster.dsn(), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {name}".encode())
    return Stop(seconds, left, status)


def index_left(conn: psycopg.Connection[tuple[object, ...]]) -> str:
    row = conn.execute(
        "SELECT x.indisvalid FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid WHERE c.relname = %s",
        (partition_index(partition_name(DAY)),),
    ).fetchone()
    return f"the index left {'built' if row and row[0] else 'unbuilt'}"


def summary_left(conn: psycopg.Connection[tuple[object, ...]]) -> str:
    row = conn.execute(
        "SELECT (SELECT count(*) FROM round_days_pending), (SELECT count(*) FROM round_days WHERE gaming_day = %s)",
        (DAY,),
    ).fetchone()
    pend, rows = (int(str(v)) for v in row) if row else (0, 0)
    return f"the day left {'pending' if pend else 'summarised'}, {rows:,} round-days committed"


def said(stop: Stop) -> str:
    return f"{stop.seconds:.2f} s ({stop.left}, exit {stop.status})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the baseline checkout (with its own .venv)")
    parser.add_argument("--per-day", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--step", choices=tuple(REACHED), default="index", help="the step the stop reaches")
    parser.add_argument("--tables", type=int, default=50, help="the tables the day's events are in")
    args = parser.parse_args()
    print(f"# {args.step} stop: {args.per_day:,} events in the day, {args.tables} table(s); {machine()}")
    cluster = PgCluster.create(durable=True)
    ratios: list[float] = []
    times: dict[str, list[float]] = {"baseline": [], "this": []}
    try:
        cluster.start()
        source = template(cluster, args.per_day, args.step, args.tables)
        with tempfile.TemporaryDirectory(prefix="tsstop-") as tmp:
            for run in range(1, args.runs + 1):
                # Alternate which goes first, so a load that rises or falls over a run is shared.
                order = [("baseline", args.base), ("this", HERE)]
                if run % 2 == 0:
                    order.reverse()
                stops = {side: stop_once(cluster, source, path, Path(tmp), args.step) for side, path in order}
                load = Path("/proc/loadavg").read_text().split()[0]
                for side, stop in stops.items():
                    times[side].append(stop.seconds)
                ratios.append(stops["this"].seconds / stops["baseline"].seconds)
                print(
                    f"run {run} (load {load}): baseline {said(stops['baseline'])}, this {said(stops['this'])};"
                    f" this/baseline {ratios[-1]:.3f}"
                )
    finally:
        cluster.stop()
        cluster.remove()
    print_medians(times, ratios)


if __name__ == "__main__":
    main()
