"""`tablectl demo --floor`: a floor of simulated tables, the floor service and its console, on a private PostgreSQL
(and a private mosquitto unless --broker names one), with the console's URL printed to open (docs/console.md).

Each table is a real `tablectl demo` process on simulated devices (its own journal); the floor is
floor.service.FloorService in this process with its console on --http. The console approves every key enrolled in
it (`demo_approve_all`, loopback only) and the demo does what an administrator would: it adds the key's
[[supervisors]] entry to every table's config and restarts each table between rounds (SIGINT closes a table after
its round in progress), so a key made in the browser validates jackpots a minute later. Without --rounds nobody
simulated validates jackpots: they wait for the person at the console.

With --rounds N every table plays N rounds (its simulated floorperson validating jackpots) and the demo exits 0
once the floor has archived every table's N rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from controller.cli.verb import UsageError
from floor.config import parse_floor_config
from floor.pgcluster import ClusterError, PgCluster
from floor.service import FloorService

ROOT_CONFIGS = Path(__file__).resolve().parents[2] / "configs"
# The floor's tables: (table id, config, pit). Issue 15's linked progressive will link the two Mississippi Stud
# tables; see LINK CONTROLLER below.
TABLES = (
    ("ms-1", "demo.toml", "pit-1"),
    ("ms-2", "mississippi-stud-progressive.toml", "pit-1"),
    ("lir-1", "let-it-ride-progressive.toml", "pit-2"),
)
PREFIX = "tablectl"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _mosquitto(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("mosquitto") or next(
        (p for p in ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto") if os.access(p, os.X_OK)), None
    )
    if binary is None:
        raise UsageError("mosquitto is not installed: apt-get install mosquitto, or give --broker mqtt://HOST:PORT")
    port = _free_port()
    conf = workdir / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 100000\n")
    proc = subprocess.Popen([binary, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, f"mqtt://127.0.0.1:{port}"


class Table:
    def __init__(self, table_id: str, source: str, workdir: Path, broker: str, rounds: int | None) -> None:
        self.table_id = table_id
        self.config = workdir / f"{table_id}.toml"
        text = (ROOT_CONFIGS / source).read_text()
        self.config.write_text(re.sub(r'^table_id = ".*"$', f'table_id = "{table_id}"', text, count=1, flags=re.M))
        self.journal = workdir / f"{table_id}.sqlite"
        self.log = workdir / f"{table_id}.log"
        self.broker = broker
        self.rounds = rounds
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        argv = ["-m", "controller.cli", "demo", "--config", str(self.config), "--journal", str(self.journal)]
        argv += ["--broker", self.broker, "--quiet", "--pace", "0.3" if self.rounds is None else "0.02"]
        argv += ["--rounds", str(self.rounds)] if self.rounds is not None else ["--human-floor"]
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, *argv, stdout=self.log.open("ab"), stderr=subprocess.STDOUT
        )

    async def restart(self) -> None:
        """Between rounds: SIGINT closes the table after its round in progress; then it starts on its journal."""
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGINT)
            await self.proc.wait()
        await self.start()

    def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()


def main(args: argparse.Namespace) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="tablectl-floor-demo-"))
    try:
        return asyncio.run(_demo(args, workdir))
    except KeyboardInterrupt:
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


async def _demo(args: argparse.Namespace, workdir: Path) -> int:
    print("tablectl demo --floor: starting a private PostgreSQL ...", file=sys.stderr)
    try:
        cluster = PgCluster.create(durable=False)  # its own temp dir, readable by the postgres account when root
        cluster.start()
    except ClusterError as err:
        raise UsageError(f"{err} (python3 dev.py demo installs PostgreSQL)") from None
    broker_proc = None
    try:
        broker = args.broker
        if broker is None:
            broker_proc, broker = _mosquitto(workdir)
        dsn = cluster.create_database("floor")
        http = args.http or "127.0.0.1:8480"
        pits: dict[str, list[str]] = {}
        for tid, _, pit in TABLES:
            pits.setdefault(pit, []).append(tid)
        pit_lines = "\n".join(
            f'"{pit}" = [{", ".join(repr(t) for t in ts)}]'.replace("'", '"') for pit, ts in pits.items()
        )
        config = parse_floor_config(
            f'name = "demo-floor"\n[database]\ndsn = "{dsn}"\n'
            f'[mqtt]\nbroker = "{broker}"\nprefix = "{PREFIX}"\nclient_id = "tablectl-floor-demo-{os.getpid()}"\n'
            f'[console]\nlisten = "{http}"\ndemo_approve_all = true\n[console.pits]\n{pit_lines}\n',
            "the demo's floor config",
        )
        service = FloorService(config)
        tables = [Table(tid, source, workdir, broker, args.rounds) for tid, source, _ in TABLES]
        return await _run(service, tables, args.rounds)
    finally:
        if broker_proc is not None:
            broker_proc.terminate()
            broker_proc.wait()
        cluster.remove()


async def _run(service: FloorService, tables: list[Table], rounds: int | None) -> int:
    floor = asyncio.create_task(service.run(), name="floor")
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, service.stop)
    ready = asyncio.create_task(service.console_ready.wait())
    await asyncio.wait({floor, ready}, return_when=asyncio.FIRST_COMPLETED)
    if floor.done():
        floor.result()  # the floor failed to start: its error
        return 1
    console = service.console
    assert console is not None
    restarts: set[asyncio.Task[None]] = set()

    def admit(key_id: str, role: str, public_key: str) -> None:
        # The administrator's step, done for the demo: the key in every table's config, each table restarted.
        entry = f'\n[[supervisors]]\nkey_id = "{key_id}"\nrole = "{role}"\npublic_key = "{public_key}"\n'
        for t in tables:
            t.config.write_text(t.config.read_text() + entry)
            if rounds is None:
                task = asyncio.create_task(t.restart())
                restarts.add(task)
                task.add_done_callback(restarts.discard)

    console.on_enrol = admit
    # LINK CONTROLLER: issue 15's `tablectl link` starts here once it lands, with ms-1 and ms-2 on one linked
    # progressive (their configs naming the link); the console shows the link's retained topics on their tiles.
    for t in tables:
        await t.start()
    print(f"tablectl demo --floor: open {console.url} (enrol a key, then log in)", flush=True)
    try:
        if rounds is None:
            await floor
            return 0
        for t in tables:
            assert t.proc is not None
            code = await t.proc.wait()
            if code != 0:
                print(f"tablectl demo --floor: table {t.table_id} exited {code}; its log: {t.log}", file=sys.stderr)
                return 1
        while not all(console.view.live.get(t.table_id) and console.view.live[t.table_id].rounds_completed >= rounds
                      for t in tables):  # fmt: skip
            if floor.done():
                return 1
            await asyncio.sleep(0.2)  # the archive has no notification to wait on; the tables are done already
        print(f"tablectl demo --floor: every table played {rounds} round(s); the floor archived them", flush=True)
        return 0
    finally:
        for t in tables:
            t.stop()
        service.stop()
        with contextlib.suppress(Exception):
            await floor
