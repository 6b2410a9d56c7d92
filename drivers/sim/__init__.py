"""Simulated devices speaking the reference serial protocol over real pseudo-terminals."""

from drivers.sim.dealer_panel import DealerPanelSim
from drivers.sim.shoe import ShoeSim
from drivers.sim.shuffler import ShufflerSim
from drivers.sim.table import SimulatedTable
from drivers.sim.wager_station import WagerStationSim

__all__ = ["DealerPanelSim", "ShoeSim", "ShufflerSim", "SimulatedTable", "WagerStationSim"]
