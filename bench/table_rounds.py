"""Sustained rounds per second of a seven-seat table on simulated devices, against the pure engine on the same rounds.

Measured ("table"): `tablectl demo --pace 0` on bench/seven-seats.toml (Let It Ride, 643a: seven betting positions),
the real controller end to end: a driver per device speaking the reference protocol over a real pseudo-terminal
to its simulator, the simulated people acting as fast as the machine, every step's events committed to a SQLite
journal (WAL, synchronous=FULL) in --journal-dir before anything leaves the process, and the outbox published
to a private mosquitto on loopback. Rounds/s is counted between round.completed events after a warm-up.

Baseline ("engine"): every input the table's engine stepped during that run, recorded as it went, stepped again
through a fresh RoundEngine in this process with no I/O: the pure engine's rounds/s on exactly the same rounds
(bench/engine_rounds.py does the same for synthetic 655a rounds). The ratio is the share of the table's time the
engine's own work takes; the rest is drivers, ptys, journal, publisher and the event loop.

The journal's commit cost in --journal-dir is measured first and printed, since on a disk each durable step
costs an fsync (tmpfs: --journal-dir /dev/shm). --no-broker leaves the publisher without a broker (it retries
in the background; everything stays journaled), to show what publishing costs.

    .venv/bin/python bench/table_rounds.py [--rounds 300] [--warmup 20] [--seed 1] [--journal-dir DIR] [--no-broker]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest.mock import patch

import benchlib

from controller.config.table import TableConfig
from controller.core.events import DomainEvent, JournaledEvent
from controller.core.settlement import ChapterRules
from controller.engine.round import RoundEngine
from controller.engine.state import TableState
from controller.games.registry import dealing_method, spec_for
from controller.people.demo import play
from controller.shell.logs import configure_logging
from controller.store.journal import Journal

if TYPE_CHECKING:
    from controller.config.table import TableConfig

TARGET_ROUNDS_PER_SECOND = 50.0
NO_BROKER = "mqtt://127.0.0.1:1"  # refuses at once: the publisher retries with backoff, the journal keeps all


@contextlib.contextmanager
def recording() -> Iterator[dict[str, Any]]:
    """Record every input the engine steps and count the journal's commits, by wrapping the classes for the run."""
    seen: dict[str, Any] = {"inputs": [], "appends": 0, "marks": 0}
    step, append, mark = RoundEngine.step, Journal.append, Journal.mark_published

    def recorded_step(self: RoundEngine[ChapterRules], state: TableState, inp: Any) -> Any:
        seen["inputs"].append(inp)
        return step(self, state, inp)

    def counted_append(self: Journal, events: Any, now: Any, *rest: Any, **kw: Any) -> list[JournaledEvent]:
        seen["appends"] += 1
        return append(self, events, now, *rest, **kw)

    def counted_mark(self: Journal, seqs: Any, replayed: bool) -> None:
        seen["marks"] += 1
        mark(self, seqs, replayed)

    with (
        patch.object(RoundEngine, "step", recorded_step),
        patch.object(Journal, "append", counted_append),
        patch.object(Journal, "mark_published", counted_mark),
    ):
        yield seen


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def play_table(
    config: TableConfig, rounds: int, seed: int, broker: str, journal: Path
) -> list[tuple[float, float]]:
    """(wall, CPU) seconds at each round.completed."""
    completed: list[tuple[float, float]] = []

    def on_event(ev: JournaledEvent) -> None:
        if ev.type == "round.completed":
            completed.append((time.perf_counter(), cpu_seconds()))
            if len(completed) % 50 == 0:
                benchlib.progress(f"{len(completed)}/{rounds} rounds")

    played = await play(
        config, rounds=rounds, broker=broker, seed=seed, pace=0.0, journal_path=journal, on_event=on_event
    )
    if played != rounds or len(completed) != rounds:
        sys.exit(f"bench: the table played {played} rounds ({len(completed)} completed), not {rounds}: see the log")
    return completed


def replay(config: TableConfig, inputs: list[Any]) -> tuple[float, int]:
    """Seconds the pure engine takes to step `inputs` from a fresh table, and the rounds it completes."""
    spec = spec_for(config.game)
    assert spec is not None
    engine = RoundEngine(spec, config.game, dealing_method(config.game))
    state = TableState(config.table_id, rounds_played=0)
    done = 0
    start = time.perf_counter()
    for inp in inputs:
        state, effects = engine.step(state, inp)
        done += sum(1 for e in effects if isinstance(e, DomainEvent) and e.type == "round.completed")
    return time.perf_counter() - start, done


