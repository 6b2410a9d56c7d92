"""The simulated dealer panel and wager stations bench/lockout.py locks: in its own process, or (--sims-process) in a
child process, this same script run with --serve-sims, answering one request a line, so the figures are the
controller's alone."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from drivers.interfaces import WAGER_BUS_ID
from drivers.sim.base import SimDevice
from drivers.sim.dealer_panel import DealerPanelSim
from drivers.sim.line import LineTiming
from drivers.sim.wager_bus import WagerBusSim
from drivers.sim.wager_station import WagerStationSim


def station_simulators(stations: int, bus: bool, timing: LineTiming) -> list[SimDevice | WagerBusSim]:
    if bus:
        return [WagerBusSim(WAGER_BUS_ID, seats=range(1, stations + 1), timing=timing)]
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


class Simulators:
    """The panel and station simulators in this process (`--sims-process`: ChildSimulators, in another)."""

    def __init__(self, stations: int, bus: bool, timing: LineTiming) -> None:
        self.panel = DealerPanelSim("dealer_panel")
        self.panel.configure_line(timing=timing)
        self.sims = station_simulators(stations, bus, timing)
        # When a station's line last handed the host bytes (time.perf_counter: CLOCK_MONOTONIC, the same clock in
        # the parent process): where a slow lock-out's time went, the simulators' side or the controller's.
        self.answered_at = 0.0

    async def start(self) -> tuple[str, list[str]]:
        for sim in (self.panel, *self.sims):
            await sim.start()
        for sim in self.sims:
            if sim._endpoint is not None:
                sim._endpoint.tap = self._tap
        return self.panel.port, [sim.port for sim in self.sims]

    def _tap(self, from_host: bool, _data: bytes) -> None:
        if not from_host:
            self.answered_at = time.perf_counter()

    async def press(self) -> None:
        await self.panel.press("no_more_bets")

    async def answered(self) -> float:
        return self.answered_at

    async def line_bytes(self) -> int:
        return line_bytes(self.sims)

    async def stop(self) -> None:
        for sim in (self.panel, *self.sims):
            await sim.stop()


class ChildSimulators:
    """The same simulators in a process of their own (this script with --serve-sims), so that the figures are the
    controller's alone: the simulators' work runs on the other core, as real devices' would."""

    def __init__(self, stations: int, bus: bool, timing: LineTiming) -> None:
        self.args = [
            sys.executable,
            str(Path(__file__).with_name("lockout.py")),
            "--serve-sims",
            "--stations",
            str(stations),
        ]
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

    @property
    def pid(self) -> int:
        """The simulators' process (--pin gives it a core of its own)."""
        if self.proc is None:
            raise RuntimeError("the simulators' process is not started")
        return self.proc.pid

    async def press(self) -> None:
        await self._ask("press")

    async def line_bytes(self) -> int:
        return int(await self._ask("bytes"))

    async def answered(self) -> float:
        return float(await self._ask("answered"))

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
            elif line == "answered":
                print(repr(await sims.answered()), flush=True)
    finally:
        await asyncio.gather(*pressing, return_exceptions=True)
        await sims.stop()
