"""The dealer panel's player binding and wrong-card-count key through the simulated panel, a real pty and the reference
dealer-panel driver (docs/protocol.md, "Dealer panel"): `bind` carries the boxes, never who the player is; a bad list
of seats is a `bad_message` fault naming the field and the panel keeps working."""

from __future__ import annotations

from drivers.interfaces import BoxesBound, ButtonPressed, DeviceFault, DeviceOnline
from drivers.sim.table import SimulatedTable
from tests.drivers.conftest import DriverFactory, Recorder


async def started(table: SimulatedTable, start_driver: DriverFactory) -> Recorder:
    _panel, events = await start_driver("dealer_panel", "reference-dealer-panel", table.ports["dealer_panel"])
    await events.next(DeviceOnline)
    return events


async def test_boxes_bound_and_wrong_card_count_arrive(table: SimulatedTable, start_driver: DriverFactory) -> None:
    events = await started(table, start_driver)
    await table.panel.bind([3, 4])
    assert await events.next(BoxesBound) == BoxesBound("dealer_panel", (3, 4))
    await table.panel.bind([5])
    assert await events.next(BoxesBound) == BoxesBound("dealer_panel", (5,))
    await table.panel.press("wrong_card_count")
    assert await events.next(ButtonPressed) == ButtonPressed("dealer_panel", "wrong_card_count")


async def test_a_bad_list_of_boxes_is_a_fault_and_the_panel_goes_on(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    events = await started(table, start_driver)
    for bad in (
        {"evt": "bind", "seats": []},
        {"evt": "bind", "seats": [3, 3]},
        {"evt": "bind", "seats": [0, 1]},
        {"evt": "bind", "seats": [8]},
        {"evt": "bind", "seats": ["3"]},
        {"evt": "bind", "seats": [True]},
        {"evt": "bind", "seats": 3},
        {"evt": "bind"},
    ):
        await table.panel.send(bad)
        fault = await events.next(DeviceFault)
        assert fault.code == "bad_message" and "'seats'" in fault.detail, (bad, fault.detail)
    await table.panel.bind([1, 2])
    assert await events.next(BoxesBound) == BoxesBound("dealer_panel", (1, 2))
    assert [e for e in events.seen if isinstance(e, BoxesBound)] == [events.seen[-1]]  # none of the bad ones
