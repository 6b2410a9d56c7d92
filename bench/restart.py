"""Restart to READY: from spawning `tablectl run` on a journal with history to the daemon being ready to play.

Measured, per trial: the bench spawns `tablectl run` on bench/seven-seats.toml (or --config's, e.g.
configs/demo.toml), its devices simulated by this process over real ptys, its journal a temporary SQLite file that
already holds --history-rounds rounds, its broker a private mosquitto, and stops it again (SIGTERM, or SIGKILL with
--kill, as a crash would). The clock starts just before the spawn and stops at each of:
  - READY=1: the datagram systemd's Type=notify expects, received here on a unix datagram socket named by
    $NOTIFY_SOCKET (as systemd does it). A daemon that does not send it yet is reported as such.
  - "online": the daemon's retained status, as a supervisor sees the table come back.
  - table.opened: the first event of the new boot, stepped once every device was started.

With --bus the run also times the same table with its seven wager stations on one paced multi-drop line
(`[devices.wager_bus]`, the reference wager-bus driver and its simulator) instead of a line each, after the
line-each default and against the same baseline: READY p50/max of each, and the bus's over the lines', and the
identify frames the host sent again on the line (an ACK past its timeout; docs/protocol.md section 2).

Baseline: spawning `python -c 'import controller.cli, controller.shell.runner'` until it exits: the interpreter and the
daemon's code loading, which every start pays before it can do anything (controller.cli first, as `tablectl` loads
it: it settles how structlog loads, controller/cli/__init__.py).

With --tls every variant is also timed over TLS, after the plain runs, as production connects (bench/brokers.py: the
shipped broker config, the table's own user and password, its CA verified; history played the same way), and READY
over TLS is printed beside the plain run's.

    .venv/bin/python bench/restart.py [--trials 10] [--history-rounds 50] [--kill] [--bus] [--tls] [--config PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import signal
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiomqtt
import benchlib
import brokers
import procfs

from controller.config.table import TableConfig
from controller.people.demo import play
from controller.shell.logs import configure_logging
from drivers.interfaces import WAGER_BUS_ID
from drivers.reference.framing import Kind, ProtocolError, decode_message
from drivers.sim.table import SimulatedTable
from drivers.sim.wager_bus import WagerBusSim

if TYPE_CHECKING:
    from controller.config.table import TableConfig

TARGET_SECONDS = 2.0  # issue 6: restart to playing
TARGET_READY_SECONDS = 0.3  # issue 19: start to READY=1
# A table stopped mid-session comes back as table.recovered (docs/recovery.md), a fresh one as table.opened.
STARTED = ("table.opened", "table.recovered")
READY_GRACE = 1.0  # after table.opened, how long a READY=1 may still come


async def history(config: TableConfig, rounds: int, broker: brokers.Broker, journal: Path) -> None:
    """Fill the journal with `rounds` rounds of the same table, as a table that has been playing for a while."""
    played = await play(broker.table(config), rounds=rounds, broker=broker.url, seed=1, pace=0.0, journal_path=journal)
    if played != rounds:
        sys.exit(f"bench: the history run played {played} rounds, not {rounds}")


# The import baseline also says the CPU time it took: wall times swing with the load of a shared machine, CPU
# times much less.
IMPORT = (
    "import controller.cli, controller.shell.runner, resource; r = resource.getrusage(resource.RUSAGE_SELF); "
    "print(r.ru_utime + r.ru_stime)"
)


async def baseline(trials: int) -> tuple[list[float], list[float]]:
    """(wall seconds from spawn to exit, CPU seconds) of each import baseline."""
    samples, cpu = [], []
    for _ in range(trials):
        start = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", IMPORT, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            sys.exit("bench: `python -c 'import controller.cli, controller.shell.runner'` failed")
        samples.append(time.monotonic() - start)
        cpu.append(float(out))
    return samples, cpu


@dataclass
class Signs:
    """The daemon's signs of life as this process receives them, stamped on arrival: its retained status and
    events over MQTT (`arrivals`), and its sd_notify datagrams (`readies`)."""

    arrivals: asyncio.Queue[tuple[float, str, dict[str, Any]]] = field(default_factory=asyncio.Queue)
    readies: asyncio.Queue[tuple[float, bytes]] = field(default_factory=asyncio.Queue)

    async def follow(self, mqtt: aiomqtt.Client) -> None:
        async for msg in mqtt.messages:
            self.arrivals.put_nowait((time.monotonic(), msg.topic.value, json.loads(bytes(msg.payload))))

    async def listen(self, notify: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            data = await loop.sock_recv(notify, 4096)
            self.readies.put_nowait((time.monotonic(), data))


@dataclass
class Trial:
    """Seconds from the spawn to each sign of a new boot (`ready` None when no READY=1 came), and that boot."""

    online: float
    opened: float
    ready: float | None
    boot: str
    ready_cpu: float | None = None  # the daemon's CPU seconds (every thread) when READY=1 arrived
    # Devices whose identify failed and was retried (the daemon's warnings): each costs the start a whole second.
    identify_retried: tuple[str, ...] = ()


def bus_config(config: TableConfig) -> TableConfig:
    """The same table with every seat's wager station on one multi-drop line (docs/protocol.md, "Multi-drop lines")."""
    data = config.model_dump()
    seats = [station["seat"] for station in data["devices"]["wager_stations"]]
    data["devices"]["wager_stations"] = []
    data["devices"][WAGER_BUS_ID] = {"driver": "reference-wager-bus", "port": "simulated", "seats": seats}
    return TableConfig.model_validate(data)


