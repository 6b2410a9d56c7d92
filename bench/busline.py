"""What the wager-bus benches share: seven stations on one simulated multi-drop line, the reference driver started on
it and every station online."""

from __future__ import annotations

import asyncio

from drivers.interfaces import DeviceEvent, DeviceOnline
from drivers.reference.wager_bus import ReferenceWagerBus
from drivers.registry import create_driver
from drivers.sim.wager_bus import WagerBusSim

ADDRESSES = {seat: 10 + seat for seat in range(1, 8)}  # not the seats: a mix-up between the two shows


class Online:
    """The sink every seat reports to: set once each of the seven stations came online."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.all = asyncio.Event()

    def __call__(self, event: DeviceEvent) -> None:
        if isinstance(event, DeviceOnline):
            self.seen.add(event.device_id)
            if len(self.seen) == len(ADDRESSES):
                self.all.set()


async def seven_online(sim: WagerBusSim) -> ReferenceWagerBus:
    """The reference driver on `sim`'s line (no heartbeats: they would cross the trials), every station online."""
    driver = create_driver(
        "wager_bus",
        {
            "driver": "reference-wager-bus",
            "port": sim.port,
            "stations": [{"seat": seat, "address": a} for seat, a in ADDRESSES.items()],
            "heartbeat_interval": 0,
        },
    )
    if not isinstance(driver, ReferenceWagerBus):
        raise TypeError(f"reference-wager-bus made a {type(driver).__name__}")
    online = Online()
    await asyncio.gather(*(s.start(online) for s in driver.stations.values()))
    async with asyncio.timeout(10):
        await online.all.wait()
    return driver
