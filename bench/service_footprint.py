"""The floor service and the link controller as their units start them, unoptimised and optimised alternately.

Each trial spawns `tablectl floor` (its console on loopback) or `tablectl link` with $NOTIFY_SOCKET, as systemd's
Type=notify does, and no bytecode writing (PYTHONDONTWRITEBYTECODE, as the hardened unit), on bytecode compiled for both
levels first (systemd/README.md's `compileall` line, and the tree's packages: an editable install keeps them in the
checkout). Optimised is the units' `PYTHONOPTIMIZE=2 PYTHONNODEBUGRANGES=1`. Per trial: the service's CPU (every thread)
from spawn to READY=1, and its RSS then; the floor's RSS and CPU after it archived --events events of a table published
to it; the link's RSS after 2 s idle (--link-idle). `--uncompiled` adds optimised starts without their bytecode, what
the services' check-config warns of. Each figure of the optimised runs is given as a ratio to the unoptimised runs of
this same process, which alternate with them on the same PostgreSQL (fsync off: commits are not under test) and
mosquitto. `--tree DIR` runs another checkout's services (DIR/.venv/bin/python), to pair the figures against a base tree
in the same conditions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import benchlib
import procfs
import psycopg
from floor_ingest import PREFIX as TABLES_PREFIX
from floor_ingest import publisher

from floor.pgcluster import PgCluster

ROOT = Path(__file__).resolve().parents[1]
UNIT = {"PYTHONOPTIMIZE": "2", "PYTHONNODEBUGRANGES": "1"}  # systemd/tablectl-{floor,link}.service's Environment=
PACKAGES = ("controller", "drivers", "floor", "link", "leash")
PREFIX = "benchunits"

LINK = """
[link]
id = "bench-mega"
lease_ms = 5000
heartbeat_ms = 1000
[database]
dsn = "{dsn}"
[mqtt]
broker = "{broker}"
prefix = "{prefix}"
[[tables]]
table_id = "ms-table-01"
asset_number = "T-1001"
[[tables]]
table_id = "ms-table-02"
asset_number = "T-1002"
[[progressive]]
wager = "progressive"
wager_cents = 500
rule = "655a.12(c)(3) paytable A"
[[progressive.levels]]
level = "progressive"
seed_cents = 5000000
reseed_cents = 5000000
primary_percent = 21
reserve_percent = 0
rule = "655a.12(c)(3) paytable A"
[[supervisors]]
key_id = "shift-manager"
role = "supervisor"
public_key = "iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w="
"""


def compile_both(python: str, tree: Path) -> None:
    """Bytecode at both levels for what the services load: the interpreter's libraries and the tree's packages."""
    paths = subprocess.run(
        [python, "-c", 'import sysconfig as s; print(*{s.get_path(n) for n in ("stdlib", "purelib", "platlib")})'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    paths += [str(tree / p) for p in PACKAGES]
    for level in ([], ["-X", "no_debug_ranges", "-OO"]):
        benchlib.progress(f"compiling bytecode {' '.join(level) or 'plain'}")
        subprocess.run(
            [python, *level, "-m", "compileall", "-q", "-j", "0", "-x", benchlib.SKIPPED, *paths], check=False
        )


def interpreter(tree: Path) -> str:
    """This bench's own Python for this checkout, else the other checkout's venv (--tree)."""
    return sys.executable if tree == ROOT else str(tree / ".venv" / "bin" / "python")


class Ready:
    """The $NOTIFY_SOCKET datagrams of the service under trial."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.setblocking(False)

    async def ready(self) -> None:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(60):
            while b"READY=1" not in (await loop.sock_recv(self.sock, 4096)).split(b"\n"):
                pass