async def trials(
    config: TableConfig, broker: brokers.Broker, tmp: Path, count: int, kill: bool
) -> dict[str, list[float]]:
    config = broker.table(config)
    prefix = f"tablectl/{config.table_id}"
    sign = config.devices is not None and config.devices.progressive_sign is not None
    notify_path = tmp / "notify.sock"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(notify_path))
    notify.setblocking(False)
    results: dict[str, list[float]] = {k: [] for k in ("ready", "online", "opened", "ready_cpu", "retried", "resent")}
    seen_boots: set[str] = set()
    signs = Signs()
    async with (
        SimulatedTable(config.game.seats, random.Random(1), sign=sign) as sims,
        broker.client(f"bench-restart-{config.table_id}") as mqtt,
    ):
        ports = dict(sims.ports)
        bus = config.devices.wager_bus if config.devices is not None else None
        # The stations' own simulators stay idle: the daemon is pointed at the paced line's instead.
        line = WagerBusSim(seats=bus["seats"]) if bus is not None else None
        if line is not None:
            await line.start()
            ports[WAGER_BUS_ID] = line.port
        path = benchlib.write_config(config, ports, tmp)
        await mqtt.subscribe([(f"{prefix}/status", 1), (f"{prefix}/event", 1)])
        helpers = [asyncio.create_task(signs.follow(mqtt)), asyncio.create_task(signs.listen(notify))]
        run = ["run", "--config", str(path), "--broker", broker.url, "--journal", str(tmp / "journal.sqlite")]
        env = {**os.environ, "NOTIFY_SOCKET": str(notify_path)}
        try:
            for n in range(1, count + 1):
                identified = identifies(line)
                got = await trial(n, run, env, signs, seen_boots, kill)
                if line is not None:
                    # Every station is identified once a start; more identify frames on the line are resends.
                    results["resent"].append(identifies(line) - identified - len(line.stations))
                seen_boots.add(got.boot)
                results["online"].append(got.online)
                results["opened"].append(got.opened)
                if got.ready is not None:
                    results["ready"].append(got.ready)
                if got.ready_cpu is not None:
                    results["ready_cpu"].append(got.ready_cpu)
                results["retried"].append(len(got.identify_retried))
                said = "-" if got.ready is None else f"{got.ready:.3f} s"
                retried = f", identify retried: {' '.join(got.identify_retried)}" if got.identify_retried else ""
                benchlib.progress(
                    f"trial {n}/{count}: online {got.online:.3f} s, table opened {got.opened:.3f} s, READY=1 {said}"
                    f"{retried}"
                )
        finally:
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            notify.close()
            if line is not None:
                await line.stop()
    return results


