"""The floor service's stop (SIGTERM to exit) while its running writer has lost PostgreSQL, for this checkout against
a baseline checkout's, run alternately in the same conditions.

Each run starts a fresh PostgreSQL cluster (fsync off: no commit is measured) and a private mosquitto, the checkout's
`tablectl floor` on them, publishes 50 events (QoS 1) and waits until they are archived, then kills the cluster
(SIGKILL) and publishes 50 more: the writer's batch fails and it retries. `--mode refused`: the port stays closed (each
connect refused at once); `--mode dark`: a socket takes the port and accepts the reconnect without ever answering (a
database host gone dark; connect_timeout 60). The stop is sent once the writer retries (its failure line; in dark
mode, the reconnect accepted); the figure is the time to the process's exit, with what its log said it left.

Run:  .venv/bin/python bench/floor_outage_stop.py --base /path/to/baseline-checkout [--mode dark] [--runs 4]
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import paho.mqtt.client as paho
import psycopg
from benchlib import machine, mosquitto, spawn_floor
from paho.mqtt.enums import CallbackAPIVersion

from floor.pgcluster import PgCluster

HERE = Path(__file__).resolve().parents[1]


@dataclass(frozen=True, slots=True)
class Stop:
    seconds: float
    status: int
    left: str  # the messages the stop said it left unarchived, or "-" when it said nothing


def publish(url: str, prefix: str, seqs: range) -> None:
    host, port = url.removeprefix("mqtt://").rsplit(":", 1)
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-{uuid.uuid4().hex[:8]}")
    client.connect(host, int(port))
    client.loop_start()
    infos = []
    for seq in seqs:
        event = {
            "event_id": f"t1-{seq}",
            "boot_id": "b1",
            "seq": seq,
            "ts": f"2026-11-21T10:{seq // 60 % 60:02d}:{seq % 60:02d}.000000Z",
            "table_id": "t1",
            "round_id": None,
            "type": "wager.accepted",
            "rule": "655a.7(d)(1)",
            "payload": {"seat": 1, "spot": "ante", "amount": 500},
        }
        infos.append(client.publish(f"{prefix}/t1/event", json.dumps(event), qos=1))
    for info in infos:
        info.wait_for_publish(timeout=10)
    client.disconnect()
    client.loop_stop()


def until(reached: Callable[[], bool], what: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not reached():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the floor never reached {what} (exit {proc.poll()})")
        time.sleep(0.01)


def archived(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM events").fetchone()
        return int(row[0]) if row else 0


def stop_once(checkout: Path, url: str, tmp: Path, mode: str) -> Stop:
    cluster = PgCluster.create(durable=False)
    dark = socket.socket()
    name = "outage_" + uuid.uuid4().hex[:8]
    log = tmp / f"{name}.log"
    try:
        cluster.start()
        dsn = cluster.create_database(name) + " connect_timeout=60"
        config = tmp / f"{name}.toml"
        config.write_text(
            f'name = "bench"\n[database]\ndsn = "{dsn}"\n[mqtt]\nbroker = "{url}"\nprefix = "{name}"\n'
            f'client_id = "floor-{name}"\n'
        )
        with log.open("wb") as out:
            proc = spawn_floor(checkout, config, out)
            try:
                until(lambda: "subscribed to the tables" in log.read_text(), "its subscription", proc)
                publish(url, name, range(1, 51))
                until(lambda: archived(dsn) == 50, "the first 50 events archived", proc)
                cluster.kill()
                if mode == "dark":
                    dark.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    dark.bind(("127.0.0.1", cluster.port))
                    dark.listen()
                    dark.settimeout(60)
                publish(url, name, range(51, 101))
                if mode == "dark":
                    held, _ = dark.accept()
                else:
                    until(lambda: "archive write failed" in log.read_text(), "a failed write", proc)
                t0 = time.perf_counter()
                proc.send_signal(signal.SIGTERM)
                status = proc.wait(timeout=120)
                seconds = time.perf_counter() - t0
                if mode == "dark":
                    held.close()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    finally:
        dark.close()
        cluster.remove()
    said = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    left = [str(e["messages"]) for e in said if e.get("event") == "floor stopped with messages not archived"]
    return Stop(seconds, status, left[0] if left else "-")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the baseline checkout (with its own .venv)")
    parser.add_argument("--mode", choices=("refused", "dark"), default="refused")
    parser.add_argument("--runs", type=int, default=4)
    args = parser.parse_args()
    print(f"# floor stop while its database is lost ({args.mode}); {machine()}")
    ratios: list[float] = []
    times: dict[str, list[float]] = {"baseline": [], "this": []}
    with mosquitto() as url, tempfile.TemporaryDirectory(prefix="outage-stop-") as tmp:
        for run in range(1, args.runs + 1):
            # Alternate which goes first, so a load that rises or falls over a run is shared.
            order = [("baseline", args.base), ("this", HERE)]
            if run % 2 == 0:
                order.reverse()
            stops = {side: stop_once(path, url, Path(tmp), args.mode) for side, path in order}
            load = Path("/proc/loadavg").read_text().split()[0]
            for side, stop in stops.items():
                times[side].append(stop.seconds)
            ratios.append(stops["this"].seconds / stops["baseline"].seconds)
            b, t = stops["baseline"], stops["this"]
            print(
                f"run {run} (load {load}): baseline {b.seconds:.2f} s (exit {b.status}, left {b.left}),"
                f" this {t.seconds:.2f} s (exit {t.status}, left {t.left}); this/baseline {ratios[-1]:.3f}"
            )
    print(
        f"median: baseline {statistics.median(times['baseline']):.2f} s, this {statistics.median(times['this']):.2f} s,"
        f" this/baseline {statistics.median(ratios):.3f}; load average {Path('/proc/loadavg').read_text().split()[0]}"
        " at the end"
    )


if __name__ == "__main__":
    main()
