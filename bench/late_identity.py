"""A lock-out just after a late identity on one paced multi-drop line (docs/protocol.md section 13, "What the host
writes around a window": a frame sent again is answered again).

Per trial, seven v4 stations (WagerBusSim on a real pty paced at 115200 baud) and the reference wager-bus driver in
this process, every station unlocked and the line quiet first. 2000 bytes of line noise (174 ms) ahead on the return
pair hold station 3's answer to an `identify` past the host's ACK timeout (100 ms): the host sends it again and the
station answers both copies, one identity after the other. As the first identity ends the exchange, every station is
locked. A pty cannot collide, so the simulator's on_group hook damages each slot pair that begins while the return
pair still carries a frame, as a real line's collision would (tests/drivers/test_bus_late_identity.py does the same).
The clock runs from the locks to the last station's lock confirmed; each trial counts the stations locked on their own
after the GROUP frame (its pair lost).

Baseline, alternated in the same process: the same lock after the same identify answered once (no noise ahead), a
plain GROUP lock. Run it in two trees (this branch: the host waits for the second identity before the GROUP frame;
before, the GROUP frame went at once and the stations fell back to locks of their own) to compare them.

    .venv/bin/python bench/late_identity.py [--trials 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from typing import Any

import benchlib
from busline import ADDRESSES, seven_online

from controller.shell.logs import configure_logging
from drivers.reference.framing import SLOT_PERIOD, SLOT_TURNAROUND
from drivers.reference.wager_bus import ReferenceWagerBus
from drivers.sim.line import LineTiming
from drivers.sim.wager_bus import WagerBusSim

NOISE = bytes(2000)  # 174 ms of the return pair at 115200 baud: past the host's 100 ms ACK timeout
SETTLE_S = 0.3  # the line's late frames (proofs, their answers) off the line before the next trial: a bench's pause


def _collide(sim: WagerBusSim) -> None:
    """Each slot pair that begins while the return pair still carries a frame is damaged, as a real line collides."""
    endpoint = sim._endpoint
    assert endpoint is not None

    def on_group(_frame: Any) -> None:
        busy_until = endpoint.outbound._free_at
        for slot, seat in enumerate(sorted(ADDRESSES)):
            if sim.heard_at + sim.timing.frame_time(SLOT_TURNAROUND + slot * SLOT_PERIOD) < busy_until:
                sim.stations[seat].damaged_slots = 1

    sim.on_group = on_group


def _count_alone(driver: ReferenceWagerBus) -> list[int]:
    """A counter of the stations sent their command on their own (their pair lost), bumped as each is."""
    alone = [0]
    for station in driver.stations.values():
        real = station.alone

        async def counted(code: int, on: bool | None = None, real: Any = real) -> None:
            alone[0] += 1
            await real(code, on)

        station.alone = counted  # type: ignore[method-assign]
    return alone


async def trial(driver: ReferenceWagerBus, sim: WagerBusSim, late: bool, alone: list[int]) -> tuple[float, int, int]:
    """Seconds from the locks to the last confirmed, the identify's copies written, the stations locked alone."""
    link = driver.link
    assert link is not None
    stations = list(driver.stations.values())
    await asyncio.gather(*(s.unlock() for s in stations))
    await asyncio.sleep(SETTLE_S)
    copies = [0]
    real_written = link.window.written

    def written(frame: Any, length: int, answer: Any) -> None:
        if frame.address == ADDRESSES[3]:
            copies[0] += 1
        real_written(frame, length, answer)

    link.window.written = written  # type: ignore[method-assign]
    try:
        if late:
            sim.write(NOISE)
        link.forget(ADDRESSES[3])  # as the driver opens a station's session: identified again from v1
        await link.send_to(ADDRESSES[3], {"cmd": "identify"})
    finally:
        link.window.written = real_written  # type: ignore[method-assign]
    before = alone[0]
    pressed = time.perf_counter()
    await asyncio.gather(*(s.lock() for s in stations))
    elapsed = time.perf_counter() - pressed
    await driver.commands_done()
    await asyncio.sleep(SETTLE_S)
    return elapsed, copies[0], alone[0] - before


async def run(trials: int) -> dict[bool, list[tuple[float, int, int]]]:
    sim = WagerBusSim("wager_bus", addresses=ADDRESSES, timing=LineTiming())
    await sim.start()
    driver = await seven_online(sim)
    await asyncio.sleep(SETTLE_S)
    _collide(sim)
    alone = _count_alone(driver)
    out: dict[bool, list[tuple[float, int, int]]] = {True: [], False: []}
    try:
        for i in range(trials):
            for late in (i % 2 == 0, i % 2 == 1):  # alternate which goes first
                out[late].append(await trial(driver, sim, late, alone))
            if (i + 1) % 5 == 0:
                benchlib.progress(f"{i + 1}/{trials} trials")
    finally:
        await asyncio.gather(*(s.stop() for s in driver.stations.values()))
        await sim.stop()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    args = ap.parse_args()
    configure_logging(level="warning")
    figures = asyncio.run(run(args.trials))
    print(f"load {os.getloadavg()[0]:.2f}; {args.trials} trials each, alternated; paced line 115200 baud")
    medians = {}
    for late, name in ((False, "baseline: lock after an identify answered once"), (True, "lock after a late identity")):
        times = [t * 1000 for t, _, _ in figures[late]]
        resent = sum(c > 1 for _, c, _ in figures[late])
        alone = [a for _, _, a in figures[late]]
        medians[late] = statistics.median(times)
        print(
            f"{name}: median {medians[late]:.2f} ms, p90 {benchlib.percentile(times, 90):.2f} ms; identify sent again "
            f"in {resent}/{len(times)}; GROUP lock kept (no station alone) in {alone.count(0)}/{len(times)}, "
            f"stations locked alone {sum(alone)}"
        )
    print(f"ratio late identity / baseline: {medians[True] / medians[False]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