def archived(dsn: str, table: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM events WHERE table_id = %s", (table,)).fetchone()
        return int(row[0]) if row else 0


async def subscribed(proc: asyncio.subprocess.Process) -> None:
    """Until the floor has subscribed (its log says so): READY=1 comes once the archive is ready, and the first start's
    session does not exist at the broker before it subscribes, so events published earlier would go nowhere."""
    async with asyncio.timeout(60):
        while "subscribed to the tables" not in await procfs.stderr_tail(proc):  # noqa: ASYNC110
            await asyncio.sleep(0.02)  # its stderr, polled: read by procfs as it comes


async def trial(
    cmd: list[str],
    cwd: Path,
    env: dict[str, str],
    ready: Ready,
    work: str,
    dsn: str,
    port: int,
    events: int,
    idle: float,
) -> dict[str, float]:
    """One start of a service: its CPU and RSS at READY=1, then after its work (the link: `idle` seconds idle)."""
    proc = await procfs.spawn(*cmd, env=env, stdout=asyncio.subprocess.DEVNULL, cwd=str(cwd))
    try:
        try:
            await ready.ready()
        except TimeoutError:
            await procfs.exited(proc, "the service (no READY=1 within 60 s)")
        got = {"cpu_ready": benchlib.cpu_seconds(proc.pid), "rss_ready": procfs.rss_mb(proc.pid)[0]}
        if work == "floor":
            await subscribed(proc)
            table = f"b{uuid.uuid4().hex[:10]}"
            await asyncio.to_thread(publisher, port, [table], events, 0)
            async with asyncio.timeout(300):
                # The archive's count, polled: a database has no event to await.
                while await asyncio.to_thread(archived, dsn, table) < events:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
        else:
            await asyncio.sleep(idle)  # the link idle: its heartbeat task and the database's keepalive
        rss, hwm = procfs.rss_mb(proc.pid)
        got |= {"cpu_work": benchlib.cpu_seconds(proc.pid) - got["cpu_ready"], "rss_work": rss, "hwm": hwm}
        return got
    finally:
        await procfs.stop(proc)


async def run_service(args: argparse.Namespace, service: str, cluster: PgCluster, url: str, tmp: Path) -> None:
    python = interpreter(args.tree)
    dsn = cluster.create_database(f"{service}_{uuid.uuid4().hex[:8]}")
    prefix = TABLES_PREFIX if service == "floor" else f"{PREFIX}{uuid.uuid4().hex[:6]}"  # where publisher() sends
    config = tmp / f"{service}.toml"
    if service == "floor":
        config.write_text(
            f'name = "bench"\n[database]\ndsn = "{dsn}"\n[mqtt]\nbroker = "{url}"\nprefix = "{prefix}"\n'
            f'client_id = "bench-floor-{prefix}"\n[console]\nlisten = "127.0.0.1:0"\n'
        )
    else:
        config.write_text(LINK.format(dsn=dsn, broker=url, prefix=prefix))
    notify = tmp / f"{service}.notify"
    ready = Ready(notify)
    level = "info" if service == "floor" else "warning"  # the floor's "subscribed to the tables" (subscribed())
    cmd = [python, "-m", "controller.cli", "--log-level", level, service, "--config", str(config)]
    base = {k: v for k, v in os.environ.items() if k not in UNIT}
    base |= {"NOTIFY_SOCKET": str(notify), "PYTHONDONTWRITEBYTECODE": "1"}
    port = int(url.rsplit(":", 1)[1])
    # Migrates the schema: not a unit's every start. Its figures are not kept, so the link does not idle.
    await trial(cmd, args.tree, base, ready, service, dsn, port, 10, 0.0)
    variants = {"unoptimised": base, "optimised": {**base, **UNIT}}
    if args.uncompiled:  # what tablectl floor/link check-config warn of: an optimised start with no -OO bytecode
        variants["optimised, no -OO bytecode"] = {**variants["optimised"], "PYTHONPYCACHEPREFIX": str(tmp / "none")}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    for n in range(args.trials):
        for name in list(variants) if n % 2 == 0 else list(reversed(variants)):
            got = await trial(cmd, args.tree, variants[name], ready, service, dsn, port, args.events, args.link_idle)
            runs[name].append(got)
            benchlib.progress(f"{service}: trial {n + 1}/{args.trials} {name} done")
    report(service, runs, args.events, args.link_idle)


def report(service: str, runs: dict[str, list[dict[str, float]]], events: int, idle: float) -> None:
    """Each variant's median [min-max] and its ratio to the unoptimised runs of this process."""
    work = f"after archiving {events} events" if service == "floor" else f"after {idle:g} s idle"
    rows = [
        ("CPU spawn -> READY=1", "cpu_ready", "s"),
        ("RSS at READY=1", "rss_ready", "MB"),
        (f"RSS {work}", "rss_work", "MB"),
        ("peak RSS (VmHWM)", "hwm", "MB"),
        (f"CPU {work}", "cpu_work", "s"),
    ]
    print(f"{service} ({len(runs['unoptimised'])} alternating rounds): median [min-max]")
    for name, key, unit in rows:
        p = statistics.median(r[key] for r in runs["unoptimised"])
        said = []
        for variant, got in runs.items():
            values = [r[key] for r in got]
            m = statistics.median(values)
            ratio = "" if variant == "unoptimised" else f": {m / p:.3f}x ({m - p:+.3f} {unit})"
            said.append(f"{variant} {m:.3f} {unit} [{min(values):.3f}-{max(values):.3f}]{ratio}")
        print(f"  {name}: " + "; ".join(said))


async def main_async(args: argparse.Namespace) -> None:
    cluster = PgCluster.create(durable=False)
    try:
        cluster.start()
        with benchlib.mosquitto() as url, tempfile.TemporaryDirectory(prefix="bench-units-") as tmp:
            for service in args.services:
                await run_service(args, service, cluster, url, Path(tmp))
    finally:
        cluster.remove()


def main() -> None:
    ap = argparse.ArgumentParser(description="the floor and link services' start CPU and RSS, -OO against plain")
    ap.add_argument("--trials", type=int, default=5, help="alternating pairs per service (default 5)")
    ap.add_argument("--events", type=int, default=2000, help="events the floor archives per trial (default 2000)")
    ap.add_argument("--link-idle", type=float, default=2.0, help="seconds the link idles per trial (default 2)")
    ap.add_argument("--services", nargs="+", choices=["floor", "link"], default=["floor", "link"])
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose .venv and packages run the services")
    ap.add_argument("--no-compile", action="store_true", help="the bytecode is compiled already")
    ap.add_argument(
        "--uncompiled",
        action="store_true",
        help="also start optimised without -OO bytecode (an empty PYTHONPYCACHEPREFIX), as an install without the "
        "compileall line would",
    )
    args = ap.parse_args()
    args.tree = args.tree.resolve()
    print(benchlib.machine())
    head = subprocess.run(["git", "-C", str(args.tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(f"services from {args.tree} ({head.stdout.strip()})")
    if not args.no_compile:
        compile_both(interpreter(args.tree), args.tree)
    start = time.monotonic()
    asyncio.run(main_async(args))
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"in {time.monotonic() - start:.0f} s; load average {load} at the end")


if __name__ == "__main__":
    main()
