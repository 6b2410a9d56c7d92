"""Footprint of a running daemon: resident memory while it plays, and CPU while its table stands open and idle.

Measured: `tablectl run` as a process of its own on bench/seven-seats.toml (643a, seven seats), its devices
simulated over real ptys by this process, its journal a temporary SQLite file, its events published to a private
mosquitto. This process also plays the people: it follows the daemon's events over MQTT, as anyone on the floor
can, and acts on the simulators. Memory (VmRSS, VmHWM from /proc/<pid>/status) is sampled while --rounds rounds
are played; then the people stop, the table opens betting for the next round and waits, and the daemon's CPU
time (per-thread schedstat under /proc/<pid>/task) is read over --idle-seconds: device heartbeats, the MQTT keep-alive
and the clock tick are all that run.

Baselines, each a process spawned here the same way: for memory, `python -c 'import controller.cli,
controller.shell.runner'` (the interpreter and the daemon's code as `tablectl` loads it, doing nothing); for idle
CPU, a bare asyncio process holding one aiomqtt connection to the same broker with the daemon's keep-alive, idle for
the same time.

With --tls the same run is made twice in this process, on the plain broker and then on the broker as production runs
it (bench/brokers.py: the shipped mosquitto config, TLS, the table's own user and password, its CA verified), and the
TLS run's RSS and CPU a round are printed beside the plain run's; the baselines connect over TLS too.

    .venv/bin/python bench/footprint.py [--rounds 100] [--idle-seconds 30] [--seed 1] [--tls]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiomqtt
import benchlib
import brokers
import commitbound
import loop_census
import procfs
import round_timeline
from baseline_procs import baselines, publish_baseline
from footprint_figures import Figures, carried, print_cpu, print_idle, print_memory
from procfs import idle_cpu, main_thread_cpu, resident_parts, rss_mb, spawn, stop

from controller.config.table import TableConfig
from controller.people.demo import RandomPolicy
from controller.people.floor import SimulatedFloor
from controller.shell.logs import configure_logging
from drivers.sim.line import default_timing
from drivers.sim.table import SimulatedTable

# --profile: the daemon under cProfile with each thread's CPU clock, from the first round.completed (SIGUSR1) to the
# last (SIGUSR2, which writes both files): the event loop's thread to FILE, the journal writer's thread to FILE.writer.
# Both files are made at the start: a FILE that cannot be written fails the daemon there, not after the rounds.
PROFILED = (
    procfs.WRAP_ARGS
    + """
import cProfile, signal, time
open(out, "wb").close(), open(out + ".writer", "wb").close()
loop_prof, writer_prof = cProfile.Profile(time.thread_time), cProfile.Profile(time.thread_time)
on = [False]
import controller.shell.writer as writer
serve = writer._serve
def profiled_serve(work):
    while (item := work.get()) is not writer._STOP:
        if on[0]:
            writer_prof.runcall(item)
        else:
            item()
writer._serve = profiled_serve
def start(*_):
    on[0] = True
    loop_prof.enable()
def stop(*_):
    on[0] = False
    loop_prof.disable()
    loop_prof.dump_stats(out)
    writer_prof.dump_stats(out + ".writer")
