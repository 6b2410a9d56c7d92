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
baseline names. --sims-process runs the simulators in a process of their own, so the figures are the controller's.

    .venv/bin/python bench/lockout.py [--trials 1000] [--stations 7] [--bus] [--protocol 3] [--unpaced] [--sims-process]
"""

from __future__ import annotations

import argparse
import asyncio
import json
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

from controller.core.events import DomainEvent
from controller.shell.logs import configure_logging
from controller.shell.service import lock_frames_out
from controller.shell.writer import JournalWriter
from controller.store.journal import Journal
from drivers.interfaces import ButtonPressed, DeviceEvent, LockAcknowledged, WagerBus, WagerStation
from drivers.reference.device import ReferenceDevice, ReferenceSettings
from drivers.reference.framing import (
    BROADCAST_ADDRESS,
    COMPACT_VERSIONS,
    GROUP_LOCK,
    HOST_ADDRESS,
    SLOT_CONFIRMATION,
    SLOT_PERIOD,
    SLOT_TURNAROUND,
    VERSION_3,
    Kind,
    encode_frame,
    encode_group,
    encode_message,
)
from drivers.reference.wager_bus import ReferenceWagerBusSettings
from drivers.registry import create_driver
from drivers.sim.base import SimDevice
from drivers.sim.dealer_panel import DealerPanelSim
from drivers.sim.line import UNPACED, LineTiming
from drivers.sim.wager_bus import WagerBusSim
from drivers.sim.wager_station import WagerStationSim


def frame_len(
    message: dict[str, object], version: int, *, from_device: bool, address: int = 1, kind: Kind = Kind.DATA
) -> int:
    if version in COMPACT_VERSIONS:
        return len(encode_frame(address, 1, kind, encode_message(message, version), version, from_device))
    return len(encode_frame(HOST_ADDRESS if from_device else address, 1, Kind.DATA, encode_message(message)))


def ack_len(version: int) -> int:
    return len(encode_frame(1, 1, Kind.ACK, b"", version, version in COMPACT_VERSIONS))


def critical_bytes(stations: int, version: int, bus: bool) -> tuple[int, int]:
    """Bytes on the critical path: (the press frame, from the press reaching the controller to the last
    confirmation). One line per station: the lock, the station's ACK, its `locked`, on every line at once.
    A multi-drop line: v3, the GROUP frame and its slot window (in byte times, guards included); v2, one broadcast
    naming every station then the seven `locked` on the return pair;
    v1, the first lock frame then seven ACK + `locked` (with `src`) pairs on the return pair."""
    press = frame_len({"evt": "button", "button": "no_more_bets"}, version, from_device=True)
    if version == VERSION_3 and bus:
        # The GROUP frame, then the slot window up to the last confirmation's last byte: the turnaround, a period per
        # station but the last, and the last one's two bytes (docs/protocol.md section 13). Byte times, not bytes.
        group = len(encode_group(1, GROUP_LOCK, range(1, stations + 1)))
        return press, group + SLOT_TURNAROUND + (stations - 1) * SLOT_PERIOD + SLOT_CONFIRMATION
    if version == VERSION_3 and not bus:
        # The lock as a CODE frame, answered by the REPLY that is its ACK and the `locked` at once (section 12).
        lock = frame_len({"cmd": "lock"}, version, from_device=False)
        return press, lock + frame_len({"evt": "locked"}, version, from_device=True, kind=Kind.REPLY)
    src = {"src": 1} if bus and version not in COMPACT_VERSIONS else {}
    locked = frame_len({"evt": "locked", **src}, version, from_device=True)
    if bus and version in COMPACT_VERSIONS:
        named = list(range(1, stations + 1))
        broadcast = frame_len({"cmd": "lock", "stations": named}, 2, from_device=False, address=BROADCAST_ADDRESS)
        return press, broadcast + stations * locked
    lock = frame_len({"cmd": "lock"}, version, from_device=False)
    return press, lock + (stations if bus else 1) * (ack_len(version) + locked)


def line_time_ms(n_bytes: int, timing: LineTiming) -> float:
    return timing.frame_time(n_bytes) * 1000


# What a reference driver speaks unless its settings cap it: growth.py measures the lock-out with it.
DRIVER_PROTOCOL = int(ReferenceSettings.model_fields["protocol"].default)
assert ReferenceWagerBusSettings.model_fields["protocol"].default == DRIVER_PROTOCOL

QUIET = {"heartbeat_interval": 0}  # no pings competing with the measured frames


def station_simulators(stations: int, bus: bool, timing: LineTiming) -> list[SimDevice | WagerBusSim]:
    if bus:
        return [WagerBusSim("wager_bus", seats=range(1, stations + 1), timing=timing)]
    sims: list[SimDevice | WagerBusSim] = []
    for n in range(1, stations + 1):
        sim = WagerStationSim(f"wager_station_{n}", n)
        sim.configure_line(timing=timing)
        sims.append(sim)
    return sims


def line_bytes(sims: list[SimDevice | WagerBusSim]) -> int:
    """Bytes the simulated station lines carried so far, both directions."""
    total = 0
    for sim in sims:
        endpoint = sim._endpoint
        if endpoint is not None:
            total += endpoint.inbound.bytes_sent + endpoint.outbound.bytes_sent
    return total


def station_drivers(ports: list[str], stations: int, bus: bool, protocol: int) -> list[WagerStation]:
    """A reference driver per station simulator, or the stations of one wager-bus driver on the shared line."""
    quiet = {**QUIET, "protocol": protocol}
    if bus:
        line_settings = {"driver": "reference-wager-bus", "port": ports[0], "seats": list(range(1, stations + 1))}
        line = create_driver("wager_bus", {**line_settings, **quiet})
        assert isinstance(line, WagerBus)
        return list(line.stations.values())
    drivers: list[WagerStation] = []
    for n, port in enumerate(ports, start=1):
        settings = {"driver": "reference-wager-station", "port": port, "seat": n}
        d = create_driver(f"wager_station_{n}", {**settings, **quiet})
        assert isinstance(d, WagerStation)
        drivers.append(d)
    return drivers


async def confirmed(acks: asyncio.Queue[DeviceEvent], stations: int, *, locked: bool) -> None:
    """Until every station confirmed `locked`; a late repeat of the other state (a station named again by a broadcast
    retried under load, answering twice) is skipped, not counted."""
    seats: set[int] = set()
    while len(seats) < stations:
        ack = await asyncio.wait_for(acks.get(), 5)
        if isinstance(ack, LockAcknowledged) and ack.locked == locked:
            seats.add(ack.seat)


@dataclass
class Figures:
    whole: list[float] = field(default_factory=list)  # ms from the press
    controller: list[float] = field(default_factory=list)  # ms from the press reaching the controller
    station_bytes: list[int] = field(default_factory=list)  # bytes on the station lines, one trial's lock-out
    commit: list[float] = field(default_factory=list)  # ms from the press reaching the controller to the commit done
    both: list[float] = field(default_factory=list)  # ms from the press reaching the controller to locked and durable
    version: int = 1


class Simulators:
    """The panel and station simulators in this process (`--sims-process`: ChildSimulators, in another)."""

    def __init__(self, stations: int, bus: bool, timing: LineTiming) -> None:
        self.panel = DealerPanelSim("dealer_panel")
        self.panel.configure_line(timing=timing)
        self.sims = station_simulators(stations, bus, timing)

    async def start(self) -> tuple[str, list[str]]:
        for sim in (self.panel, *self.sims):
            await sim.start()
        return self.panel.port, [sim.port for sim in self.sims]

    async def press(self) -> None:
        await self.panel.press("no_more_bets")

    async def line_bytes(self) -> int:
        return line_bytes(self.sims)

    async def stop(self) -> None:
        for sim in (self.panel, *self.sims):
            await sim.stop()


class ChildSimulators:
    """The same simulators in a process of their own (this script with --serve-sims), so that the figures are the
    controller's alone: the simulators' work runs on the other core, as real devices' would."""

    def __init__(self, stations: int, bus: bool, timing: LineTiming) -> None:
        self.args = [sys.executable, __file__, "--serve-sims", "--stations", str(stations)]
        self.args += ["--bus"] * bus + ["--unpaced"] * (not timing.paced)
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> tuple[str, list[str]]:
        self.proc = await asyncio.create_subprocess_exec(
            *self.args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        ports = json.loads(await self._answer())
        return str(ports["panel"]), [str(p) for p in ports["stations"]]

    async def _ask(self, what: str) -> str:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(f"{what}\n".encode())
        await self.proc.stdin.drain()
        return await self._answer()

    async def _answer(self) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        async with asyncio.timeout(30):
            line = await self.proc.stdout.readline()
        if not line:
            raise SystemExit("bench: the simulator process ended")
        return line.decode().strip()

    async def press(self) -> None:
        await self._ask("press")

    async def line_bytes(self) -> int:
        return int(await self._ask("bytes"))

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            await self.proc.wait()


async def serve_sims(stations: int, bus: bool, timing: LineTiming) -> None:
    """--serve-sims: the simulators, answering one line per request on stdin (press, bytes) until stdin closes."""
    sims = Simulators(stations, bus, timing)
    panel, ports = await sims.start()
    print(json.dumps({"panel": panel, "stations": ports}), flush=True)
    reader = asyncio.StreamReader()
    await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    pressing: set[asyncio.Task[None]] = set()
    try:
        while line := (await reader.readline()).decode().strip():
            if line == "press":
                # Answered at once: the press goes on (and waits for the host's ACK) while the parent times it.
                task = asyncio.create_task(sims.press())
                pressing.add(task)
                task.add_done_callback(pressing.discard)
                print("pressed", flush=True)
            elif line == "bytes":
                print(await sims.line_bytes(), flush=True)
    finally:
        await asyncio.gather(*pressing, return_exceptions=True)
        await sims.stop()


async def run(
    trials: int,
    stations: int,
    progress: Callable[[int], None],
    bus: bool = False,
    protocol: int = 2,
    timing: LineTiming = UNPACED,
    sims_process: bool = False,
    journal_first: bool = False,
) -> Figures:
    sims = (ChildSimulators if sims_process else Simulators)(stations, bus, timing)
    panel_port, ports = await sims.start()
    panel_settings = {"driver": "reference-dealer-panel", "port": panel_port, "protocol": protocol, **QUIET}
    panel = create_driver("dealer_panel", panel_settings)
    drivers = station_drivers(ports, stations, bus, protocol)
    acks: asyncio.Queue[DeviceEvent] = asyncio.Queue()
    pressed: asyncio.Queue[float] = asyncio.Queue()
    figures = Figures()
    with tempfile.TemporaryDirectory() as tmp:
        journal = Journal(Path(tmp) / "bench.sqlite", "bench", uuid.uuid4().hex)
        writer = JournalWriter(journal)  # the service's writer thread (controller/shell/writer.py)

        def on_panel(ev: DeviceEvent) -> None:
            if isinstance(ev, ButtonPressed):
                pressed.put_nowait(time.perf_counter())

        def on_station(ev: DeviceEvent) -> None:
            if isinstance(ev, LockAcknowledged):
                acks.put_nowait(ev)

        await panel.start(on_panel)
        for d in drivers:
            await d.start(on_station)
        versions = {d.protocol_version for d in (panel, *drivers) if isinstance(d, ReferenceDevice)}
        if len(versions) != 1:
            raise SystemExit(f"bench: the devices negotiated different versions {sorted(versions)}")
        figures.version = versions.pop()
        try:
            for i in range(trials):
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
                if not journal_first:
                    await lock_frames_out()  # as the service does: the frames leave, then the commit starts
                    commit = writer.submit(no_more_bets, datetime.now(UTC), [])
                await confirmed(acks, len(drivers), locked=True)
                end = time.perf_counter()
                if not journal_first:
                    await writer.wait(commit)
                    committed = time.perf_counter()
                await locking
                await press
                figures.whole.append((end - start) * 1000)
                figures.controller.append((end - arrived) * 1000)
                figures.commit.append((committed - arrived) * 1000)
                figures.both.append((max(end, committed) - arrived) * 1000)
                await asyncio.sleep(0.002)  # let the host's ACKs of the confirmations reach the lines' counters
                figures.station_bytes.append(await sims.line_bytes() - before)
                progress(i + 1)
        finally:
            writer.close()
            journal.close()
            for dev in (panel, *drivers):
                await dev.stop()
            await sims.stop()
    return figures


def expected_station_bytes(stations: int, version: int, bus: bool) -> int:
    """Bytes all station lines carry in one lock-out: every station's lock (or the one broadcast) and its answers,
    plus (v1, v2) the host's ACK of each `locked`; a v3 REPLY is never ACKed."""
    _press, path = critical_bytes(stations, version, bus)
    if version == VERSION_3 and bus:
        return len(encode_group(1, GROUP_LOCK, range(1, stations + 1))) + stations * SLOT_CONFIRMATION
    if version == VERSION_3 and not bus:
        return stations * path
    if bus and version in COMPACT_VERSIONS:
        return path + stations * ack_len(version)
    src = {"src": 1} if bus else {}
    lock = frame_len({"cmd": "lock"}, version, from_device=False)
    locked = frame_len({"evt": "locked", **src}, version, from_device=True)
    return stations * (lock + 2 * ack_len(version) + locked)


def report(figures: Figures, args: argparse.Namespace, timing: LineTiming) -> None:
    press_bytes, path_bytes = critical_bytes(args.stations, figures.version, args.bus)
    _v2_press, v2_path_bytes = critical_bytes(args.stations, 2, args.bus)
    wiring = "on one multi-drop line" if args.bus else "each on its own line"
    lines = f"paced {timing.baud}-baud lines" if timing.paced else "unpaced pseudo-terminals"
    order = "journal first, then the locks" if args.journal_first else "locks at once, the journal's commit in parallel"
    print(
        f"lock-out, {args.stations} stations {wiring}, {args.trials} trials over {lines}, protocol v{figures.version}, "
        f"{order}"
    )
    print("the simulators ran " + ("in a process of their own" if args.sims_process else "in this process"))
    line = timing if timing.paced else LineTiming()
    whole_floor = line_time_ms(press_bytes + path_bytes, line)
    path_floor = line_time_ms(path_bytes, line)
    v2_floor = line_time_ms(v2_path_bytes, line)
    print(
        f"line time of the critical-path frames actually sent at {line.baud} baud (baseline): {whole_floor:.3f} ms "
        f"from the press ({press_bytes} + {path_bytes} byte times), {path_floor:.3f} ms once it reached the controller "
        f"(v2's frames: {v2_path_bytes} bytes, {v2_floor:.3f} ms)"
    )
    carried = statistics.median(figures.station_bytes)
    expected = expected_station_bytes(args.stations, figures.version, args.bus)
    print(f"bytes the station lines carried per lock-out: {carried:.0f} (the frames the baseline names: {expected})")
    if carried != expected:
        print("  the lines carried other frames than the baseline names: the ratios below are not to be trusted")
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
        if timing.paced:
            verdict = "meets" if p99 <= target and (args.bus or p99 <= 1.3 * floor) else "misses"
            bound = f"p99 <= {target:g} ms" + ("" if args.bus else " and <= 1.3x line time")
            print(f"  target {bound}: {verdict}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--stations", type=int, default=7)
    ap.add_argument("--bus", action="store_true", help="all stations on one multi-drop line")
    ap.add_argument(
        "--protocol", type=int, choices=(1, 2, 3), default=DRIVER_PROTOCOL, help="highest version the drivers speak"
    )
    ap.add_argument(
        "--journal-first", action="store_true", help="the old order: the commit's fsync before any lock leaves"
    )
    ap.add_argument("--unpaced", action="store_true", help="bare pseudo-terminals: no wire time")
    ap.add_argument(
        "--sims-process", action="store_true", help="the simulators in a process of their own: the controller alone"
    )
    ap.add_argument("--serve-sims", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    configure_logging(json=False, level="warning")  # the figures are the output; logs only if something fails
    timing = UNPACED if args.unpaced else LineTiming()
    if args.serve_sims:
        asyncio.run(serve_sims(args.stations, args.bus, timing))
        return 0

    def progress(done: int) -> None:
        if done % 100 == 0:
            print(f"  {done}/{args.trials} trials", file=sys.stderr, flush=True)

    print(machine())
    figures = asyncio.run(
        run(
            args.trials, args.stations, progress, args.bus, args.protocol, timing, args.sims_process, args.journal_first
        )
    )
    report(figures, args, timing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
