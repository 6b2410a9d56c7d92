"""Lock-out latency: from the dealer's "no more bets" press to all seven wager stations confirming the lock.

The path is the controller's own: the panel simulator sends the press over its pseudo-terminal, the panel driver
delivers ButtonPressed, and the controller does what controller/shell/service.py does with the step's commands: the
lock commands leave at once while the journal's writer thread commits the "no more bets" event (SQLite WAL,
synchronous=FULL) in parallel (docs/recovery.md, "Locks before the commit"); each station simulator answers
`locked`. The clock stops when the seventh LockAcknowledged reaches the controller; the commit's own time and the
time until both are done are printed beside it. `--journal-first` measures the old order (commit, then lock).

The simulators pace every line at 115200 baud 8N1 with the idle gap between frames a UART leaves
(drivers/sim/line.py), so the figures include real wire time; --unpaced runs on bare pseudo-terminals. Baseline
("line time"): the wire time of the frames actually sent on the critical path in the protocol version the drivers
negotiated: per station (in parallel, one line each) the lock command and what answers it: in v3 one REPLY that is
the ACK and the `locked` at once (7 + 7 bytes), in v1/v2 the station's ACK then its `locked`. With --bus the
stations share one multi-drop line: v3, one GROUP frame naming the stations and each station's two-byte confirmation
in its time slot (the line time counts the slot window, guard times included, up to the last confirmation's last
byte); v2, one broadcast lock and the seven `locked` one after another on the return pair. Each trial counts the
bytes the simulated lines carried: the bench stops if they are not the frames the
baseline names. On a v3 bus line these include the proofs of the slot pairs that follow the window (docs/protocol.md
section 13, "The proof of a pair"): the bench waits for them before the next trial and prints when they ended; the
lock-out's figures stop at the seventh confirmation. --sims-process runs the simulators in a process of their own,
so the figures are the controller's; with --pin on the controller's process keeps to one core and the simulators' to
the other (bench/lockout_pin.py), and --pin alternate switches every 50 trials between unpinned and pinned and prints
both sets of figures, each named.

    .venv/bin/python bench/lockout.py [--trials 1000] [--stations 7] [--bus] [--protocol 3] [--unpaced] [--sims-process]
        [--pin off|on|alternate]
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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from benchlib import machine, percentile
from lockout_pin import MODES, UNPINNED, trial_pinning
from lockout_sims import ChildSimulators, Simulators, serve_sims
from lockout_wire import DRIVER_PROTOCOL, critical_bytes, expected_station_bytes, line_time_ms

from controller.core.events import DomainEvent
from controller.shell.locks import lock_frames_out
from controller.shell.logs import configure_logging
from controller.shell.writer import JournalWriter
from controller.store.journal import Journal
from drivers.interfaces import WAGER_BUS_ID, ButtonPressed, DeviceEvent, LockAcknowledged, WagerBus, WagerStation
from drivers.reference.device import ReferenceDevice
from drivers.reference.wager_bus import BusWagerStation
from drivers.registry import create_driver
from drivers.sim.line import UNPACED, LineTiming

QUIET = {"heartbeat_interval": 0}  # no pings competing with the measured frames


def station_drivers(ports: list[str], stations: int, bus: bool, protocol: int) -> list[WagerStation]:
    """A reference driver per station simulator, or the stations of one wager-bus driver on the shared line."""
    quiet = {**QUIET, "protocol": protocol}
    if bus:
        line_settings = {"driver": "reference-wager-bus", "port": ports[0], "seats": list(range(1, stations + 1))}
        line = create_driver(WAGER_BUS_ID, {**line_settings, **quiet})
        assert isinstance(line, WagerBus)
        return list(line.stations.values())
    drivers: list[WagerStation] = []
    for n, port in enumerate(ports, start=1):
        settings = {"driver": "reference-wager-station", "port": port, "seat": n}
        d = create_driver(f"wager_station_{n}", {**settings, **quiet})
        assert isinstance(d, WagerStation)
        drivers.append(d)
    return drivers


async def confirmed(acks: asyncio.Queue[tuple[float, DeviceEvent]], stations: int, *, locked: bool) -> float:
    """Until every station confirmed `locked`; a late repeat of the other state (a station named again by a broadcast
    retried under load, answering twice) is skipped, not counted. The time the last confirmation was read."""
    seats: set[int] = set()
    last = 0.0
    while len(seats) < stations:
        read, ack = await asyncio.wait_for(acks.get(), 5)
        if isinstance(ack, LockAcknowledged) and ack.locked == locked:
            seats.add(ack.seat)
            last = read
    return last


@dataclass
class Figures:
    whole: list[float] = field(default_factory=list)  # ms from the press
    controller: list[float] = field(default_factory=list)  # ms from the press reaching the controller
    station_bytes: list[int] = field(default_factory=list)  # bytes on the station lines, one trial's lock-out
    commit: list[float] = field(default_factory=list)  # ms from the press reaching the controller to the commit done
    both: list[float] = field(default_factory=list)  # ms from the press reaching the controller to locked and durable
    # Where each trial's time from the press reaching the controller went, ms: until the lock frames were written (the
    # host), until the last station's answer entered the host's port (the lines and the stations), until the host read
    # the last confirmation (the host's loop, or a late byte of the pty's), until the bench's task had it (host).
    parts: list[tuple[float, float, float, float]] = field(default_factory=list)
    # On a v3 bus line, ms from the press reaching the controller until every slot pair was proven by a lock of its own.
    proven: list[float] = field(default_factory=list)
    version: int = 1


async def trial(
    sims: Simulators | ChildSimulators,
    drivers: list[WagerStation],
    acks: asyncio.Queue[tuple[float, DeviceEvent]],
    pressed: asyncio.Queue[float],
    writer: JournalWriter,
    figures: Figures,
    journal_first: bool,
) -> None:
    """One lock-out, timed: the stations unlocked, the press, the locks and the commit, the bytes the lines carried."""
    await asyncio.gather(*(d.unlock() for d in drivers))
    await confirmed(acks, len(drivers), locked=False)
    await asyncio.sleep(0.002)  # the host's last ACKs leave the lines before the clock starts
    before = await sims.line_bytes()
    start = time.perf_counter()
    # The panel waits for the host's ACK of its press; the controller does not wait for the panel.
    press = asyncio.create_task(sims.press())
    arrived = await asyncio.wait_for(pressed.get(), 5)
    no_more_bets = [DomainEvent("no_more_bets", "bench")]
    if journal_first:
        await writer.wait(writer.submit(no_more_bets, datetime.now(UTC), []))
        committed = time.perf_counter()
    locking = asyncio.gather(*(d.lock() for d in drivers))
    durable: list[float] = []
    await lock_frames_out()  # as the service does: the frames leave (a link writes at once), then the commit starts
    out = time.perf_counter()
    if not journal_first:
        commit = writer.submit(no_more_bets, datetime.now(UTC), [])
        assert commit.running is not None
        # Stamped as the loop settles it, not when this task gets to it after the locks (which would make every
        # commit end with the lock-out).
        commit.running.add_done_callback(lambda _done: durable.append(time.perf_counter()))
    last_read = await confirmed(acks, len(drivers), locked=True)
    end = time.perf_counter()
    if not journal_first:
        await writer.wait(commit)
        committed = durable[0] if durable else time.perf_counter()
    await locking
    await press
    figures.whole.append((end - start) * 1000)
    figures.controller.append((end - arrived) * 1000)
    figures.commit.append((committed - arrived) * 1000)
    figures.both.append((max(end, committed) - arrived) * 1000)
    answered = await sims.answered()
    figures.parts.append(
        ((out - arrived) * 1000, (answered - out) * 1000, (last_read - answered) * 1000, (end - last_read) * 1000)
    )
    if isinstance(drivers[0], BusWagerStation):
        await drivers[0].bus.commands_done()  # the proofs of the slot pairs, before the bytes are counted
        figures.proven.append((time.perf_counter() - arrived) * 1000)
    await asyncio.sleep(0.002)  # let the host's ACKs of the confirmations reach the lines' counters
    figures.station_bytes.append(await sims.line_bytes() - before)


async def run(
    trials: int,
    stations: int,
    progress: Callable[[int], None],
    bus: bool = False,
    protocol: int = 2,
    timing: LineTiming = UNPACED,
    sims_process: bool = False,
    journal_first: bool = False,
    pin: str = "off",
) -> dict[str, Figures]:
    """The trials' figures by how the processes ran: UNPINNED, or a Pinning's label (--pin on / alternate)."""
    sims = (ChildSimulators if sims_process else Simulators)(stations, bus, timing)
    panel_port, ports = await sims.start()
    panel_settings = {"driver": "reference-dealer-panel", "port": panel_port, "protocol": protocol, **QUIET}
    panel = create_driver("dealer_panel", panel_settings)
    drivers = station_drivers(ports, stations, bus, protocol)
    acks: asyncio.Queue[tuple[float, DeviceEvent]] = asyncio.Queue()
    pressed: asyncio.Queue[float] = asyncio.Queue()
    results: dict[str, Figures] = {}
    with tempfile.TemporaryDirectory() as tmp:
        journal = Journal(Path(tmp) / "bench.sqlite", "bench", uuid.uuid4().hex)
        writer = JournalWriter(journal)  # the service's writer thread (controller/shell/writer.py)

        def on_panel(ev: DeviceEvent) -> None:
            if isinstance(ev, ButtonPressed):
                pressed.put_nowait(time.perf_counter())

        def on_station(ev: DeviceEvent) -> None:
            if isinstance(ev, LockAcknowledged):
                acks.put_nowait((time.perf_counter(), ev))  # the driver delivers it in the read that brought it

        await panel.start(on_panel)
        for d in drivers:
            await d.start(on_station)
        versions = {d.protocol_version for d in (panel, *drivers) if isinstance(d, ReferenceDevice)}
        if len(versions) != 1:
            raise SystemExit(f"bench: the devices negotiated different versions {sorted(versions)}")
        version = versions.pop()
        sims_pid = sims.pid if isinstance(sims, ChildSimulators) else None
        try:
            for i, label in enumerate(trial_pinning(trials, pin, sims_pid)):
                figures = results.setdefault(label, Figures(version=version))
                await trial(sims, drivers, acks, pressed, writer, figures, journal_first)
                progress(i + 1)
        finally:
            writer.close()
            journal.close()
            for dev in (panel, *drivers):
                await dev.stop()
            await sims.stop()
    return results


def report(results: dict[str, Figures], args: argparse.Namespace, timing: LineTiming) -> None:
    """The run's conditions and baseline, then the figures of each way the processes ran (one, unless --pin
    alternate), each under its name, and with both the pinned figures over the unpinned ones."""
    version = next(iter(results.values())).version
    press_bytes, path_bytes = critical_bytes(args.stations, version, args.bus)
    _v2_press, v2_path_bytes = critical_bytes(args.stations, 2, args.bus)
    wiring = "on one multi-drop line" if args.bus else "each on its own line"
    lines = f"paced {timing.baud}-baud lines" if timing.paced else "unpaced pseudo-terminals"
    order = "journal first, then the locks" if args.journal_first else "locks at once, the journal's commit in parallel"
    print(
        f"lock-out, {args.stations} stations {wiring}, {args.trials} trials over {lines}, protocol v{version}, {order}"
    )
    print("the simulators ran " + ("in a process of their own" if args.sims_process else "in this process"))
    line = timing if timing.paced else LineTiming()
    floors = (
        line_time_ms(press_bytes + path_bytes, line),
        line_time_ms(path_bytes, line),
        line_time_ms(v2_path_bytes, line),
    )
    print(
        f"line time of the critical-path frames actually sent at {line.baud} baud (baseline): {floors[0]:.3f} ms "
        f"from the press ({press_bytes} + {path_bytes} byte times), {floors[1]:.3f} ms once it reached the controller "
        f"(v2's frames: {v2_path_bytes} bytes, {floors[2]:.3f} ms)"
    )
    for label, figures in results.items():
        if args.pin != "off":
            print(f"-- {label}: {len(figures.controller)} trials")
        report_figures(figures, args, timing, floors)
    if UNPINNED in results and len(results) == 2:
        unpinned = results.pop(UNPINNED)
        [pinned] = results.values()
        ratios = [
            f"{name} {percentile(sorted(pinned.controller), q) / percentile(sorted(unpinned.controller), q):.2f}x"
            for name, q in (("p50", 50), ("p99", 99))
        ]
        print("pinned over unpinned, from the press reaching the controller: " + ", ".join(ratios))


def report_figures(
    figures: Figures, args: argparse.Namespace, timing: LineTiming, floors: tuple[float, float, float]
) -> None:
    whole_floor, path_floor, v2_floor = floors
    carried = statistics.median(figures.station_bytes)
    expected = expected_station_bytes(args.stations, figures.version, args.bus)
    print(f"bytes the station lines carried per lock-out: {carried:.0f} (the frames the baseline names: {expected})")
    if carried != expected:
        print("  the lines carried other frames than the baseline names: the ratios below are not to be trusted")
    if figures.proven and figures.version >= 3:
        proven = sorted(figures.proven)
        print(
            f"every slot pair proven by a lock of its own, from the press reaching the controller: "
            f"p50 {statistics.median(proven):.3f} ms, p99 {percentile(proven, 99):.3f} ms (after the lock-out)"
        )
    for name, samples, floor, target in (
        ("from the press", figures.whole, whole_floor, None),
        ("from the press reaching the controller", figures.controller, path_floor, 2.0 if not args.bus else 6.0),
    ):
        q = statistics.quantiles(samples, n=100, method="inclusive")
        p50, p99 = statistics.median(samples), q[98]
        print(
            f"{name}: p50 {p50:.3f} ms ({p50 / floor:.2f}x line time)   p99 {p99:.3f} ms ({p99 / floor:.2f}x line "
            f"time, {p99 / v2_floor:.2f}x v2's)   max {max(samples):.3f} ms"
        )
        if target is None:
            continue
        commit, both = sorted(figures.commit), sorted(figures.both)
        print(
            f"  the journal's durable commit, from the press reaching the controller: p50 "
            f"{statistics.median(commit):.3f} ms, p99 {percentile(commit, 99):.3f} ms; locked and durable both: p50 "
            f"{statistics.median(both):.3f} ms, p99 {percentile(both, 99):.3f} ms"
        )
        print(where_the_time_went(figures))
        if timing.paced:
            verdict = "meets" if p99 <= target and (args.bus or p99 <= 1.3 * floor) else "misses"
            bound = f"p99 <= {target:g} ms" + ("" if args.bus else " and <= 1.3x line time")
            print(f"  target {bound}: {verdict}")


def where_the_time_went(figures: Figures) -> str:
    """Every trial's and the slowest 1 %'s time from the press reaching the controller, in its four parts: the
    host until the lock frames were written, the lines and the stations until the last answer entered its port, the
    host until it read the last confirmation, the host until the bench's task had it. A slow trial whose time is in
    the second part waited for the stations' answers (on a loaded machine: for the simulators' process to run), not
    for the controller."""
    order = sorted(range(len(figures.controller)), key=figures.controller.__getitem__)
    slow = order[-max(1, len(order) // 100) :]

    def parts(trials: list[int]) -> str:
        host, line, read, after = (statistics.median(figures.parts[i][k] for i in trials) for k in range(4))
        return f"host {host:.3f} + lines and stations {line:.3f} + host's read {read:.3f} + host {after:.3f} ms"

    return f"  where it went (medians): every trial {parts(order)};\n  the slowest 1 % {parts(slow)}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--stations", type=int, default=7)
    ap.add_argument("--bus", action="store_true", help="all stations on one multi-drop line")
    ap.add_argument(
        "--protocol", type=int, choices=(1, 2, 3, 4), default=DRIVER_PROTOCOL, help="highest version the drivers speak"
    )
    ap.add_argument(
        "--journal-first", action="store_true", help="the old order: the commit's fsync before any lock leaves"
    )
    ap.add_argument("--unpaced", action="store_true", help="bare pseudo-terminals: no wire time")
    ap.add_argument(
        "--sims-process", action="store_true", help="the simulators in a process of their own: the controller alone"
    )
    ap.add_argument(
        "--pin",
        choices=MODES,
        default="off",
        help="with --sims-process: the controller on one core and the simulators on the other; alternate: every 50 "
        "trials, both sets of figures printed",
    )
    ap.add_argument("--serve-sims", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.pin != "off" and not args.sims_process:
        ap.error("--pin needs --sims-process: the simulators in this process cannot have a core of their own")
    configure_logging(json=False, level="warning")  # the figures are the output; logs only if something fails
    timing = UNPACED if args.unpaced else LineTiming()
    if args.serve_sims:
        asyncio.run(serve_sims(args.stations, args.bus, timing))
        return 0

    def progress(done: int) -> None:
        if done % 100 == 0:
            print(f"  {done}/{args.trials} trials", file=sys.stderr, flush=True)

    print(machine())
    results = asyncio.run(
        run(
            args.trials,
            args.stations,
            progress,
            args.bus,
            args.protocol,
            timing,
            args.sims_process,
            args.journal_first,
            args.pin,
        )
    )
    report(results, args, timing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
