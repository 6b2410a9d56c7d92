"""Lock-out latency: from the dealer's "no more bets" press to all seven wager stations confirming the lock.

The path is the controller's own: the panel simulator sends the press over its pseudo-terminal, the
panel driver delivers ButtonPressed, the controller commits the "no more bets" event to a SQLite journal
(WAL, synchronous=FULL: nothing leaves the process before the journal holds it), then sends `lock` to the
seven station drivers at once; each station simulator answers `locked` over its own pty. The clock stops
when the seventh LockAcknowledged reaches the controller. The pure engine step (microseconds) is left
out: it needs a seven-seat chapter (643a), whose round engine is not built yet.

Baseline ("line time"): how long the frames on the critical path take on a real 115200-baud 8N1 line
(10 bits a byte): the press frame, then, per station in parallel, the lock command and the locked event.
Pseudo-terminals ignore the baud rate, so the ratio says how much of the budget the software spends
compared with the wire itself.

With --bus the stations share one multi-drop line (one pty, reference-wager-bus driver): the stations'
`locked` answers then follow each other on the shared return pair, and the baseline counts them all.

    .venv/bin/python bench/lockout.py [--trials 1000] [--stations 7] [--bus]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from controller.core.events import DomainEvent
from controller.shell.logs import configure_logging
from controller.store.journal import Journal
from drivers.interfaces import ButtonPressed, DeviceEvent, LockAcknowledged, WagerBus, WagerStation
from drivers.reference.framing import HOST_ADDRESS, Kind, encode_frame, encode_message
from drivers.registry import create_driver
from drivers.sim.base import SimDevice
from drivers.sim.dealer_panel import DealerPanelSim
from drivers.sim.wager_bus import WagerBusSim
from drivers.sim.wager_station import WagerStationSim

BAUD = 115200
BITS_PER_BYTE = 10  # 8N1: start bit, eight data bits, stop bit


def line_time_ms(stations: int = 1) -> float:
    """Critical-path line time (ACKs left out, as ever). `stations` > 1: that many stations on one 4-wire line,
    where the host's lock frames overlap the answers and the stations' `locked` frames share the return pair."""
    press = encode_frame(HOST_ADDRESS, 1, Kind.DATA, encode_message({"evt": "button", "button": "no_more_bets"}))
    lock = encode_frame(1, 1, Kind.DATA, encode_message({"cmd": "lock"}))
    src = {"src": 1} if stations > 1 else {}
    locked = encode_frame(HOST_ADDRESS, 1, Kind.DATA, encode_message({"evt": "locked", **src}))
    return (len(press) + len(lock) + stations * len(locked)) * BITS_PER_BYTE / BAUD * 1000


QUIET = {"heartbeat_interval": 0}  # no pings competing with the measured frames


def station_simulators(stations: int, bus: bool) -> list[SimDevice | WagerBusSim]:
    if bus:
        return [WagerBusSim("wager_bus", seats=range(1, stations + 1))]
    return [WagerStationSim(f"wager_station_{n}", n) for n in range(1, stations + 1)]


def station_drivers(sims: list[SimDevice | WagerBusSim], stations: int, bus: bool) -> list[WagerStation]:
    """A reference driver per station simulator, or the stations of one wager-bus driver on the shared line."""
    if bus:
        line_settings = {"driver": "reference-wager-bus", "port": sims[0].port, "seats": list(range(1, stations + 1))}
        line = create_driver("wager_bus", {**line_settings, **QUIET})
        assert isinstance(line, WagerBus)
        return list(line.stations.values())
    drivers: list[WagerStation] = []
    for n, sim in enumerate(sims, start=1):
        settings = {"driver": "reference-wager-station", "port": sim.port, "seat": n}
        d = create_driver(f"wager_station_{n}", {**settings, **QUIET})
        assert isinstance(d, WagerStation)
        drivers.append(d)
    return drivers


async def run(trials: int, stations: int, progress: Callable[[int], None], bus: bool = False) -> list[float]:
    panel_sim = DealerPanelSim("dealer_panel")
    sims = station_simulators(stations, bus)
    for sim in (panel_sim, *sims):
        await sim.start()
    panel = create_driver("dealer_panel", {"driver": "reference-dealer-panel", "port": panel_sim.port, **QUIET})
    drivers = station_drivers(sims, stations, bus)
    acks: asyncio.Queue[DeviceEvent] = asyncio.Queue()
    pressed: asyncio.Queue[DeviceEvent] = asyncio.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        journal = Journal(Path(tmp) / "bench.sqlite", "bench", uuid.uuid4().hex)

        def on_panel(ev: DeviceEvent) -> None:
            if isinstance(ev, ButtonPressed):
                pressed.put_nowait(ev)

        def on_station(ev: DeviceEvent) -> None:
            if isinstance(ev, LockAcknowledged):
                acks.put_nowait(ev)

        await panel.start(on_panel)
        for d in drivers:
            await d.start(on_station)
        samples: list[float] = []
        try:
            for i in range(trials):
                await asyncio.gather(*(d.unlock() for d in drivers))
                for _ in drivers:
                    await asyncio.wait_for(acks.get(), 5)
                start = time.perf_counter()
                await panel_sim.press("no_more_bets")
                await asyncio.wait_for(pressed.get(), 5)
                journal.append([DomainEvent("no_more_bets", "bench")], datetime.now(UTC))
                await asyncio.gather(*(d.lock() for d in drivers))
                for _ in drivers:
                    ack = await asyncio.wait_for(acks.get(), 5)
                    assert isinstance(ack, LockAcknowledged) and ack.locked
                samples.append((time.perf_counter() - start) * 1000)
                progress(i + 1)
        finally:
            journal.close()
            for dev in (panel, *drivers):
                await dev.stop()
            for sim in (panel_sim, *sims):
                await sim.stop()
    return samples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--stations", type=int, default=7)
    ap.add_argument("--bus", action="store_true", help="all stations on one multi-drop line")
    args = ap.parse_args()
    configure_logging(json=False, level="warning")  # the figures are the output; logs only if something fails

    def progress(done: int) -> None:
        if done % 100 == 0:
            print(f"  {done}/{args.trials} trials", file=sys.stderr, flush=True)

    samples = asyncio.run(run(args.trials, args.stations, progress, args.bus))
    q = statistics.quantiles(samples, n=100, method="inclusive")
    p50, p99 = statistics.median(samples), q[98]
    floor = line_time_ms(args.stations if args.bus else 1)
    wiring = "on one multi-drop line" if args.bus else "each on its own line"
    print(f"lock-out, {args.stations} stations {wiring}, {args.trials} trials over pseudo-terminals")
    print(f"line time of the critical-path frames at {BAUD} baud (baseline): {floor:.3f} ms")
    print(
        f"p50 {p50:.3f} ms ({p50 / floor:.2f}x line time)   mean {statistics.fmean(samples):.3f} ms   "
        f"max {max(samples):.3f} ms"
    )
    print(f"p99 {p99:.3f} ms ({p99 / floor:.2f}x line time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
