"""Sustained archive ingest of `tablectl floor`: events per second from many simulated publishers, through a real
mosquitto into a real PostgreSQL (durable: fsync on, on this machine's disk), against that cluster's own commit rate.

Publishers: P processes, each the tables T/P of a floor, publish contract events (QoS 1, seq from 1 per table) as
fast as the broker takes them. The floor service runs as a real `tablectl floor` process; the figure is the events
archived per second from the first publish to the last event committed. The writer alone (the archive's batches
on one connection, no broker) is timed too, and the baseline is one-row INSERT + COMMIT transactions per second on
the same cluster: what one commit per event would reach. What the per-round summary costs the writer (its statement
trigger on `events`, floor/rounds.py) is paired in the same process: the writer alone alternately with that trigger
enabled and disabled, on fresh tables each run, with the trigger's own time from pg_stat_user_functions (the disk's
fsync makes the runs' rates vary far more than the trigger does; its time does not).

Run:  .venv/bin/python bench/floor_ingest.py [--tables 500] [--events 200000] [--publishers 4] [--pairs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from tempfile import TemporaryDirectory

import paho.mqtt.client as paho
import psycopg
from benchlib import machine, mosquitto, progress
from paho.mqtt.enums import CallbackAPIVersion

from floor.archive import ArchiveWriter, AsyncConn, load_state
from floor.config import DatabaseSection, GamingDaySection
from floor.db import async_connect, connect
from floor.messages import Incoming, parse
from floor.pgcluster import PgCluster
from floor.schema import migrate
from floor.ts_index import INDEX as TS_INDEX

PREFIX = "benchfloor"
TRIGGER_ON = "ALTER TABLE events ENABLE TRIGGER events_round_days"
TRIGGER_OFF = "ALTER TABLE events DISABLE TRIGGER events_round_days"
ROOT = Path(__file__).resolve().parents[1]


def event(table: str, seq: int, boot: str) -> dict[str, object]:
    """A settlement-sized event, as a table publishes one."""
    return {
        "event_id": uuid.uuid4().hex,
        "boot_id": boot,
        "seq": seq,
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
        "table_id": table,
        "round_id": f"{table}-r{seq // 25 + 1:06d}",
        "type": "three_card_bonus.settled",
        "rule": "655a.11(i)(2)(ii)",
        "payload": {"seat": seq % 6 + 1, "amount": 500, "hand": "high_card", "outcome": "lose", "paid": 0},
    }


def publisher(broker_port: int, tables: list[str], per_table: int, offset: int) -> None:
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-pub-{uuid.uuid4().hex[:8]}")
    client.max_inflight_messages_set(1000)
    client.max_queued_messages_set(0)
    client.connect("127.0.0.1", broker_port)
    client.loop_start()
    boot = uuid.uuid4().hex
    infos = []
    for seq in range(offset + 1, offset + per_table + 1):
        for table in tables:
            payload = json.dumps(event(table, seq, boot), separators=(",", ":"))
            infos.append(client.publish(f"{PREFIX}/{table}/event", payload, qos=1))
    for info in infos:
        info.wait_for_publish(timeout=600)
    client.disconnect()
    client.loop_stop()


def commit_rate(dsn: str, commits: int = 500) -> float:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_commit (n int)")
        start = time.perf_counter()
        for n in range(commits):
            conn.execute("INSERT INTO bench_commit VALUES (%s)", (n,))
        return commits / (time.perf_counter() - start)


async def writer_rate(dsn: str, events: int, batch: int, prefix: str = "w") -> tuple[float, float]:
    """Events/s of the writer alone on tables `{prefix}0`..`{prefix}49`, and the summary trigger's share of its time."""
    db = DatabaseSection(dsn=dsn)
    conn = await async_connect(db)
    writer = ArchiveWriter(conn, GamingDaySection(), await load_state(conn))
    boot = uuid.uuid4().hex
    messages: list[Incoming] = []
    for seq in range(1, events // 50 + 1):
        for t in range(50):
            table = f"{prefix}{t}"
            m = parse(PREFIX, f"{PREFIX}/{table}/event", json.dumps(event(table, seq, boot)).encode())
            assert isinstance(m, Incoming)
            messages.append(m)
    before = await trigger_seconds(conn)
    start = time.perf_counter()
    for i in range(0, len(messages), batch):
        await writer.write(messages[i : i + batch])
    elapsed = time.perf_counter() - start
    spent = await trigger_seconds(conn) - before
    await conn.close()
    return len(messages) / elapsed, spent / elapsed


async def trigger_seconds(conn: AsyncConn) -> float:
    """The summary trigger's time so far (track_functions; the connection is autocommit): a backend flushes its
    counts to the shared ones only going idle, at most once a second unless forced, so this one is forced first."""
    await conn.execute("SELECT pg_stat_force_next_flush()")
    cur = await conn.execute(
        "SELECT coalesce(sum(total_time), 0) FROM pg_stat_user_functions WHERE funcname = 'round_days_add'"
    )
    row = await cur.fetchone()
    return float(row[0]) / 1000 if row else 0.0


def summary_cost(dsn: str, events: int, batch: int, pairs: int) -> tuple[list[float], list[float], float]:
    """The writer alone with the summary's trigger and without it, alternating (`pairs` of each, fresh tables each
    run): each run's events/s, and the trigger's share of the with-runs' time (their median)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ALTER DATABASE bench_floor SET track_functions = 'pl'")
    with_: list[float] = []
    without: list[float] = []
    shares: list[float] = []
    for n in range(pairs):
        order = ((True, with_), (False, without))
        for on, rates in order if n % 2 == 0 else order[::-1]:  # ABBA: a drift over the runs favours neither
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(TRIGGER_ON if on else TRIGGER_OFF)
            progress(f"the writer alone {'with' if on else 'without'} the round summary ({n + 1}/{pairs})")
            rate, share = asyncio.run(writer_rate(dsn, events, batch, f"w{n}{'s' if on else 'n'}-"))
            rates.append(rate)
            if on:
                shares.append(share)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(TRIGGER_ON)
    return with_, without, statistics.median(shares)


INDEX_ON = f"CREATE INDEX IF NOT EXISTS {TS_INDEX} ON events USING brin (ts) WITH (autosummarize = on)"
INDEX_OFF = f"DROP INDEX IF EXISTS {TS_INDEX}"


def index_cost(dsn: str, events: int, batch: int, pairs: int) -> tuple[list[float], list[float]]:
    """The writer alone with the events' BRIN index on ts (migration 8) and without it (dropped, then built again
    on the partition: a BRIN build is one scan), alternating ABBA, fresh tables each run: each run's events/s."""
    with_: list[float] = []
    without: list[float] = []
    for n in range(pairs):
        order = ((True, with_), (False, without))
        for on, rates in order if n % 2 == 0 else order[::-1]:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute((INDEX_ON if on else INDEX_OFF).encode())
            progress(f"the writer alone {'with' if on else 'without'} the events' ts index ({n + 1}/{pairs})")
            rate, _ = asyncio.run(writer_rate(dsn, events, batch, f"i{n}{'s' if on else 'n'}-"))
            rates.append(rate)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(INDEX_ON.encode())
    return with_, without


