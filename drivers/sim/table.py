"""A whole simulated table: every device on its own pty, shuffler wired into the shoe."""

from __future__ import annotations

import random
from types import TracebackType

from drivers.sim.base import SimDevice
from drivers.sim.dealer_panel import DealerPanelSim
from drivers.sim.progressive_sign import ProgressiveSignSim
from drivers.sim.script import SimScript
from drivers.sim.shoe import ShoeSim
from drivers.sim.shuffler import ShufflerSim
from drivers.sim.wager_station import WagerStationSim
from drivers.sim.wager_terminal import WagerTerminalSim


class SimulatedTable:
    def __init__(self, seats: int, rng: random.Random, *, sign: bool = False, terminals: bool = False) -> None:
        self.shoe = ShoeSim("shoe")
        self.shuffler = ShufflerSim("shuffler", rng, self.shoe.load)
        self.stations = {seat: WagerStationSim(f"wager_station_{seat}", seat) for seat in range(1, seats + 1)}
        self.panel = DealerPanelSim("dealer_panel")
        # Optional extras, off by default so a table without them is exactly as before.
        self.sign = ProgressiveSignSim("progressive_sign") if sign else None
        self.terminals = {
            seat: WagerTerminalSim(f"wager_terminal_{seat}", seat) for seat in range(1, seats + 1) if terminals
        }
        self.ports: dict[str, str] = {}

    @property
    def devices(self) -> list[SimDevice]:
        extras: list[SimDevice] = [self.sign] if self.sign is not None else []
        return [self.shuffler, self.shoe, *self.stations.values(), self.panel, *extras, *self.terminals.values()]

    def device(self, device_id: str) -> SimDevice:
        """The simulator with this device id (as in `ports`); KeyError naming the known ones if none."""
        for device in self.devices:
            if device.device_id == device_id:
                return device
        raise KeyError(
            f"no simulated device {device_id!r}; the table has {', '.join(d.device_id for d in self.devices)}"
        )

    async def apply_script(self, script: SimScript) -> None:
        """Queue the script's decks and inject its faults (\"now\" faults at once); call once started."""
        # Resolve every device first so a script naming a seat this table lacks changes nothing.
        targets = [(self.device(f.device), f) for f in script.faults]
        if script.decks:
            self.shuffler.script_decks(script.decks)
        for device, scripted in targets:
            await device.inject(scripted.fault, scripted.when)

    async def start(self) -> None:
        for device in self.devices:
            await device.start()
            self.ports[device.device_id] = device.port

    async def stop(self) -> None:
        """Stop every device, even after one fails to (each stop closes its pty and gives back its dir); the first
        failure is raised once all are stopped."""
        failed: BaseException | None = None
        for device in self.devices:
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
