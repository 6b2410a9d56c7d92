"""The service's hand-over of a lock-out: from TableService.apply_all entered for the step that holds "no more bets"
to the first and to the last wager station's lock frame written (docs/performance-history.md, Part 18).

The seven-seat table of bench/seven-seats.toml is played by the demo's simulated people (controller.people.demo.play)
on the reference drivers over paced ptys, with a SQLite journal. Every step batch runs in one of two orders, chosen
per trial and alternating (a trial: a round's "no more bets" step):
- the product's: each device's lock task started in the step's turn (CommandRunner.start), the step's state encoded
  for the journal's commit after the frames are out;
- the baseline, c83eab6's order (`old_order` below): the state encoded first, the locks run through `_execute` in a
  task of their own, one loop turn later.
A bare command's payload is kept (drivers/reference/messages.py) in both: what differs is the service's order alone.
A frame is "written" when the link hands it to the pty (LinkCore._write), timed on time.perf_counter.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from benchlib import machine, percentile, progress, seven_seat_config

from controller.core.events import JournaledEvent
from controller.engine.inputs import Input
from controller.people.demo import play
from controller.shell.locks import hoist_locks, lock_frames_out
from controller.shell.logs import configure_logging
from controller.shell.service import TableService
from drivers.reference.link_core import LinkCore

STATION = "driver:wager_station"  # the links of the wager stations (drivers/reference/wager_station.py)
ORDERS = ("state after the locks (the product)", "state first, locks in a task (c83eab6, baseline)")


async def old_order(service: TableService, inputs: list[Input]) -> list[list[JournaledEvent]]:
    """c83eab6's TableService.apply_all, kept here as the baseline: the step's state encoded before the locks start,
    the locks run through `_execute` in a task of their own."""
    state, steps = service._step(inputs)
    body, records = service._records(state)
    events = [e for evs, _ in steps for e in evs]
    journaled: list[JournaledEvent] = []
    early = hoist_locks(steps)
    locking = None
    if early:
        locking = asyncio.ensure_future(service._execute(early))
        await lock_frames_out()
    try:
        if events or records:
            commit = service._writer.submit(events, service._clock(), records)
            try:
                await service._writer.wait(commit)
            finally:
                if commit.journaled is not None:
                    journaled = commit.journaled
                    service._took(body, state)
                    service._announce_commit(commit)
        else:
            service._took(body, state)
    except BaseException:
        if locking is not None:
            locking.cancel()
            await asyncio.gather(locking, return_exceptions=True)
        raise
    if locking is not None:
        await locking
    out: list[list[JournaledEvent]] = []
    at = 0
    for evs, _ in steps:
        out.append(journaled[at : at + len(evs)])
        at += len(evs)
    for _, commands in steps:
        await service._execute(commands)
    return out


class Probe:
    """Times each batch from apply_all's entry to each station's first frame written; keeps the batches that held
    "no more bets", by order, and switches the order after each of them."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self.order = 0
        self.entry = 0.0
        self.written: dict[str, float] = {}
        self.watching = False
        self.first: tuple[list[float], list[float]] = ([], [])
        self.last: tuple[list[float], list[float]] = ([], [])
        self.stations: set[int] = set()

    def patch_links(self) -> Callable[[], None]:
        write, probe = LinkCore._write, self

        async def timed_write(self: LinkCore, data: bytes) -> None:  # the link's method: its own `self`
            if probe.watching and self.name.startswith(STATION):
                probe.written.setdefault(self.name, time.perf_counter())
            await write(self, data)

        LinkCore._write = timed_write  # type: ignore[method-assign]

        def undo() -> None:
            LinkCore._write = write  # type: ignore[method-assign]

        return undo

    def wrap(self, service: TableService) -> None:
        product = service.apply_all

        async def apply_all(inputs: list[Input]) -> list[list[JournaledEvent]]:
            order = self.order
            run: Callable[[], Awaitable[list[list[JournaledEvent]]]] = (
                (lambda: product(inputs)) if order == 0 else (lambda: old_order(service, inputs))
            )
            self.written.clear()
            self.watching = True
            self.entry = time.perf_counter()
            try:
                out = await run()
            finally:
                self.watching = False
            if any(e.type == "no_more_bets" for evs in out for e in evs) and self.written:
                self.record(order)
            return out

        service.apply_all = apply_all  # type: ignore[method-assign]

    def record(self, order: int) -> None:
        writes = sorted(self.written.values())
        self.first[order].append((writes[0] - self.entry) * 1e6)
        self.last[order].append((writes[-1] - self.entry) * 1e6)
        self.stations.add(len(writes))
        self.order = 1 - order
        done = len(self.first[0]) + len(self.first[1])
        if done % 10 == 0:
            progress(f"{done} of {self.rounds} lock-outs")


def figures(name: str, probe: Probe) -> list[str]:
    def q(v: list[float]) -> str:
        return f"p50 {statistics.median(v):.0f} us, p90 {percentile(v, 90):.0f} us"

    lines = [f"{name}:"]
    for i, order in enumerate(ORDERS):
        lines.append(f"  {order}, {len(probe.first[i])} lock-outs: first {q(probe.first[i])}; last {q(probe.last[i])}")
    for what, v in (("first", probe.first), ("last", probe.last)):
        ratio = statistics.median(v[0]) / statistics.median(v[1])
        lines.append(f"  {what} frame p50, the product over the baseline: {ratio:.2f}x")
    return lines


async def run(rounds: int, seed: int, journal: Path) -> Probe:
    probe = Probe(rounds)
    undo = probe.patch_links()
    try:
        await play(seven_seat_config(), rounds=rounds, seed=seed, journal_path=journal, on_service=probe.wrap)
    finally:
        undo()
    return probe


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200, help="rounds played (each one lock-out, orders alternating)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.rounds < 2:
        parser.error(f"--rounds {args.rounds}: at least 2, one lock-out in each order")
    configure_logging(json=False, level="error")
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        probe = asyncio.run(run(args.rounds, args.seed, Path(tmp) / "journal.sqlite"))
    if not probe.first[0] or not probe.first[1]:
        print("no lock-out was timed in one of the orders: no round reached no more bets", file=sys.stderr)
        return 1
    print(
        f"the service's hand-over, apply_all entered for the step holding no more bets -> a wager station's lock "
        f"frame written ({max(probe.stations)} stations, seven-seats.toml, paced ptys, orders alternating per trial)"
    )
    print("\n".join(figures("apply_all entered -> first / last station's lock frame written", probe)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
