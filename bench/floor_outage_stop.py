"""The floor service's stop (SIGTERM to exit) while its running writer has lost PostgreSQL, for this checkout against
a baseline checkout's, run alternately in the same conditions.

Each run starts a fresh PostgreSQL cluster (fsync off: no commit is measured) and a private mosquitto, the checkout's
`tablectl floor` on them, publishes 50 events (QoS 1) and waits until they are archived, then kills the cluster
(SIGKILL) and publishes 50 more: the writer's batch fails and it retries. `--mode refused`: the port stays closed (each
connect refused at once); `--mode dark`: a socket takes the port and accepts the reconnect without ever answering (a
database host gone dark; connect_timeout 60). The stop is sent once the writer retries (its failure line; in dark
mode, the reconnect accepted); the figure is the time to the process's exit, with what its log said it left.
`--mode dark-start`: no server at all, the service started against a dark port, stopped once it took the first
connect. `--service link`: `tablectl link` instead (its own database; in the running modes the stop is sent once it is
ready and its server killed: its probe's reconnect refused, or accepted in dark mode; it says nothing left).
`--mode dark-console` / `dark-older` (floor): a proxy in front of a running cluster relays the service's first three
connections (the start's ask, the migration, the writer) and holds every later one unanswered, so the console's first
load (with a console) or the older days' work (without) waits on a host gone dark; the stop is sent once it is held.
`--mode stalled`: the cluster's processes SIGSTOPped once the service works (a server that stops answering
mid-statement, cancel requests included); the floor then gets 50 more events and the stop is sent 1 s later (its
writer in its transaction: no line says so, so a settle time), the link's once it says its probe's call is stuck.

Run:  .venv/bin/python bench/floor_outage_stop.py --base /path/to/baseline-checkout [--mode dark] [--service link]
      [--runs 4]
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import paho.mqtt.client as paho
import psycopg
from benchlib import machine, mosquitto, print_medians, spawn_service
from paho.mqtt.enums import CallbackAPIVersion

from floor.pgcluster import PgCluster

HERE = Path(__file__).resolve().parents[1]
STOP_LIMIT_S = 120  # a stop not ended by then is killed and counted as this long (exit -9)
sys.path.insert(0, str(HERE))  # the suite's dark proxy (tests/floor/dark_proxy.py)
from tests.floor.dark_proxy import DarkAfter  # noqa: E402
from tests.floor.pgprocs import resume, server_processes  # noqa: E402
from tests.floor.pgprocs import stall as stall_server  # noqa: E402


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


LINK = """[link]
id = "mega"
lease_ms = 2000
heartbeat_ms = 500
[database]
dsn = "{dsn}"
[mqtt]
broker = "{url}"
prefix = "{name}"
[[tables]]
table_id = "t1"
asset_number = "A-01"
[[tables]]
table_id = "t2"
asset_number = "A-02"
[[progressive]]
wager = "progressive"
wager_cents = 500
rule = "655a.12(c)(3) paytable B"
[[progressive.levels]]
level = "mega"
seed_cents = 5000000
reseed_cents = 5000000
primary_percent = 11
rule = "655a.12(c)(3) paytable B"
[[supervisors]]
key_id = "manager"
role = "supervisor"
public_key = "iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w="
"""


def config_text(service: str, dsn: str, url: str, name: str, console: bool = False) -> str:
    if service == "link":
        return LINK.format(dsn=dsn, url=url, name=name)
    return (
        f'name = "bench"\n[database]\ndsn = "{dsn}"\n[mqtt]\nbroker = "{url}"\nprefix = "{name}"\n'
        f'client_id = "floor-{name}"\n' + ('[console]\nlisten = "127.0.0.1:0"\n' if console else "")
    )


def stall(service: str, cluster: PgCluster, url: str, name: str, log: Path, proc: subprocess.Popen[bytes]) -> None:
    """SIGSTOP the cluster's processes once the service works, and let a statement of the service's wait on it."""
    if service == "floor":
        until(lambda: "subscribed to the tables" in log.read_text(), "its subscription", proc)
    else:
        until(lambda: '"link ready"' in log.read_text(), "its start", proc)
    running = cluster.proc
    if running is None:
        raise RuntimeError("the cluster is not running")
    stall_server(running.pid)  # the suite's: the postmaster stopped first, then its children (tests/floor/pgprocs.py)
    if service == "floor":
        publish(url, name, range(1, 51))
        time.sleep(1.0)  # the writer's batch sent and waiting (a bench's settle time: no line says so)
    else:
        until(lambda: "a link task is stuck" in log.read_text(), "its probe's call stuck", proc)


def go_dark(dark: socket.socket, port: int) -> None:
    """The port taken by a host that accepts each connection and never answers."""
    dark.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    dark.bind(("127.0.0.1", port))
    dark.listen()
    dark.settimeout(60)


def lose_database(
    service: str,
    mode: str,
    cluster: PgCluster,
    dark: socket.socket,
    url: str,
    name: str,
    log: Path,
    proc: subprocess.Popen[bytes],
    dsn: str,
) -> Callable[[], None]:
    """Run the service until it works, then take its server away; returns what to do once the stop was sent."""
    if service == "floor":
        until(lambda: "subscribed to the tables" in log.read_text(), "its subscription", proc)
        publish(url, name, range(1, 51))
        until(lambda: archived(dsn) == 50, "the first 50 events archived", proc)
    else:
        until(lambda: '"link ready"' in log.read_text(), "its start", proc)
    cluster.kill()
    if mode == "dark":
        go_dark(dark, cluster.port)
    if service == "floor":
        publish(url, name, range(51, 101))
    if mode == "dark":
        held, _ = dark.accept()  # the reconnect, which now waits for an answer that never comes
        return held.close
    failed = "archive write failed" if service == "floor" else "PostgreSQL lost; reconnecting"
    until(lambda: failed in log.read_text(), "a failed write" if service == "floor" else "a lost server", proc)
    return lambda: None


def stop_once(checkout: Path, url: str, tmp: Path, mode: str, service: str = "floor") -> Stop:
    # A dark start never reaches a server: no cluster is made for it (its initdb was a second of each side at load).
    cluster = None if mode == "dark-start" else PgCluster.create(durable=False)
    dark = socket.socket()
    name = "outage_" + uuid.uuid4().hex[:8]
    log = tmp / f"{name}.log"
    try:
        if cluster is None:
            go_dark(dark, 0)
            dsn = f"host=127.0.0.1 port={dark.getsockname()[1]} user=tablectl dbname={name} connect_timeout=60"
        else:
            cluster.start()
            dsn = cluster.create_database(name, connect_timeout_s=60)
            if mode in ("dark-console", "dark-older"):
                proxy = DarkAfter(cluster.port, relayed=3)
                dsn = proxy.dsn(dsn, connect_timeout_s=60)
        config = tmp / f"{name}.toml"
        config.write_text(config_text(service, dsn, url, name, console=mode == "dark-console"))
        with log.open("wb") as out:
            proc = spawn_service(checkout, service, config, out)
            try:
                if cluster is None:
                    held, _ = dark.accept()  # the first connect of its start
                    after = held.close
                elif mode in ("dark-console", "dark-older"):
                    if not proxy.held.wait(60):
                        raise RuntimeError("the service never opened its fourth connection")
                    after = proxy.close
                elif mode == "stalled":
                    stall(service, cluster, url, name, log, proc)
                    after = lambda: None  # noqa: E731
                else:
                    after = lose_database(service, mode, cluster, dark, url, name, log, proc, dsn)
                t0 = time.perf_counter()
                proc.send_signal(signal.SIGTERM)
                try:
                    status = proc.wait(timeout=STOP_LIMIT_S)
                except subprocess.TimeoutExpired:
                    status = -9  # deaf to the stop: killed, as systemd's TimeoutStopSec would
                seconds = time.perf_counter() - t0
                after()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    finally:
        dark.close()
        if cluster is not None:
            if cluster.proc is not None and cluster.proc.poll() is None:
                resume(server_processes(cluster.proc.pid))  # stopped, it forked none since the stall
            cluster.remove()
    said = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    left = [str(e["messages"]) for e in said if e.get("event") == "floor stopped with messages not archived"]
    return Stop(seconds, status, left[0] if left else "-")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the baseline checkout (with its own .venv)")
    parser.add_argument(
        "--mode", choices=("refused", "dark", "dark-start", "dark-console", "dark-older", "stalled"), default="refused"
    )
    parser.add_argument("--service", choices=("floor", "link"), default="floor")
    parser.add_argument("--runs", type=int, default=4)
    args = parser.parse_args()
    print(f"# {args.service} stop while its database is lost ({args.mode}); {machine()}")
    ratios: list[float] = []
    times: dict[str, list[float]] = {"baseline": [], "this": []}
    with mosquitto() as url, tempfile.TemporaryDirectory(prefix="outage-stop-") as tmp:
        for run in range(1, args.runs + 1):
            # Alternate which goes first, so a load that rises or falls over a run is shared.
            order = [("baseline", args.base), ("this", HERE)]
            if run % 2 == 0:
                order.reverse()
            stops = {side: stop_once(path, url, Path(tmp), args.mode, args.service) for side, path in order}
            load = Path("/proc/loadavg").read_text().split()[0]
            for side, stop in stops.items():
                times[side].append(stop.seconds)
            ratios.append(stops["this"].seconds / stops["baseline"].seconds)
            b, t = stops["baseline"], stops["this"]
            print(
                f"run {run} (load {load}): baseline {b.seconds:.2f} s (exit {b.status}, left {b.left}),"
                f" this {t.seconds:.2f} s (exit {t.status}, left {t.left}); this/baseline {ratios[-1]:.3f}"
            )
    print_medians(times, ratios)


if __name__ == "__main__":
    main()
