"""Each reference driver against its simulator, through real pseudo-terminals."""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

from drivers.interfaces import (
    ButtonPressed,
    DealerPanel,
    DealingShoe,
    DeviceFault,
    DeviceOffline,
    DeviceOnline,
    LockAcknowledged,
    ShuffleCompleted,
    Shuffler,
    StackDispensed,
    StubRemoved,
    WagerDetected,
    WagerRefused,
    WagerStation,
)
from drivers.sim.shuffler import FRESH_DECK, ShufflerSim
from drivers.sim.table import SimulatedTable
from tests.drivers.conftest import DriverFactory

# A false SOF announcing a 1023-byte payload, then noise: the worst kind of garbage for a framer.
GARBAGE = bytes([0xA5, 0x01, 0x00, 0x07, 0x01, 0x03, 0xFF]) + bytes(random.Random(7).randbytes(200))


async def test_shuffler_identifies_and_loads_the_shoe(table: SimulatedTable, start_driver: DriverFactory) -> None:
    shuffler, events = await start_driver("shuffler", "reference-shuffler", table.ports["shuffler"])
    assert isinstance(shuffler, Shuffler)
    online = await events.next(DeviceOnline)
    assert online.identity["model"] == "SIM-SHUFFLER"
    assert set(online.identity) == {"model", "serial", "firmware", "firmware_hash"}

    await shuffler.shuffle()
    assert (await events.next(ShuffleCompleted)).card_count == 52
    assert sorted(table.shoe.cards) == sorted(FRESH_DECK)
    assert table.shoe.cards != list(FRESH_DECK)


async def test_scripted_deck_is_used_verbatim(table: SimulatedTable, start_driver: DriverFactory) -> None:
    deck = list(reversed(FRESH_DECK))[:51]  # a miscount the controller must notice
    table.shuffler.script_decks([deck])
    shuffler, events = await start_driver("shuffler", "reference-shuffler", table.ports["shuffler"])
    await events.next(DeviceOnline)
    await shuffler.shuffle()
    assert (await events.next(ShuffleCompleted)).card_count == 51
    assert table.shoe.cards == deck


async def test_shoe_dispenses_stacks_and_stub(table: SimulatedTable, start_driver: DriverFactory) -> None:
    shoe, events = await start_driver("shoe", "reference-shoe", table.ports["shoe"])
    assert isinstance(shoe, DealingShoe)
    await events.next(DeviceOnline)
    table.shoe.load(["As", "Kd", "2c", "Th", "9s"])

    await shoe.dispense_stack(2)
    assert (await events.next(StackDispensed)).cards == ("As", "Kd")
    await shoe.remove_stub()
    assert (await events.next(StubRemoved)).cards == ("2c", "Th", "9s")
    assert table.shoe.cards == []

    await shoe.dispense_stack(2)
    fault = await events.next(DeviceFault)
    assert fault.code == "empty"


async def test_wager_station_lock_and_wagers(table: SimulatedTable, start_driver: DriverFactory) -> None:
    sim = table.stations[2]
    sim.keep_open(["street_3", "street_4", "street_5"])  # a 655a table's: the streets are wagered after the deal
    station, events = await start_driver("wager_station_2", "reference-wager-station", sim.port, seat=2)
    assert isinstance(station, WagerStation) and station.seat == 2
    await events.next(DeviceOnline)

    await sim.place("ante", 500)
    assert await events.next(WagerDetected) == WagerDetected("wager_station_2", 2, "ante", 500)

    await station.lock()
    assert await events.next(LockAcknowledged) == LockAcknowledged("wager_station_2", 2, True)
    assert sim.locked

    await sim.place("three_card_bonus", 100)
    assert await events.next(WagerRefused) == WagerRefused("wager_station_2", 2, "three_card_bonus", 100, "locked")
    await sim.place("street_3", 1000)  # street wagers stay live after "no more bets"
    assert await events.next(WagerDetected) == WagerDetected("wager_station_2", 2, "street_3", 1000)

    await station.unlock()
    assert await events.next(LockAcknowledged) == LockAcknowledged("wager_station_2", 2, False)
    assert not sim.locked


async def test_dealer_panel_buttons(table: SimulatedTable, start_driver: DriverFactory) -> None:
    panel, events = await start_driver("dealer_panel", "reference-dealer-panel", table.ports["dealer_panel"])
    assert isinstance(panel, DealerPanel)
    await events.next(DeviceOnline)
    await table.panel.press("no_more_bets")
    assert await events.next(ButtonPressed) == ButtonPressed("dealer_panel", "no_more_bets")
    await table.panel.press("fold")
    assert (await events.next(ButtonPressed)).button == "fold"


