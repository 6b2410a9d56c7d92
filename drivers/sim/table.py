"""A whole simulated table: every device on its own pty, shuffler wired into the shoe."""

from __future__ import annotations

import random
from types import TracebackType

from drivers.sim.base import SimDevice
from drivers.sim.dealer_panel import DealerPanelSim
from drivers.sim.shoe import ShoeSim
from drivers.sim.shuffler import ShufflerSim
from drivers.sim.wager_station import WagerStationSim


class SimulatedTable:
    def __init__(self, seats: int, rng: random.Random) -> None:
        self.shoe = ShoeSim("shoe")
        self.shuffler = ShufflerSim("shuffler", rng, self.shoe.load)
        self.stations = {seat: WagerStationSim(f"wager_station_{seat}", seat) for seat in range(1, seats + 1)}
        self.panel = DealerPanelSim("dealer_panel")
        self.ports: dict[str, str] = {}

    @property
    def devices(self) -> list[SimDevice]:
        return [self.shuffler, self.shoe, *self.stations.values(), self.panel]

    async def start(self) -> None:
        for device in self.devices:
            await device.start()
            self.ports[device.device_id] = device.port

    async def stop(self) -> None:
        for device in self.devices:
            await device.stop()

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
