"""A whole simulated table: every device on its own pty, shuffler wired into the shoe; the seats a multi-drop line
covers share one pty instead (`bus`: their stations at their addresses, as on a real table's line)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from drivers.interfaces import WAGER_BUS_ID
from drivers.sim.base import SimDevice
from drivers.sim.dealer_panel import DealerPanelSim
from drivers.sim.line import default_timing
from drivers.sim.progressive_sign import ProgressiveSignSim
from drivers.sim.script import SimScript
from drivers.sim.shoe import ShoeSim
from drivers.sim.shuffler import ShufflerSim
from drivers.sim.state import SimStateFile
from drivers.sim.wager_bus import WagerBusSim
from drivers.sim.wager_station import WagerStationSim
from drivers.sim.wager_terminal import WagerTerminalSim


@dataclasses.dataclass(frozen=True)
class SimBus:
    """The seats on the table's multi-drop line: seat -> address, and the line's baud rate (None: the simulators'
    default, TABLECTL_SIM_BAUD or 115200)."""

    addresses: Mapping[int, int]
    baud: int | None = None


class SimulatedTable:
    def __init__(
        self,
        seats: int,
        rng: random.Random,
        *,
        sign: bool = False,
        terminals: bool = False,
        bus: SimBus | None = None,
        state: Path | None = None,
    ) -> None:
        self.shoe = ShoeSim("shoe")
        if state is not None:
            kept = SimStateFile(state)
            self.shoe.keep_in(kept.shoe_cards(), kept.save_shoe)
        self.shuffler = ShufflerSim("shuffler", rng, self.shoe.load)
        on_bus = dict(bus.addresses) if bus is not None else {}
        strangers = sorted(seat for seat in on_bus if not 1 <= seat <= seats)
        if strangers:
            raise ValueError(f"the wager bus names seats {strangers}, which a {seats}-seat table does not have")
        # The line paces as the others do (TABLECTL_SIM_PACING), at the bus's own baud rate when it has one: the
        # driver times its GROUP lock's slot window from that rate, and a real line runs at it.
        timing = default_timing()
        if bus is not None and bus.baud is not None:
            timing = dataclasses.replace(timing, baud=bus.baud)
        self.bus = WagerBusSim(WAGER_BUS_ID, addresses=on_bus, timing=timing) if on_bus else None
        # The floor's people place chips on `stations[seat]` whichever line the station is on.
        self.stations: dict[int, WagerStationSim] = {
            seat: WagerStationSim(f"wager_station_{seat}", seat) for seat in range(1, seats + 1) if seat not in on_bus
        }
        if self.bus is not None:
            self.stations.update(self.bus.stations)
            self.stations = dict(sorted(self.stations.items()))
        self.panel = DealerPanelSim("dealer_panel")
        # Optional extras, off by default so a table without them is exactly as before.
        self.sign = ProgressiveSignSim("progressive_sign") if sign else None
        self.terminals = {
            seat: WagerTerminalSim(f"wager_terminal_{seat}", seat) for seat in range(1, seats + 1) if terminals
        }
        self.ports: dict[str, str] = {}

    @property
    def devices(self) -> list[SimDevice]:
        """The simulators on lines of their own (the bus's stations share its line: `bus`)."""
        extras: list[SimDevice] = [self.sign] if self.sign is not None else []
        own = [station for seat, station in self.stations.items() if self.bus is None or seat not in self.bus.stations]
        return [self.shuffler, self.shoe, *own, self.panel, *extras, *self.terminals.values()]

    def line_seconds(self) -> dict[str, tuple[float, float]]:
        """Each line's wire time so far, (to its device(s), from them), by the device (or bus) id on it."""
        lines = {device.device_id: device.line_seconds for device in self.devices}
        if self.bus is not None:
            lines[WAGER_BUS_ID] = self.bus.line_seconds
        return lines

    def device(self, device_id: str) -> SimDevice:
        """The simulator with this device id (a bus station's is wager_station_<seat> too, as the controller names
        it); KeyError naming the known ones if none."""
        known: list[SimDevice] = [*self.devices, *(self.bus.stations.values() if self.bus is not None else ())]
        for device in known:
            if device.device_id == device_id:
                return device
        raise KeyError(f"no simulated device {device_id!r}; the table has {', '.join(d.device_id for d in known)}")

    async def apply_script(self, script: SimScript) -> None:
        """Queue the script's decks, inject its faults and arm its clears ("now" ones at once); call once started."""
        # Resolve every device first so a script naming a seat this table lacks changes nothing.
        targets = [(self.device(f.device), f) for f in script.faults]
        clears = [(self.device(c.device), c) for c in script.clears]
        if script.decks:
            self.shuffler.script_decks(script.decks)
        for device, scripted in targets:
            await device.inject(scripted.fault, scripted.when)
        for device, clear in clears:
            await device.clear_at(clear.code, clear.when, clear.detail)

    async def start(self) -> None:
        for device in self.devices:
            await device.start()
            self.ports[device.device_id] = device.port
        if self.bus is not None:
            await self.bus.start()
            self.ports[WAGER_BUS_ID] = self.bus.port

    async def stop(self) -> None:
        """Stop every device, even after one fails to (each stop closes its pty and gives back its dir); the first
        failure is raised once all are stopped."""
        failed: BaseException | None = None
        lines: list[SimDevice | WagerBusSim] = [*self.devices, *([self.bus] if self.bus is not None else [])]
        for device in lines:
            try:
                await device.stop()
            except BaseException as err:  # a cancel too: the others' ptys and dirs must still go
                failed = failed or err
        if failed is not None:
            raise failed

    async def __aenter__(self) -> SimulatedTable:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
