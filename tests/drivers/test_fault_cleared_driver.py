"""A device's `fault_cleared` (docs/protocol.md section 5) reaches the controller as DeviceFaultCleared, in v1 and
in the compact versions, from the simulated shoe and shuffler over real ptys; a malformed one is a
`bad_message` fault."""

from __future__ import annotations

import pytest

from drivers.interfaces import DeviceFault, DeviceFaultCleared, DeviceOnline
from drivers.sim.table import SimulatedTable
from tests.drivers.conftest import DriverFactory


@pytest.mark.parametrize("protocols", [(1,), (1, 2), (1, 2, 3, 4)])
async def test_the_shoe_says_its_jam_is_cleared(
    table: SimulatedTable, start_driver: DriverFactory, protocols: tuple[int, ...]
) -> None:
    await table.shoe.stop()
    table.shoe.configure_line(protocols)
    await table.shoe.start()
    shoe, events = await start_driver("shoe", "reference-shoe", table.shoe.port)
    await events.next(DeviceOnline)
    assert shoe.protocol_version == max(protocols)
    await table.shoe.fault_cleared("jam", "taken out by hand")
    assert await events.next(DeviceFaultCleared) == DeviceFaultCleared("shoe", "jam", "taken out by hand")
    # It came in the version the link speaks (v4 is v3's frames).
    assert shoe._link.data_versions[min(max(protocols), 3)] >= 1


async def test_the_shuffler_says_its_fault_is_cleared(table: SimulatedTable, start_driver: DriverFactory) -> None:
    _, events = await start_driver("shuffler", "reference-shuffler", table.ports["shuffler"])
    await events.next(DeviceOnline)
    await table.shuffler.fault_cleared("stopped")
    assert await events.next(DeviceFaultCleared) == DeviceFaultCleared("shuffler", "stopped", "")


async def test_a_clear_that_names_no_fault_is_a_bad_message(table: SimulatedTable, start_driver: DriverFactory) -> None:
    _, events = await start_driver("shoe", "reference-shoe", table.shoe.port)
    await events.next(DeviceOnline)
    await table.shoe.send({"evt": "fault_cleared"})
    fault = await events.next(DeviceFault)
    assert fault.code == "bad_message" and "'code' must be a non-empty string" in fault.detail
