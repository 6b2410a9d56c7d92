"""How long the first Ctrl-C of a real `tablectl floor status` takes to end it mid-statement, this checkout against a
baseline checkout's, run alternately in the same conditions (floor/interrupt.py).

A real PostgreSQL cluster holds a migrated archive; a session of the bench's holds an ACCESS EXCLUSIVE lock on the
tables `status` reads, so its statement waits on the lock. Once it waits (pg_stat_activity), the cluster is SIGSTOPped
(`--live`: left running), the command gets SIGINT and the time to its exit is measured. A stalled server answers
neither the statement nor a cancel request: psycopg's own handling waits 5 s for each.

Run:  .venv/bin/python bench/ctrl_c_stalled.py --base /path/to/baseline-checkout [--runs 3] [--live]
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from benchlib import machine, print_medians, progress

from floor.pgcluster import PgCluster
from floor.schema import migrate

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))
from tests.floor.pgprocs import resume, stall  # noqa: E402 (the tests' helper, importable from the checkout)

LOCKED = "LOCK TABLE floor_tables, seq_gaps, integrity_alarms, events IN ACCESS EXCLUSIVE MODE"
WAITING = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"


def one(checkout: Path, cluster: PgCluster, dsn: str, config: Path, live: bool) -> tuple[float, int]:
    """A checkout's `tablectl floor status` interrupted mid-statement: seconds from SIGINT to its exit; its status."""
    with psycopg.connect(dsn) as holder, psycopg.connect(dsn, autocommit=True) as watcher:
        holder.execute(LOCKED)
        cmd = [str(checkout / ".venv/bin/python"), "-m", "controller.cli", "floor", "--config", str(config), "status"]
        proc = subprocess.Popen(cmd, cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stalled: list[int] = []
        try:
            deadline = time.monotonic() + 60
            while watcher.execute(WAITING).fetchone() != (1,):
                if time.monotonic() > deadline:
                    raise RuntimeError("status's statement never waited on the lock")
                time.sleep(0.02)
            if not live:
                if cluster.proc is None:
                    raise RuntimeError("the cluster has no postmaster process")
                stalled = stall(cluster.proc.pid)
            started = time.monotonic()
            proc.send_signal(signal.SIGINT)
            status = proc.wait(timeout=60)
            return time.monotonic() - started, status
        finally:
            proc.kill()
            resume(stalled)
            holder.rollback()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="a baseline checkout with its own .venv")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--live", action="store_true", help="leave the server running (the cancel is answered)")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    print(f"server: {'running' if args.live else 'SIGSTOPped mid-statement'}; this {HERE}, baseline {args.base}")
    cluster = PgCluster.create(durable=False)
    try:
        cluster.start()
        dsn = cluster.create_database("ctrl_c_bench")
        with psycopg.connect(dsn) as conn:
            migrate(conn)
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "floor.toml"
            config.write_text(
                f'name = "bench"\n[database]\ndsn = "{dsn}"\n[mqtt]\nbroker = "mqtt://127.0.0.1:1"\n'
                'prefix = "bench"\nclient_id = "bench"\n'
            )
            times: dict[str, list[float]] = {"baseline": [], "this": []}
            ratios: list[float] = []
            for run in range(1, args.runs + 1):
                order = [("baseline", args.base), ("this", HERE)]
                got: dict[str, float] = {}
                for side, checkout in order if run % 2 else order[::-1]:
                    progress(f"run {run}: {side}")
                    seconds, status = one(checkout, cluster, dsn, config, args.live)
                    got[side] = seconds
                    times[side].append(seconds)
                    print(f"run {run} {side}: exit {status} {seconds:.2f} s after SIGINT", flush=True)
                ratios.append(got["this"] / got["baseline"])
                print(f"run {run}: this/baseline {ratios[-1]:.3f}", flush=True)
            print_medians(times, ratios)
    finally:
        cluster.remove()


if __name__ == "__main__":
    main()