signal.signal(signal.SIGUSR1, start)
signal.signal(signal.SIGUSR2, stop)
"""
    + procfs.WRAP_RUN
)


class Watch:
    """Follows the daemon's events as published: counts the rounds, stops the people after the last, says when
    the table opened and when it stands idle with betting open; hands the people each event, as they would see it
    on the floor."""

    def __init__(
        self,
        figures: Figures,
        rounds: int,
        people: asyncio.Task[None],
        events: asyncio.Queue[Any],
        pid: int,
        profiled: bool = False,
        lines: Callable[[], dict[str, tuple[float, float]]] = dict,
    ) -> None:
        self.figures, self.rounds, self.people, self.events, self.pid = figures, rounds, people, events, pid
        self.lines = lines  # the simulators' line_seconds
        self.profiled = profiled  # the daemon runs under PROFILED: told when the measured rounds start and end
        self.opened = asyncio.Event()
        self.idle = asyncio.Event()

    async def follow(self, mqtt: aiomqtt.Client) -> None:
        async for msg in mqtt.messages:
            raw = bytes(msg.payload)
            body = json.loads(raw)
            kind = body["type"]
            if 1 <= self.figures.rounds < self.rounds:
                self.figures.published.append(raw)
            if kind == "table.opened":
                self.opened.set()
            elif kind == "round.completed":
                self.figures.rounds += 1
                if self.figures.rounds == 1:
                    self.figures.play = (benchlib.cpu_seconds(self.pid), time.monotonic())
                    self.figures.play_main = (main_thread_cpu(self.pid), 0.0)
                    self.figures.play_bench = (time.process_time(), 0.0)
                    self.figures.commits.append(commitbound.commits(self.figures.journal))
                    self.figures.lines.append(self.lines())
                    if self.profiled:
                        os.kill(self.pid, signal.SIGUSR1)
                elif self.figures.rounds == self.rounds:
                    self.figures.play_end = (benchlib.cpu_seconds(self.pid), time.monotonic())
                    self.figures.play_main = (self.figures.play_main[0], main_thread_cpu(self.pid))
                    self.figures.play_bench = (self.figures.play_bench[0], time.process_time())
                    self.figures.commits.append(commitbound.commits(self.figures.journal))
                    self.figures.lines.append(self.lines())
                    if self.profiled:
                        os.kill(self.pid, signal.SIGUSR2)
                if self.figures.rounds % 25 == 0:
                    benchlib.progress(f"{self.figures.rounds}/{self.rounds} rounds")
                if self.figures.rounds >= self.rounds:
                    self.people.cancel()  # nobody plays on: the next round's betting stays open, idle
            elif kind == "betting.opened" and self.figures.rounds >= self.rounds:
                self.idle.set()
            if not self.people.done():
                self.events.put_nowait(SimpleNamespace(type=kind, payload=body["payload"], sealed=None))


def people(
    config: TableConfig, sims: SimulatedTable, rng: random.Random, pace: float = 0.0
) -> tuple[SimulatedFloor, asyncio.Queue[Any]]:
    """The simulated people, fed the published events through the queue, `pace` seconds between actions. Let It Ride
    on an automated shoe asks them for nothing but wagers, decisions and the dealer's buttons, all on the simulated
    devices (bench/latency_people.py plays them too)."""
    events: asyncio.Queue[Any] = asyncio.Queue()
    service = SimpleNamespace(
        config=config, engine=SimpleNamespace(method="automated_shoe"), subscribe=lambda _name, _kind: events
    )
    return SimulatedFloor(service, sims, RandomPolicy(rng), None, pace), events  # type: ignore[arg-type]


async def measure(
    broker: brokers.Broker,
    config: TableConfig,
    rounds: int,
    idle_seconds: float,
    seed: int,
    tmp: Path,
    profile: Path | None = None,
    wrap: str = PROFILED,
) -> Figures:
    """`config` a table the broker knows (brokers.broker's table_ids), a fresh one each run."""
    config = broker.table(config)
    rng = random.Random(seed)
    async with (
        SimulatedTable(config.game.seats, rng) as sims,
        broker.client(f"bench-floor-{config.table_id}") as mqtt,
    ):
        path = benchlib.write_config(config, sims.ports, tmp)
        await mqtt.subscribe(f"tablectl/{config.table_id}/event", qos=1)
        # --profile: the CPU time (not the wall time) of the daemon's two threads under cProfile over the measured
        # rounds (PROFILED; bench/resident.py passes its own `wrap`, told the same two moments).
        python = [sys.executable, "-c", wrap, str(profile)] if profile else [sys.executable, "-m"]
        run = [*python, "controller.cli", "--log-level", "warning", "run", "--config", str(path)]
        # stdout to DEVNULL, as bench/restart.py does: nothing here reads it (the table's opening is seen on MQTT), and
        # an unread pipe blocked the daemon once it wrote ~192 KiB there (asyncio's 128 KiB buffer, then the pipe's
        # 64 KiB). Its stderr is drained by spawn().
        daemon = await spawn(
            *run, "--broker", broker.url, "--journal", str(tmp / "journal.sqlite"), stdout=asyncio.subprocess.DEVNULL
        )
        try:
            floor, events = people(config, sims, rng)
            figures = Figures(journal=tmp / "journal.sqlite")
            return await play_and_sample(
                daemon, mqtt, floor, events, rounds, idle_seconds, figures, bool(profile), sims.line_seconds
            )
        finally:
            await stop(daemon)
            if daemon.returncode != 0:  # it failed (SIGTERM ends it with 0): that, not what failed here after, is news
                await procfs.exited(daemon, "the daemon")


async def play_and_sample(
    daemon: asyncio.subprocess.Process,
    mqtt: aiomqtt.Client,
    floor: SimulatedFloor,
    events: asyncio.Queue[Any],
    rounds: int,
    idle_seconds: float,
    figures: Figures,
    profiled: bool = False,
    lines: Callable[[], dict[str, tuple[float, float]]] = dict,
) -> Figures:
    players = asyncio.create_task(floor.run())
    watch = Watch(figures, rounds, players, events, daemon.pid, profiled, lines)
    following = asyncio.create_task(watch.follow(mqtt))
    opened, ended = asyncio.create_task(watch.opened.wait()), asyncio.create_task(daemon.wait())
    await asyncio.wait([opened, ended], timeout=60, return_when=asyncio.FIRST_COMPLETED)
    await halt(ended)
    if not opened.done():  # measure() says why the daemon ended, if it did
        await halt(opened, following, players)
        sys.exit(f"bench: the table did not open within 60 s (the daemon's exit status: {daemon.returncode})")
    figures.rss_open, _ = rss_mb(daemon.pid)
    figures.resident_open = resident_parts(daemon.pid)
    while not watch.idle.is_set():
        if daemon.returncode is not None:
            await halt(following, players)
            sys.exit(f"bench: the daemon exited with {daemon.returncode} while playing")
        rss, _ = rss_mb(daemon.pid)
        figures.rss_max = max(figures.rss_max, rss)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.5):
                await watch.idle.wait()
    figures.rss_end, figures.hwm = rss_mb(daemon.pid)
    benchlib.progress(f"table open and idle: measuring the daemon's CPU over {idle_seconds:g} s")
    figures.idle_cpu = await idle_cpu(daemon.pid, idle_seconds)
    await halt(following, players)
    return figures


