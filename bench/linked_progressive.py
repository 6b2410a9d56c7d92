"""The link controller's store on a real PostgreSQL primary with a real synchronous standby (fsync on, this
machine's disk): contributions per second, and a hit's claim-to-reseed latency, each beside a bare commit on the
same cluster (one-row INSERT + COMMIT, synchronous standby and all) as the baseline.

- contributions/s: `LinkStore.contribute` in batches (what the service commits together when requests arrive
  together: one transaction, one synchronous commit), and one lock-out (7 wagers) per transaction;
- claim-to-reseed: `LinkStore.claim` of 100 % (the hit, the reseed, the pending jackpot event, one commit), p50/p99.

The target (issue 15): a facility of 500 tables at one round a minute with seven progressive wagers is ~60/s;
at least 2,000/s. The MQTT hop is not timed here (bench/commands.py measures request/response over the broker).

Run:  .venv/bin/python bench/linked_progressive.py [--seconds 5] [--batch 200] [--claims 200]
"""

from __future__ import annotations

import argparse
import itertools
import time

import psycopg
from benchlib import machine, percentile, progress
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.supervisor.envelope import public_key_b64
from floor.pgcluster import PgCluster
from link.config import parse_link_config
from link.records import Contribution
from link.schema import migrate
from link.store import LinkStore

FIGURES = """
[link]
id = "bench"
[database]
dsn = "{dsn}"
[[tables]]
table_id = "t1"
asset_number = "A1"
[[tables]]
table_id = "t2"
asset_number = "A2"
[[progressive]]
wager = "progressive"
wager_cents = 500
rule = "655a.12(c)(3) paytable D"
[[progressive.levels]]
level = "mega"
seed_cents = 5000000
reseed_cents = 5000000
primary_percent = 10
reserve_percent = 0
rule = "655a.12(c)(3) paytable D"
[[progressive.levels]]
level = "major"
seed_cents = 500000
reseed_cents = 500000
primary_percent = 8
rule = "655a.12(c)(3) paytable D"
[[progressive.levels]]
level = "minor"
seed_cents = 125000
reseed_cents = 125000
primary_percent = 3
rule = "655a.12(c)(3) paytable D"
[[supervisors]]
key_id = "m"
role = "supervisor"
public_key = "{key}"
"""


def bare_commits(dsn: str, seconds: float) -> tuple[float, list[float]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bare (n bigint)")
        lat: list[float] = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            t = time.perf_counter()
            with conn.transaction():
                conn.execute("INSERT INTO bare VALUES (1)")
            lat.append(time.perf_counter() - t)
    return len(lat) / sum(lat), lat


def contributions(store: LinkStore, batch: int, seconds: float, counter: itertools.count[int]) -> float:
    done, spent = 0, 0.0
    while spent < seconds:
        n = next(counter)
        rows = [Contribution(f"t{1 + i % 2}", f"r{n}", 1 + i % 7, "progressive", 500) for i in range(batch)]
        rows = [Contribution(c.table_id, f"r{n}-{i // 7}", c.seat, c.wager, c.cents) for i, c in enumerate(rows)]
        t = time.perf_counter()
        store.contribute(rows)
        spent += time.perf_counter() - t
        done += batch
    return done / spent


def claims(store: LinkStore, count: int) -> list[float]:
    lat = []
    for i in range(count):
        t = time.perf_counter()
        store.claim("t1", f"hit{i}", 3, "mega", 100, "655a.11(i)(1)(iv)", "A1")
        lat.append(time.perf_counter() - t)
    return lat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--claims", type=int, default=200)
    args = ap.parse_args()
    print(f"machine: {machine()}")
    progress("making a durable primary and a synchronous standby (initdb, pg_basebackup)")
    primary = PgCluster.create(durable=True)
    standby: PgCluster | None = None
    try:
        primary.start()
        dsn = primary.create_database("link")
        standby = primary.add_standby("standby1", synchronous=True)
        progress(f"baseline: bare commits for {args.seconds:g} s")
        bare_rate, bare_lat = bare_commits(dsn, args.seconds)
        conn = psycopg.connect(dsn, autocommit=True)
        migrate(conn)
        store = LinkStore(conn)
        key = public_key_b64(Ed25519PrivateKey.from_private_bytes(b"\x01" * 32))
        store.initialise(parse_link_config(FIGURES.format(dsn=dsn, key=key)))
        counter = itertools.count()
        progress(f"contributions in batches of {args.batch} for {args.seconds:g} s")
        batched = contributions(store, args.batch, args.seconds, counter)
        progress(f"contributions one lock-out (7) per transaction for {args.seconds:g} s")
        single = contributions(store, 7, args.seconds, counter)
        progress(f"{args.claims} claims of 100 %")
        claim_lat = claims(store, args.claims)
        balanced = "exact" if not store.levels()["mega"].balance_problem() else "MISMATCH"
    finally:
        # The standby itself, not a PgCluster on its dir: that one had no process to stop, so the server ran on.
        if standby is not None:
            standby.remove()
        primary.remove()
    bare_p99 = percentile(bare_lat, 99) * 1000
    print(f"baseline: bare commit (sync standby)      {bare_rate:9.0f} commits/s, p99 {bare_p99:.2f} ms")
    ratio = batched / bare_rate
    print(f"contributions, batches of {args.batch:<4}          {batched:9.0f} /s  ({ratio:.1f}x the bare commit rate)")
    print(f"contributions, one lock-out (7) per commit {single:9.0f} /s  ({single / bare_rate:.1f}x)")
    p50, p99 = percentile(claim_lat, 50) * 1000, percentile(claim_lat, 99) * 1000
    print(f"claim-to-reseed: p50 {p50:.2f} ms, p99 {p99:.2f} ms  ({p99 / bare_p99:.1f}x the bare commit's p99)")
    print(f"balance after the run: {balanced}")


if __name__ == "__main__":
    main()
