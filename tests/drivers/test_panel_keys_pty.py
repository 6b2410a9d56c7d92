"""The dealer's confirmation keys and keyed counts through the simulated panel, a real pty and the reference
dealer-panel driver; malformed counts become faults and the panel keeps working (docs/protocol.md)."""

from __future__ import annotations

import pytest

from drivers.interfaces import ButtonPressed, CountKeyed, DeviceFault, DeviceOffline, DeviceOnline, FaceUpCard
from drivers.sim.faults import Fault, FaultKind, Trigger
from drivers.sim.table import SimulatedTable
from tests.drivers.conftest import DriverFactory, Recorder


async def started(table: SimulatedTable, start_driver: DriverFactory) -> Recorder:
    _panel, events = await start_driver("dealer_panel", "reference-dealer-panel", table.ports["dealer_panel"])
    await events.next(DeviceOnline)
    return events


async def test_confirmation_buttons_and_counts_arrive_in_order(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    events = await started(table, start_driver)
    for button in ("inspected", "shuffled", "misdeal", "no_misdeal"):
        await table.panel.press(button)
        assert await events.next(ButtonPressed) == ButtonPressed("dealer_panel", button)
    await table.panel.key_count("stub", 47)
    await table.panel.key_count("chips", 0)
    assert await events.next(CountKeyed) == CountKeyed("dealer_panel", "stub", 47)
    assert await events.next(CountKeyed) == CountKeyed("dealer_panel", "chips", 0)


async def test_malformed_counts_become_faults_and_the_panel_goes_on(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    events = await started(table, start_driver)
    for bad, named in (
        ({"evt": "count", "what": "stub", "count": -3}, "'count'"),
        ({"evt": "count", "what": "stub", "count": 4.5}, "'count'"),
        ({"evt": "count", "what": "stub", "count": "47"}, "'count'"),
        ({"evt": "count", "what": "stub", "count": True}, "'count'"),
        ({"evt": "count", "what": "cards", "count": 47}, "what='cards'"),
        ({"evt": "count", "count": 47}, "'what'"),
        ({"evt": "button", "button": "shuffle"}, "button='shuffle'"),
    ):
        await table.panel.send(bad)
        fault = await events.next(DeviceFault)
        assert fault.code == "bad_message" and named in fault.detail, (bad, fault.detail)
    await table.panel.key_count("stub", 45)
    assert await events.next(CountKeyed) == CountKeyed("dealer_panel", "stub", 45)
    assert [e for e in events.seen if isinstance(e, CountKeyed | ButtonPressed)] == [events.seen[-1]]  # none bad


async def test_sim_refuses_unknown_names_and_counts_key_triggers(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    events = await started(table, start_driver)
    with pytest.raises(ValueError, match="counts are chips, stub"):
        await table.panel.key_count("cards", 3)
    with pytest.raises(ValueError, match="inspected"):
        await table.panel.press("inspect")
    # A scripted unplug on the second keyed count: the first arrives, the second is lost with the panel.
    await table.panel.inject(Fault(FaultKind.UNPLUG), Trigger("key", 2))
    await table.panel.key_count("chips", 4)
    assert await events.next(CountKeyed) == CountKeyed("dealer_panel", "chips", 4)
    await table.panel.key_count("chips", 5)
    await events.next(DeviceOffline)
    assert [e.count for e in events.seen if isinstance(e, CountKeyed)] == [4]


async def test_a_card_found_face_up_in_the_deck_is_keyed_on_the_panel(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    """Dealing from the hand no reader sees the deck: the dealer keys the card found face up (.13(a)); a card that is
    not one of a 52-card deck is a bad message naming it, and the panel goes on."""
    events = await started(table, start_driver)
    await table.panel.send({"evt": "face_up", "card": "Qs"})
    assert await events.next(FaceUpCard) == FaceUpCard("dealer_panel", "Qs")
    for bad in ("Zz", 7, None):
        await table.panel.send({"evt": "face_up", "card": bad})
        fault = await events.next(DeviceFault)
        assert fault.code == "bad_message" and "'card'" in fault.detail, (bad, fault.detail)
    await table.panel.send({"evt": "face_up", "card": "2c"})
    assert await events.next(FaceUpCard) == FaceUpCard("dealer_panel", "2c")
