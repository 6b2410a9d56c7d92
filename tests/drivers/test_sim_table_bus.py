"""SimulatedTable with a multi-drop line: the seats on it share one real pty, the others keep lines of their own.

Real pseudo-terminals throughout; what the controller's drivers make of the line is tests/e2e/test_demo_bus.py's.
"""

from __future__ import annotations

import os
import random
import stat

import pytest

from drivers.interfaces import WAGER_BUS_ID
from drivers.sim.line import DEFAULT_BAUD
from drivers.sim.table import SimBus, SimulatedTable
from drivers.sim.wager_bus import BusStationSim


async def test_the_bus_seats_share_one_pty_and_the_others_keep_their_own() -> None:
    bus = SimBus({1: 11, 2: 12, 3: 13}, baud=19200)
    async with SimulatedTable(5, random.Random(1), bus=bus) as sims:
        ports = sims.ports
        assert WAGER_BUS_ID in ports and {"wager_station_4", "wager_station_5"} <= set(ports)
        assert not {"wager_station_1", "wager_station_2", "wager_station_3"} & set(ports)
        # The stable name resolves to a real pty: a character device, as a USB RS-485 adapter's is.
        assert stat.S_ISCHR(os.stat(ports[WAGER_BUS_ID]).st_mode)
        assert sims.bus is not None
        assert {seat: s.address for seat, s in sims.bus.stations.items()} == {1: 11, 2: 12, 3: 13}
        assert sims.bus.timing.baud == 19200  # the configured rate, not the simulators' default
        # The floor's people reach every seat the same way, whichever line its station is on.
        assert sorted(sims.stations) == [1, 2, 3, 4, 5]
        assert isinstance(sims.stations[2], BusStationSim) and not isinstance(sims.stations[4], BusStationSim)
        assert sims.device("wager_station_2") is sims.stations[2]  # a script's faults reach bus stations too
        with pytest.raises(KeyError, match="no simulated device 'wager_station_9'"):
            sims.device("wager_station_9")
    assert sims.bus is not None and not sims.bus.plugged
    assert not os.access(ports[WAGER_BUS_ID], os.F_OK), "stopping the table removes the line's name"


async def test_without_a_baud_the_bus_paces_at_the_simulators_default() -> None:
    sims = SimulatedTable(2, random.Random(1), bus=SimBus({1: 1, 2: 2}))
    assert sims.bus is not None and sims.bus.timing.baud == int(os.environ.get("TABLECTL_SIM_BAUD", DEFAULT_BAUD))
    assert sims.devices == [sims.shuffler, sims.shoe, sims.panel]  # both stations are the line's


def test_a_bus_seat_the_table_lacks_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"the wager bus names seats \[8\], which a 7-seat table does not have"):
        SimulatedTable(7, random.Random(1), bus=SimBus({7: 7, 8: 8}))