async def trial(n: int, run: list[str], env: dict[str, str], signs: Signs, seen_boots: set[str], kill: bool) -> Trial:
    """Spawn the daemon, time its signs of a new boot, stop it (SIGKILL with `kill`)."""
    start = time.monotonic()
    cli = (sys.executable, "-m", "controller.cli", "--log-level", "warning")
    # Its stderr read as it comes (procfs.spawn): a daemon that logs 64 KiB does not block on a full pipe.
    daemon = await procfs.spawn(*cli, *run, env=env, stdout=asyncio.subprocess.DEVNULL)
    online = opened = ready = ready_cpu = None
    boot = None
    try:
        async with asyncio.timeout(30):
            while online is None or opened is None:
                at, topic, body = await signs.arrivals.get()
                fresh = body.get("boot_id") not in seen_boots
                if topic.endswith("/status") and body.get("state") == "online" and fresh:
                    online, boot = at, body["boot_id"]
                elif topic.endswith("/event") and body.get("type") in STARTED and fresh:
                    # A table stopped mid-session resumes (docs/recovery.md) rather than opening anew.
                    opened, boot = at, body["boot_id"]
        async with asyncio.timeout(READY_GRACE):
            while ready is None:
                at, data = await signs.readies.get()
                if b"READY=1" in data.split(b"\n"):
                    ready = at
                    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                        ready_cpu = benchlib.cpu_seconds(daemon.pid)
    except TimeoutError:
        if online is None or opened is None:
            sys.exit(
                f"bench: trial {n}: the daemon was not online with its table open within 30 s "
                f"(exit status {daemon.returncode}) {(await procfs.stderr_tail(daemon))[-2000:]}"
            )
    finally:
        daemon.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        await daemon.wait()
    retried = identify_retried(await procfs.stderr_tail(daemon))
    while not signs.readies.empty():
        signs.readies.get_nowait()  # anything else the daemon said (STOPPING=1, WATCHDOG=1)
    assert online is not None and opened is not None
    return Trial(
        online - start, opened - start, None if ready is None else ready - start, str(boot), ready_cpu, retried
    )


def identifies(line: WagerBusSim | None) -> int:
    """The identify frames the host has put on the bus line so far (docs/protocol.md section 2, "Identify a few
    stations at a time")."""
    if line is None:
        return 0
    found = 0
    for frame in line.heard:
        if frame.kind == Kind.DATA:  # `heard` holds the host's frames only
            try:
                found += decode_message(frame.payload).get("cmd") == "identify"
            except ProtocolError:
                continue
    return found


def identify_retried(stderr: str) -> tuple[str, ...]:
    """The devices the daemon's warnings say failed identify (JSON lines, or key=value when it logs for a person)."""
    devices = []
    for line in stderr.splitlines():
        if "identify failed" not in line:
            continue
        try:
            devices.append(str(json.loads(line).get("device", "?")))
        except (ValueError, AttributeError):
            found = re.search(r"device=(\S+)", line)
            devices.append(found.group(1) if found else "?")
    return tuple(devices)


def describe(name: str, samples: list[float], base: float, target: float = TARGET_SECONDS) -> None:
    p50 = statistics.median(samples)
    verdict = "meets" if max(samples) <= target else "misses"
    print(
        f"spawn -> {name}: p50 {p50:.3f} s, max {max(samples):.3f} s ({p50 / base:.2f}x the baseline); "
        f"{verdict} the target of {target:g} s"
    )