async def halt(*tasks: asyncio.Task[Any]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--idle-seconds", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=1)
    profile = "cProfile the daemon's loop thread over the measured rounds to FILE, the writer's to FILE.writer ("
    ap.add_argument("--profile", type=Path, help=profile + "pstats; cProfile roughly triples the CPU figures)")
    ap.add_argument("--timeline", type=Path, help="time the daemon's steps, commits and waits to FILE and print them")
    wakeups = "count and time the daemon's loop turns and callbacks by source to FILE (JSON) and print them"
    ap.add_argument("--wakeups", type=Path, help=wakeups)
    ap.add_argument(
        "--optimised",
        action="store_true",
        help="run the daemon as systemd/tablectl.service does (-OO, no column tables)",
    )
    twice = "run twice, on the plain broker and then over TLS as production connects, and compare (bench/brokers.py)"
    ap.add_argument("--tls", action="store_true", help=twice)
    args = ap.parse_args()
    if sum(map(bool, (args.profile, args.timeline, args.wakeups))) > 1:
        ap.error("--profile, --timeline, --wakeups: give one (each wraps the daemon)")
    if args.idle_seconds <= 0:
        ap.error("--idle-seconds: give a positive number of seconds (20 or more for a figure)")
    configure_logging(json=False, level="warning")
    print(f"machine: {benchlib.machine()}; {benchlib.compile_bytecode()}")
    if args.optimised:
        print(benchlib.optimise_children())
    runs = [run(args, tls) for tls in ((False, True) if args.tls else (False,))]
    if len(runs) == 2:
        (plain, *_), (tls, *_) = runs
        print("over TLS, beside the plain run of this process (the same rounds, seed and devices):")
        print("  " + brokers.compare("RSS with the table open", plain.rss_open, tls.rss_open, "MB"))
        print("  " + brokers.compare("peak RSS (VmHWM)", plain.hwm, tls.hwm, "MB"))
        print("  " + brokers.compare("CPU a seven-seat round", cpu_a_round(plain), cpu_a_round(tls), "ms"))
        print("  " + brokers.compare("idle CPU", plain.idle_cpu, tls.idle_cpu, "% of a core", 3))
    return 0


def run(args: argparse.Namespace, tls: bool) -> tuple[Figures, float, float]:
    """One measured run and its baselines on a broker of its own, reported; (figures, baseline RSS, its CPU)."""
    config = benchlib.seven_seat_config()
    with brokers.broker(tls, [config.table_id]) as broker, tempfile.TemporaryDirectory(prefix="bench-footprint-") as d:
        tmp = Path(d)
        benchlib.progress(f"daemon playing {args.rounds} rounds of a seven-seat 643a table, broker {broker.kind}")
        wrap = round_timeline.TIMED if args.timeline else loop_census.COUNTED if args.wakeups else PROFILED
        traced = args.timeline or args.profile or args.wakeups
        figures = asyncio.run(measure(broker, config, args.rounds, args.idle_seconds, args.seed, tmp, traced, wrap))
        base_rss, base_cpu = asyncio.run(baselines(broker, args.idle_seconds))
        publish_cpu = asyncio.run(publish_baseline(broker, figures.published)) if figures.published else 0.0
        bound = commitbound.bound(tmp, figures.commits, figures.rounds - 1, figures.play_end[1] - figures.play[1])

    print(f"-- broker: {broker.kind}")
    print_memory(figures, base_rss)
    print_cpu(figures, publish_cpu)
    print(bound)
    if args.timeline:
        print(round_timeline.report(args.timeline, figures.rounds - 1, carried(figures.lines)))
        if not default_timing().paced:
            print("  (unpaced ptys: the line times above are what 115200-baud lines would take, not waited for here)")
    if args.wakeups:
        print(loop_census.report(args.wakeups, figures.rounds - 1))
    print_idle(figures, base_cpu, args.idle_seconds)
    return figures, base_rss, base_cpu


def cpu_a_round(figures: Figures) -> float:
    played = figures.rounds - 1
    return (figures.play_end[0] - figures.play[0]) / played * 1000 if played > 0 else 0.0


if __name__ == "__main__":
    sys.exit(main())