@dataclass
class Run:
    """What the table's run gave: (wall, CPU) seconds at each round.completed, what the wrapped classes saw
    (recording), and the journal's events and how many of them were published."""

    completed: list[tuple[float, float]]
    seen: dict[str, Any]
    events: int
    published: int


def options() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20, help="rounds left out of the rate while everything warms up")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--journal-dir",
        type=Path,
        default=Path(tempfile.gettempdir()),
        help="where the temporary journal goes (default: the temp dir; /dev/shm for tmpfs)",
    )
    ap.add_argument("--no-broker", action="store_true", help="publisher without a broker: events stay journaled")
    args = ap.parse_args()
    if args.rounds < args.warmup + 10:
        ap.error(f"--rounds {args.rounds}: give at least --warmup + 10 = {args.warmup + 10} rounds")
    return args


def play_and_count(config: TableConfig, args: argparse.Namespace) -> Run:
    with contextlib.ExitStack() as stack:
        broker = NO_BROKER if args.no_broker else stack.enter_context(benchlib.mosquitto())
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=args.journal_dir, prefix="bench-journal-")))
        journal = tmp / "journal.sqlite"
        benchlib.progress(f"playing {args.rounds} rounds of a seven-seat 643a table at pace 0")
        with recording() as seen:
            completed = asyncio.run(play_table(config, args.rounds, args.seed, broker, journal))
        db = sqlite3.connect(journal)
        events, published = db.execute("select count(*), count(published_at) from events").fetchone()
        db.close()
    return Run(completed, seen, events, published)


def report(args: argparse.Namespace, run: Run, engine_rate: float) -> None:
    steady = run.completed[args.warmup :]
    table_rate = (len(steady) - 1) / (steady[-1][0] - steady[0][0])
    # The whole process's CPU (controller, simulators and simulated people: one event loop) per round: unlike the
    # rate, it hardly depends on what else the machine is running.
    cpu_ms = (steady[-1][1] - steady[0][1]) / (len(steady) - 1) * 1000
    print(
        f"seven-seat 643a table, {args.rounds} rounds ({args.warmup} warm-up) at pace 0, simulated devices on ptys, "
        f"journal on, publisher {'without a broker' if args.no_broker else 'on loopback mosquitto'}"
    )
    per_round = f"{run.events / args.rounds:.0f} events, {run.seen['appends'] / args.rounds:.0f} journal commits"
    if not args.no_broker:
        per_round += f" and {run.seen['marks'] / args.rounds:.0f} outbox marks"
    print(f"per round: {per_round}; {run.published} of {run.events} events published by the end")
    print(
        f"CPU per round: {cpu_ms:.1f} ms (controller, simulators and people in one process: at most "
        f"{1000 / cpu_ms:.0f} rounds/s on a core of its own)"
    )
    print(f"pure engine on the same {len(run.seen['inputs'])} inputs (baseline): {engine_rate:,.0f} rounds/s")
    verdict = "meets" if table_rate >= TARGET_ROUNDS_PER_SECOND else "misses"
    print(
        f"table: {table_rate:.1f} rounds/s ({table_rate / engine_rate:.3f}x the pure engine; "
        f"{verdict} the target of {TARGET_ROUNDS_PER_SECOND:.0f})"
    )


def main() -> int:
    args = options()
    # The figures are the output; logs only if something fails (without a broker, not its retries).
    configure_logging(json=False, level="error" if args.no_broker else "warning")
    print(f"machine: {benchlib.machine()}")
    fs = benchlib.filesystem(args.journal_dir)
    c50, c99 = benchlib.journal_commit_ms(args.journal_dir)
    print(f"journal in {args.journal_dir} ({fs}): one commit p50 {c50:.2f} ms, p99 {c99:.2f} ms")
    config = benchlib.seven_seat_config()
    run = play_and_count(config, args)
    benchlib.progress(f"replaying {len(run.seen['inputs'])} inputs through the pure engine")
    best = min(replay(config, run.seen["inputs"]) for _ in range(3))
    if best[1] != args.rounds:
        sys.exit(f"bench: the replay completed {best[1]} rounds, the table {args.rounds}: the replay is not faithful")
    report(args, run, args.rounds / best[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