def report(got: dict[str, list[float]], trials: int, base: float, base_cpu: float) -> None:
    if got["ready"]:
        describe("READY=1 on $NOTIFY_SOCKET", got["ready"], base, TARGET_READY_SECONDS)
        if got["ready_cpu"]:
            cpu = statistics.median(got["ready_cpu"])
            print(
                f"the daemon's CPU from spawn to READY=1 (every thread): p50 {cpu:.3f} s ({cpu / base_cpu:.2f}x the "
                f"import's CPU; {'meets' if cpu <= TARGET_READY_SECONDS else 'misses'} {TARGET_READY_SECONDS:g} s "
                "even on an idle machine)"
            )
    else:
        print("spawn -> READY=1: not sent by this build (no sd_notify support yet); the figures below stand in")
    late = sum(1 for n in got["retried"] if n)
    print(f"starts with an identify retried (1 s late each): {late} of {trials}")
    if got["resent"]:
        print(
            f"identify frames resent on the bus line (ACK past its timeout): {sum(got['resent']):g} in {trials} starts"
        )
    describe('retained status "online"', got["online"], base)
    describe("table.opened received", got["opened"], base)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--history-rounds", type=int, default=50, help="rounds in the journal before the first restart")
    ap.add_argument("--kill", action="store_true", help="stop each daemon with SIGKILL (a crash) instead of SIGTERM")
    ap.add_argument(
        "--bus", action="store_true", help="also time the seven stations on one paced multi-drop line (same run)"
    )
    ap.add_argument(
        "--optimised",
        action="store_true",
        help="run the daemon as systemd/tablectl.service does (-OO, no column tables)",
    )
    ap.add_argument("--config", type=Path, default=benchlib.SEVEN_SEATS, help="the table (e.g. configs/demo.toml)")
    also = "also time every variant over TLS, as production connects, after the plain runs (bench/brokers.py)"
    ap.add_argument("--tls", action="store_true", help=also)
    args = ap.parse_args()
    configure_logging(json=False, level="warning")
    print(f"machine: {benchlib.machine()}; {benchlib.compile_bytecode()}")
    if args.optimised:
        print(benchlib.optimise_children())
    results: dict[str, dict[str, list[float]]] = {}
    benchlib.progress(f"baseline: {args.trials} x python -c 'import controller.cli, controller.shell.runner'")
    walls, cpus = asyncio.run(baseline(args.trials))
    base, base_cpu = statistics.median(walls), statistics.median(cpus)
    for tls in (False, True) if args.tls else (False,):
        results.update(restarts(args, tls))

    stop = "SIGKILL" if args.kill else "SIGTERM"
    print(
        f"baseline `python -c 'import controller.cli, controller.shell.runner'` to exit: p50 {base:.3f} s, "
        f"CPU p50 {base_cpu:.3f} s"
    )
    for name, got in results.items():
        print(
            f"`tablectl run`, {args.config.name}, wager stations on {name}, journal with {args.history_rounds} "
            f"rounds, {args.trials} restarts (stopped by {stop})"
        )
        report(got, args.trials, base, base_cpu)
    lines, bus = results["a line each"]["ready"], results.get("one bus line", {}).get("ready")
    if lines and bus:
        print(
            f"READY=1, one bus line over a line each: p50 {statistics.median(bus) / statistics.median(lines):.2f}x, "
            f"max {max(bus) / max(lines):.2f}x"
        )
    for name in [n for n in results if not n.endswith(OVER_TLS)]:
        plain, tls_run = results[name], results.get(name + OVER_TLS)
        if tls_run and plain["ready"] and tls_run["ready"]:
            for key, what in (("ready", "READY=1 p50"), ("ready_cpu", "CPU to READY=1 p50")):
                mid = statistics.median(plain[key]), statistics.median(tls_run[key])
                print(f"{name}: " + brokers.compare(what, mid[0] * 1000, mid[1] * 1000, "ms"))
    return 0


OVER_TLS = ", over TLS"


def restarts(args: argparse.Namespace, tls: bool) -> dict[str, dict[str, list[float]]]:
    """Each variant's restarts on a broker of its own, plain or over TLS."""
    config = benchlib.table_config(args.config)
    # (name, the config run, the config whose own lines play the history: `play` simulates no bus); a table id each,
    # as the broker's retained anchor of one table's journal would refuse the other's.
    variants = [("a line each", config, config)]
    if args.bus:
        seven = benchlib.table_config(args.config)
        variants.append(("one bus line", bus_config(seven), seven))
    results: dict[str, dict[str, list[float]]] = {}
    ids = [variant.table_id for _, variant, _ in variants]
    with brokers.broker(tls, ids) as broker, tempfile.TemporaryDirectory(prefix="bench-restart-") as tmp:
        for n, (name, variant, played) in enumerate(variants):
            name += OVER_TLS if tls else ""
            where = Path(tmp) / str(n)  # a journal of its own: its devices differ
            where.mkdir()
            if args.history_rounds:
                benchlib.progress(f"{name}: journal history: {args.history_rounds} rounds")
                asyncio.run(history(played, args.history_rounds, broker, where / "journal.sqlite"))
            benchlib.progress(f"{name}: {args.trials} restarts")
            results[name] = asyncio.run(trials(variant, broker, where, args.trials, args.kill))
    return results


if __name__ == "__main__":
    sys.exit(main())
