"""CPU of one step's commit through the service, against the journal's own commit: what the shell adds per step.

Measured ("service"): the real TableService (controller/shell/service.py) on the demo table without devices, its
journal a SQLite file in --journal-dir (WAL, synchronous=FULL, the anchor file beside it), stepping --steps device
faults one at a time (`submit_and_wait`): each is an engine step, the state encoded, a commit on the journal's writer
thread with the anchor's fdatasync, the hand-back to the event loop and the listeners told. Reported per step: the
event loop thread's CPU (time.thread_time), the whole process's CPU (both threads) and the wall time.

Baseline ("bare commit"): the same events and a state record of the same size committed by Journal.append and
make_durable on one thread, no loop, no service: the part no shell design avoids. The ratio is what the shell's
step path (engine, snapshot, hand-off, wake-ups) costs on top of it. The two alternate in chunks of 100 so both see
the same load on a shared machine. bench/footprint.py measures the whole daemon.

    .venv/bin/python bench/step_commit.py [--steps 1000] [--warmup 50] [--journal-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import benchlib

from controller.config.table import demo_config
from controller.core.events import DomainEvent
from controller.shell.logs import configure_logging
from controller.shell.service import TableService
from controller.store import snapshot
from controller.store.journal import Journal
from drivers.interfaces import DeviceFault


@dataclass
class Totals:
    process: float = 0.0
    loop: float = 0.0
    wall: float = 0.0

    def per_step_us(self, steps: int) -> tuple[float, float, float]:
        return self.process / steps * 1e6, self.loop / steps * 1e6, self.wall / steps * 1e6


class Clock:
    """The process's CPU, this thread's CPU and the wall time, from `start` to `add_to`."""

    def start(self) -> None:
        self.process, self.loop, self.wall = time.process_time(), time.thread_time(), time.perf_counter()

    def add_to(self, totals: Totals) -> None:
        totals.process += time.process_time() - self.process
        totals.loop += time.thread_time() - self.loop
        totals.wall += time.perf_counter() - self.wall


def fault(n: int) -> DeviceFault:
    return DeviceFault("dealer_panel", "line_noise", f"burst {n}")


class BareCommits:
    """The baseline: what the journal itself costs a commit, on the calling thread."""

    def __init__(self, path: Path, body_size: int) -> None:
        self.journal = Journal(path, "bench-bare", boot_id="bench")
        self.body_size = body_size
        self.events = [DomainEvent("device.fault", None, {"device_id": "dealer_panel", "code": "line_noise"})]

    def commit(self, n: int) -> None:
        body = (b'{"n":%d}' % n).ljust(self.body_size)
        self.journal.append(self.events, datetime.now(UTC), [snapshot.record(body)])
        self.journal.make_durable()


async def measure(tmp: Path, steps: int, warmup: int, chunk: int) -> tuple[Totals, Totals, int]:
    """(the service's totals, the baseline's, the stored state's size), measured in alternating chunks of `chunk`
    steps so that both see the same load on a shared machine."""
    config = demo_config()
    journal = Journal(tmp / "service.sqlite", config.table_id, boot_id="bench")
    svc = TableService(config, {}, journal)
    running = asyncio.create_task(svc.run())
    try:
        await svc.ready.wait()
        for n in range(warmup):
            await svc.submit_and_wait(fault(n))
        size = len(snapshot.encode(svc.state))
        bare = BareCommits(tmp / "bare.sqlite", size)
        for n in range(warmup):
            bare.commit(n)
        service_totals, bare_totals, clock = Totals(), Totals(), Clock()
        for first in range(0, steps, chunk):
            todo = range(first, min(first + chunk, steps))
            clock.start()
            for n in todo:
                await svc.submit_and_wait(fault(n))
            clock.add_to(service_totals)
            clock.start()
            for n in todo:
                bare.commit(n)
            clock.add_to(bare_totals)
            benchlib.progress(f"{todo.stop}/{steps} steps and bare commits")
        bare.journal.close()
        return service_totals, bare_totals, size
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        journal.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--journal-dir", type=Path, help="where the journals go (default: a temporary directory)")
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 0:
        ap.error("--steps: 1 or more; --warmup: 0 or more")
    configure_logging(json=False, level="warning")
    print(f"machine: {benchlib.machine()}")
    with tempfile.TemporaryDirectory(prefix="bench-step-", dir=args.journal_dir) as tmp:
        benchlib.progress(f"{args.steps} service steps and as many bare commits, alternating in chunks of 100")
        service_totals, bare_totals, size = asyncio.run(measure(Path(tmp), args.steps, args.warmup, 100))
    service = service_totals.per_step_us(args.steps)
    bare = bare_totals.per_step_us(args.steps)
    print(
        f"baseline, a bare commit (Journal.append + the anchor's fdatasync, one thread, {size}-byte state): "
        f"CPU {bare[0]:.0f} us, wall {bare[2]:.0f} us"
    )
    print(
        f"service step + commit ({args.steps} steps): process CPU {service[0]:.0f} us "
        f"({service[0] / bare[0]:.2f}x the baseline), of which the event loop thread {service[1]:.0f} us; "
        f"wall {service[2]:.0f} us ({service[2] / bare[2]:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
