"""A lock pressed while a reopening's slot window is open, on one paced multi-drop line (docs/protocol.md section 13,
"What the host writes around a window").

Per trial, seven v4 stations (WagerBusSim on a real pty paced at 115200 baud) and the reference wager-bus driver in
this process: every station is unlocked at once (one GROUP unlock) and, in the same turn the GROUP unlock is written,
every station is locked. The clock runs from the locks to the last station's lock confirmed; the line's bytes over the
lock are counted both ways (the endpoint's counters, from the press to the confirmations).

Baseline, alternated in the same process: the same lock on a quiet line (pressed once the reopening's window closed),
a plain GROUP lock. The ratio says what pressing it inside a window costs. Run it in two trees (this branch: the lock
waits for the window and goes as a GROUP lock; before it, v2's broadcast lock at once) to compare the two choices.

    .venv/bin/python bench/lock_in_window.py [--trials 40]

--held: how long a heartbeat that falls due in a reopening's window waits for its answer when station 3 missed its
slot (its pair damaged), so the host's receive window stays open to the ACK timeout. Timed from the ping asked, right
after the GROUP unlock was written, to its `pong`. Baseline, alternated in the same process: the host holding it until
the receive window closes (LineWindow.hold_until_closed, the reference host before); against it, the frame released
once the window has ended on the line (docs/protocol.md section 13, "What the host writes around a window").

--mixed: "no more bets" on a mixed line, seat 2's station kept to protocol 1 (so the others get v2's broadcast lock and
it a `lock` of its own), every station unlocked and the line quiet first. Timed from the locks to the v1 station's
`lock` written, and to the last station's lock confirmed (the lock-out). Baseline, alternated in the same process: the
v1 station locked alone on the same line (its exchange's floor). Run it in two trees to compare their lock-outs.
--mixed --busy: a heartbeat `ping` to the v1 station is written just before the locks, so its `lock` queues behind
that exchange: the case where the v1 `lock` is written after the broadcast.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import benchlib
from busline import ADDRESSES, seven_online

from controller.shell.logs import configure_logging
from drivers.reference.wager_bus import ReferenceWagerBus
from drivers.sim.line import LineTiming
from drivers.sim.wager_bus import WagerBusSim


def _after_group(driver: ReferenceWagerBus, action: Callable[[], None]) -> None:
    """Run `action` once, right after the next GROUP frame was written (its window is open)."""
    link = driver.link
    assert link is not None
    real = link.send_group

    def spy(code: int, stations: Any, on: bool | None = None) -> None:
        real(code, stations, on)
        link.send_group = real  # type: ignore[method-assign]
        action()

    link.send_group = spy  # type: ignore[method-assign]


sim_bytes = [0]  # both ways, counted by the endpoint's tap


def _count(_from_host: bool, data: bytes) -> None:
    sim_bytes[0] += len(data)


async def trial(driver: ReferenceWagerBus, sim: WagerBusSim, in_window: bool) -> tuple[float, int]:
    """Seconds from the locks to the last confirmed, and the bytes both ways meanwhile."""
    stations = list(driver.stations.values())
    locked: list[asyncio.Future[list[None]]] = []
    pressed: list[tuple[float, int]] = []

    def press() -> None:
        pressed.append((time.perf_counter(), sim_bytes[0]))
        locked.append(asyncio.ensure_future(asyncio.gather(*(s.lock() for s in stations))))

    if in_window:
        _after_group(driver, press)
    await asyncio.gather(*(s.unlock() for s in stations))
    if not in_window:
        press()
    await locked[0]
    elapsed = time.perf_counter() - pressed[0][0]
    moved = sim_bytes[0] - pressed[0][1]
    # Let the line settle (late frames, host ACKs) before the next trial.
    await asyncio.sleep(0.05)
    return elapsed, moved


async def held_trial(driver: ReferenceWagerBus, sim: WagerBusSim, until_closed: bool) -> float:
    """Seconds from a ping asked in the window (station 3 having missed its slot) to its answer."""
    link = driver.link
    assert link is not None
    link.window.hold_until_closed = until_closed
    sim.stations[3].damaged_slots = 1
    stations = driver.stations
    asked: list[tuple[float, asyncio.Future[float]]] = []

    async def answered() -> float:
        await stations[5].ping()
        return time.perf_counter()

    _after_group(driver, lambda: asked.append((time.perf_counter(), asyncio.ensure_future(answered()))))
    await asyncio.gather(*(s.unlock() for s in stations.values()))  # station 3's own unlock at the ACK timeout
    started, done = asked[0]
    elapsed = await done - started
    await asyncio.sleep(0.05)
    return elapsed


async def mixed_trial(driver: ReferenceWagerBus, every: bool, busy: bool = False) -> tuple[float, float]:
    """Seconds from the locks (every station's, or the v1 station's alone) to the v1 station's `lock` written, and to
    the last lock confirmed."""
    link = driver.link
    assert link is not None
    stations = driver.stations
    await asyncio.gather(*(s.unlock() for s in stations.values()))
    await asyncio.sleep(0.05)  # the unlocks' answers off the line: the lock-out starts on a quiet line
    real = link.window.written
    v1_written: list[float] = []

    def spy(frame: Any, length: int, answer: Any) -> None:
        if frame.address == ADDRESSES[MIXED_V1_SEAT]:
            v1_written.append(time.perf_counter())
        real(frame, length, answer)

    link.window.written = spy  # type: ignore[method-assign]
    try:
        # The ping's task is made first: its first step writes the ping before the locks' first steps.
        ping = asyncio.ensure_future(stations[MIXED_V1_SEAT].ping()) if busy else None
        pressed = time.perf_counter()
        await asyncio.gather(*(s.lock() for s in stations.values() if every or s.seat == MIXED_V1_SEAT))
        done = time.perf_counter()
        if ping is not None:
            await ping
    finally:
        link.window.written = real  # type: ignore[method-assign]
    # Busy, the v1 station's first frame is the ping, its second the `lock` (a retransmission comes later still).
    return v1_written[1 if busy else 0] - pressed, done - pressed


MIXED_V1_SEAT = 2


async def run(
    trials: int, held: bool = False, mixed: bool = False, busy: bool = False
) -> dict[bool, list[tuple[float, Any]]]:
    sim = WagerBusSim("wager_bus", addresses=ADDRESSES, timing=LineTiming())
    if mixed:
        sim.stations[MIXED_V1_SEAT].configure_line((1,))
    await sim.start()
    assert sim._endpoint is not None
    sim._endpoint.tap = _count
    driver = await seven_online(sim)
    await asyncio.sleep(0.3)  # the start's last frames off the line
    out: dict[bool, list[tuple[float, Any]]] = {True: [], False: []}
    try:
        for i in range(trials):
            for in_window in (i % 2 == 0, i % 2 == 1):  # alternate which goes first
                if mixed:
                    out[in_window].append(await mixed_trial(driver, every=in_window, busy=busy))
                elif held:
                    out[in_window].append((await held_trial(driver, sim, until_closed=not in_window), 0))
                else:
                    out[in_window].append(await trial(driver, sim, in_window))
            if (i + 1) % 10 == 0:
                benchlib.progress(f"{i + 1}/{trials} trials")
    finally:
        await asyncio.gather(*(s.stop() for s in driver.stations.values()))
        await sim.stop()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument(
        "--held", action="store_true", help="time a heartbeat held by a window whose station missed its slot"
    )
    ap.add_argument("--mixed", action="store_true", help="a lock-out on a line with a v1 station among v4 stations")
    ap.add_argument("--busy", action="store_true", help="with --mixed: a ping to the v1 station just before the locks")
    args = ap.parse_args()
    configure_logging(level="warning")
    figures = asyncio.run(run(args.trials, args.held, args.mixed, args.busy))
    print(f"load {os.getloadavg()[0]:.2f}; {args.trials} trials each, alternated; paced line 115200 baud")
    if args.held:
        return _report_held(figures)
    if args.mixed:
        return _report_mixed(figures)
    medians = {}
    for in_window, name in (
        (False, "baseline: lock on a quiet line"),
        (True, "lock pressed in the reopening's window"),
    ):
        times = [t * 1000 for t, _ in figures[in_window]]
        moved = [b for _, b in figures[in_window]]
        medians[in_window] = statistics.median(times)
        print(
            f"{name}: median {medians[in_window]:.2f} ms, p90 {benchlib.percentile(times, 90):.2f} ms, "
            f"bytes on the line {statistics.median(moved):.0f}"
        )
    print(f"ratio in-window / quiet: {medians[True] / medians[False]:.2f}")
    return 0


def _report_mixed(figures: dict[bool, list[tuple[float, Any]]]) -> int:
    medians = {}
    for every, name in ((False, "baseline: the v1 station locked alone"), (True, "lock-out of the mixed line")):
        to_v1 = [v * 1000 for v, _ in figures[every]]
        whole = [t * 1000 for _, t in figures[every]]
        medians[every] = statistics.median(whole)
        print(
            f"{name}: press to the v1 `lock` written median {statistics.median(to_v1):.2f} ms "
            f"(p90 {benchlib.percentile(to_v1, 90):.2f}); press to the last confirmed median {medians[every]:.2f} ms, "
            f"p90 {benchlib.percentile(whole, 90):.2f} ms"
        )
    print(f"ratio lock-out / v1 alone: {medians[True] / medians[False]:.2f}")
    return 0


def _report_held(figures: dict[bool, list[tuple[float, int]]]) -> int:
    medians = {}
    for released, name in (
        (False, "baseline: held until the receive window closed"),
        (True, "released once the window ended on the line"),
    ):
        times = [t * 1000 for t, _ in figures[released]]
        medians[released] = statistics.median(times)
        print(f"{name}: ping to pong median {medians[released]:.2f} ms, p90 {benchlib.percentile(times, 90):.2f} ms")
    print(f"ratio released / held: {medians[True] / medians[False]:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