async def test_garbage_between_frames_in_both_directions(table: SimulatedTable, start_driver: DriverFactory) -> None:
    shoe, events = await start_driver("shoe", "reference-shoe", table.ports["shoe"])
    await events.next(DeviceOnline)
    table.shoe.load(["As", "Kd", "2c", "Th"])

    table.shoe.inject_garbage(GARBAGE)  # device -> driver
    await shoe.dispense_stack(1)
    assert (await events.next(StackDispensed)).cards == ("As",)

    fd = os.open(table.ports["shoe"], os.O_WRONLY | os.O_NOCTTY)  # driver -> device
    try:
        os.write(fd, GARBAGE)
    finally:
        os.close(fd)
    await shoe.dispense_stack(2)
    assert (await events.next(StackDispensed)).cards == ("Kd", "2c")
    assert any(isinstance(e, DeviceFault) and e.code == "line_noise" for e in events.seen)


async def test_invalid_device_messages_become_faults(table: SimulatedTable, start_driver: DriverFactory) -> None:
    sim = table.stations[1]
    _station, events = await start_driver("wager_station_1", "reference-wager-station", sim.port, seat=1)
    await events.next(DeviceOnline)
    for bad, expect in (
        ({"evt": "teleport"}, "teleport"),
        ({"evt": "wager", "spot": "Roof!", "amount": 5}, "Roof!"),  # any spot name is carried, not garbage
        ({"evt": "wager", "spot": "ante", "amount": -5}, "amount"),
        ({"nothing": True}, "evt=None"),
    ):
        await sim.send(bad)
        fault = await events.next(DeviceFault)
        assert fault.code == "bad_message" and expect in fault.detail
    await sim.place("ante", 100)  # still working afterwards
    assert (await events.next(WagerDetected)).amount_cents == 100


async def test_unplug_reports_offline(table: SimulatedTable, start_driver: DriverFactory) -> None:
    _panel, events = await start_driver("dealer_panel", "reference-dealer-panel", table.ports["dealer_panel"])
    await events.next(DeviceOnline)
    await table.panel.stop()
    offline = await events.next(DeviceOffline)
    assert offline.device_id == "dealer_panel" and offline.reason


async def test_reconnects_when_stable_name_reappears(
    tmp_path: Path, rng: random.Random, start_driver: DriverFactory
) -> None:
    stable = tmp_path / "ttyShuffler"  # what a udev symlink gives in production
    first = ShufflerSim("shuffler", rng, lambda deck: None)
    await first.start()
    stable.symlink_to(first.port)
    shuffler, events = await start_driver("shuffler", "reference-shuffler", str(stable))
    await events.next(DeviceOnline)

    await first.stop()
    await events.next(DeviceOffline)
    second = ShufflerSim("shuffler", rng, lambda deck: None)
    await second.start()
    try:
        stable.unlink()
        stable.symlink_to(second.port)
        await events.next(DeviceOnline)
        await shuffler.shuffle()
        assert (await events.next(ShuffleCompleted)).card_count == 52
    finally:
        await second.stop()


async def test_absent_port_is_offline_and_commands_fault(tmp_path: Path, start_driver: DriverFactory) -> None:
    loop = asyncio.get_running_loop()
    begun = loop.time()
    shoe, events = await start_driver("shoe", "reference-shoe", str(tmp_path / "nothing"))
    assert loop.time() - begun < 3  # start() must not hang on a missing device
    assert "cannot open" in (await events.next(DeviceOffline)).reason
    await shoe.dispense_stack(3)
    assert (await events.next(DeviceFault)).code == "offline"


async def test_simulator_answers_bad_commands_with_faults(table: SimulatedTable, start_driver: DriverFactory) -> None:
    shoe, events = await start_driver("shoe", "reference-shoe", table.ports["shoe"])
    await events.next(DeviceOnline)
    assert await shoe.command({"cmd": "teleport"})
    assert "teleport" in (await events.next(DeviceFault)).detail
    assert await shoe.command({"cmd": "dispense", "cards": "two"})
    assert (await events.next(DeviceFault)).code == "bad_command"
    await shoe.ping()
    table.shoe.load(["5h"])
    await shoe.dispense_stack(1)
    assert (await events.next(StackDispensed)).cards == ("5h",)


async def test_silent_device_times_out_and_heartbeat_takes_it_offline(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    shuffler, events = await start_driver(
        "shuffler", "reference-shuffler", table.ports["shuffler"], heartbeat_interval=0.2
    )
    await events.next(DeviceOnline)
    await table.shuffler.hang()
    await shuffler.shuffle()
    assert (await events.next(DeviceFault)).code == "timeout"
    assert "heartbeat" in (await events.next(DeviceOffline)).reason