def archived(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM event_keys WHERE table_id LIKE 'b%%'").fetchone()
        return int(row[0]) if row else 0


def start_floor(config: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        floor = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "--log-json", "floor", "--config", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    deadline = time.monotonic() + 30
    while log.read_bytes().count(b"subscribed to the tables") < log.read_bytes().count(b"floor archive ready") or (
        b"floor archive ready" not in log.read_bytes()
    ):
        if time.monotonic() > deadline or floor.poll() is not None:
            sys.exit(f"bench: the floor service did not subscribe:\n{log.read_text()[-2000:]}")
        time.sleep(0.05)
    return floor


def wait_archived(dsn: str, total: int, floor: subprocess.Popen[bytes]) -> None:
    done = archived(dsn)
    while done < total:
        time.sleep(0.2)  # polling the archive's count; the figure is taken when it reaches the total
        done = archived(dsn)
        progress(f"archived {done}/{total}")
        if floor.poll() is not None:
            sys.exit("bench: the floor service died")


def end_to_end(
    dsn: str, broker: str, args: argparse.Namespace, tmp: Path, backlog: bool, offset: int
) -> tuple[float, int]:
    """Live: the floor archives while the publishers publish. Backlog: the floor is stopped (its session stays at
    the broker), the publishers publish everything, then the floor starts and drains the queue: its own pace."""
    config = tmp / "floor.toml"
    config.write_text(
        f'[database]\ndsn = "{dsn}"\n[mqtt]\nbroker = "{broker}"\nprefix = "{PREFIX}"\nclient_id = "bench-floor"\n'
        f"[ingest]\nbatch_max = {args.batch}\n"
    )
    log = tmp / "floor.log"
    floor = start_floor(config, log)
    names = [f"b{i:03d}" for i in range(args.tables)]
    per_table = max(1, args.events // args.tables)
    total = per_table * args.tables
    port = int(broker.rsplit(":", 1)[1])
    procs = [
        multiprocessing.Process(target=publisher, args=(port, names[i :: args.publishers], per_table, offset))
        for i in range(args.publishers)
    ]
    try:
        if backlog:
            floor.terminate()
            floor.wait(timeout=30)
        start = time.perf_counter()
        for p in procs:
            p.start()
        if backlog:
            for p in procs:
                p.join()
            progress("published; starting the floor on its queued session")
            start = time.perf_counter()
            floor = start_floor(config, log)
        wait_archived(dsn, offset * args.tables + total, floor)
        elapsed = time.perf_counter() - start
        for p in procs:
            p.join()
        return total / elapsed, total
    finally:
        floor.terminate()
        floor.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=500)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--publishers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=5000, help="[ingest] batch_max of the floor and the writer alone")
    ap.add_argument("--pairs", type=int, default=3, help="writer runs with and without the round summary, alternating")
    args = ap.parse_args()
    started_on = machine()  # the load before this run adds its own
    cluster = PgCluster.create(durable=True)
    try:
        cluster.start()
        dsn = cluster.create_database("bench_floor")
        with connect(DatabaseSection(dsn=dsn)) as conn:
            migrate(conn)
        progress("baseline: one-row commits")
        commits = commit_rate(dsn)
        with_, without, share = summary_cost(dsn, min(args.events, 100_000), args.batch, args.pairs)
        alone = statistics.median(with_)
        indexed, unindexed = index_cost(dsn, min(args.events, 100_000), args.batch, args.pairs)
        with mosquitto("max_queued_messages 10000000\n") as broker, TemporaryDirectory(prefix="bench-floor-") as tmp:
            rate, total = end_to_end(dsn, broker, args, Path(tmp), backlog=False, offset=0)
            drain, _ = end_to_end(dsn, broker, args, Path(tmp), backlog=True, offset=max(1, args.events // args.tables))
    finally:
        cluster.remove()
    print(f"machine: {started_on}")
    print(f"baseline: PostgreSQL one-row INSERT + COMMIT: {commits:,.0f} commits/s (fsync on, this disk)")
    print(f"archive writer alone (batches of {args.batch}): {alone:,.0f} events/s ({alone / commits:.1f}x baseline)")
    print(
        f"the round summary's cost to the writer ({args.pairs} runs each, alternating): "
        f"{statistics.median(without):,.0f} events/s with its trigger disabled, "
        f"{alone / statistics.median(without):.2f}x of that with it (runs' ratios "
        f"{', '.join(f'{a / b:.2f}' for a, b in zip(with_, without, strict=True))}); "
        f"the trigger's own time {share:.1%} of the writer's"
    )
    ratios = ", ".join(f"{a / b:.2f}" for a, b in zip(indexed, unindexed, strict=True))
    print(
        f"the events' ts BRIN index's cost to the writer ({args.pairs} runs each, alternating): "
        f"{statistics.median(unindexed):,.0f} events/s without it, {statistics.median(indexed):,.0f} with it "
        f"({statistics.median(indexed) / statistics.median(unindexed):.2f}x; runs' ratios {ratios})"
    )
    print(
        f"end to end, {args.tables} tables from {args.publishers} publisher processes through mosquitto: "
        f"{total:,} events in {total / rate:.1f} s = {rate:,.0f} events/s ({rate / commits:.1f}x baseline; "
        f"a 500-table floor at a round a minute publishes ~550 events/s)"
    )
    print(
        f"backlog drain (the floor restarted on its persistent session after the publishers were done): "
        f"{drain:,.0f} events/s ({drain / commits:.1f}x baseline)"
    )


if __name__ == "__main__":
    main()
