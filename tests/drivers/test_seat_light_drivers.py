"""The seat light through the reference protocol over real ptys: the reference station driver and the multi-drop bus
stations against their simulators (docs/protocol.md, "Seat light"; 655a.11(i)(1)(ii), 643a.11(f)(3)(iii)(B))."""

from __future__ import annotations

import asyncio
from typing import Any

from drivers.interfaces import DeviceFault, DeviceOffline, DeviceOnline, SeatLight, SeatLights, WagerStation
from drivers.reference.framing import HOST_ADDRESS
from drivers.reference.wager_bus import ReferenceWagerBus
from drivers.registry import create_driver
from drivers.sim.table import SimulatedTable
from drivers.sim.wager_bus import WagerBusSim
from drivers.sim.wager_station import WagerStationSim
from tests.drivers.conftest import DriverFactory

TIMEOUT = 5.0  # failure bound only


async def test_reference_station_lights_and_darkens_its_seat(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    sim: WagerStationSim = table.stations[2]
    station, events = await start_driver("wager_station_2", "reference-wager-station", sim.port, seat=2)
    assert isinstance(station, WagerStation) and isinstance(station, SeatLights)
    await events.next(DeviceOnline)
    assert sim.light is False
    await station.light_on()
    confirmed = await events.next(SeatLight)
    assert (confirmed.device_id, confirmed.seat, confirmed.on) == ("wager_station_2", 2, True)
    assert sim.light is True
    await station.light_on()  # idempotent: confirmed again, the lamp did not flicker
    assert (await events.next(SeatLight)).on is True
    await station.light_off()
    assert (await events.next(SeatLight)).on is False
    assert sim.light_history == [False, True, False]
    # Seat 1's station heard nothing of it.
    assert table.stations[1].light_history == [False]


async def test_replugged_station_comes_back_dark(table: SimulatedTable, start_driver: DriverFactory) -> None:
    sim: WagerStationSim = table.stations[1]
    station, events = await start_driver("wager_station_1", "reference-wager-station", sim.port, seat=1)
    await events.next(DeviceOnline)
    await station.light_on()
    await events.next(SeatLight)
    await sim.unplug()  # the station's cable powers it: its lamp goes out
    await events.next(DeviceOffline)
    assert sim.light is False
    await sim.replug()
    await events.next(DeviceOnline)  # the driver found it again; the controller must light it again
    assert sim.light is False
    await station.light_on()
    async with asyncio.timeout(TIMEOUT):
        await sim.wait_light(True)
    assert sim.light_history == [False, True, False, True]


async def test_bad_light_report_is_a_bad_message(table: SimulatedTable, start_driver: DriverFactory) -> None:
    sim: WagerStationSim = table.stations[1]
    _station, events = await start_driver("wager_station_1", "reference-wager-station", sim.port, seat=1)
    await events.next(DeviceOnline)
    await sim.send({"evt": "light", "on": "yes"})
    fault = await events.next(DeviceFault)
    assert fault.code == "bad_message" and "'on' must be true or false" in fault.detail


async def test_sim_refuses_a_light_command_without_on(table: SimulatedTable) -> None:
    # Speak to the simulator as a host whose firmware sends a malformed command: bad_command, nothing changes.
    from drivers.reference.link import Link
    from drivers.serial_port import open_serial

    sim: WagerStationSim = table.stations[1]
    reader, writer = await open_serial(sim.port, 115200)
    heard: asyncio.Queue[bytes] = asyncio.Queue()
    link = Link(
        reader, writer, local_address=HOST_ADDRESS, peer_address=sim.address, on_data=heard.put_nowait, name="test-host"
    )
    link.start()
    try:
        await link.send({"cmd": "light", "on": 1})
        reply = await asyncio.wait_for(heard.get(), TIMEOUT)
        assert b'"bad_command"' in reply and b"'on' must be true or false" in reply
        assert sim.light_history == [False]
    finally:
        await link.close()


async def test_bus_stations_light_their_own_seat_only() -> None:
    addresses = {seat: 20 + seat for seat in (1, 2, 3)}  # addresses differ from seats so a mix-up shows
    sim = WagerBusSim("wager_bus", addresses=addresses)
    await sim.start()
    driver = create_driver(
        "wager_bus",
        {
            "driver": "reference-wager-bus",
            "port": sim.port,
            "stations": [{"seat": s, "address": a} for s, a in addresses.items()],
        },
    )
    assert isinstance(driver, ReferenceWagerBus)
    seen: dict[int, asyncio.Queue[Any]] = {seat: asyncio.Queue() for seat in addresses}
    stations = driver.stations
    try:
        await asyncio.gather(*(s.start(seen[seat].put_nowait) for seat, s in stations.items()))

        async def next_of(seat: int, kind: type[Any]) -> Any:
            async with asyncio.timeout(TIMEOUT):
                while not isinstance(event := await seen[seat].get(), kind):
                    pass
            return event

        await asyncio.gather(*(next_of(seat, DeviceOnline) for seat in addresses))
        station_2 = stations[2]
        assert isinstance(station_2, SeatLights)
        await station_2.light_on()
        confirmed = await next_of(2, SeatLight)
        assert (confirmed.device_id, confirmed.seat, confirmed.on) == ("wager_station_2", 2, True)
        assert [sim.stations[s].light for s in (1, 2, 3)] == [False, True, False]

        # Pulling the line's cable leaves the stations powered: seat 2 stays lit through it.
        await sim.unplug()
        await next_of(2, DeviceOffline)
        await sim.replug()
        await next_of(2, DeviceOnline)
        assert sim.stations[2].light is True

        # The station's own replug is a power cycle: it comes back dark, and lit again once told.
        await sim.stations[2].replug()
        assert sim.stations[2].light is False
        await station_2.light_on()
        assert (await next_of(2, SeatLight)).on is True
        await station_2.light_off()
        assert (await next_of(2, SeatLight)).on is False
        assert sim.stations[2].light_history == [False, True, False, True, False]
        assert sim.stations[1].light_history == sim.stations[3].light_history == [False]
    finally:
        await asyncio.gather(*(s.stop() for s in stations.values()))
        await sim.stop()
