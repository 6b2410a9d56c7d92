"""Shared fixtures for the device-layer tests (fixtures live here: tests are imported with importlib)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import pytest

from drivers.interfaces import DeviceEvent
from drivers.registry import create_driver
from drivers.sim.table import SimulatedTable

E = TypeVar("E", bound=DeviceEvent)

TIMEOUT = 5.0  # failure bound only; events normally arrive in milliseconds


class Recorder:
    """An EventSink that tests can await: `await rec.next(ShuffleCompleted)`."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[DeviceEvent] = asyncio.Queue()
        self.seen: list[DeviceEvent] = []

    def __call__(self, event: DeviceEvent) -> None:
        self.queue.put_nowait(event)

    async def next(self, kind: type[E]) -> E:
        """The next event of `kind`, skipping (but keeping in .seen) any others."""

        async def find() -> E:
            while True:
                event = await self.queue.get()
                self.seen.append(event)
                if isinstance(event, kind):
                    return event

        return await asyncio.wait_for(find(), TIMEOUT)


@pytest.fixture
def rng() -> random.Random:
    return random.Random(20261121)


@pytest.fixture
async def table(rng: random.Random) -> AsyncIterator[SimulatedTable]:
    async with SimulatedTable(seats=2, rng=rng) as simulated:
        yield simulated


DriverFactory = Callable[..., Awaitable[tuple[Any, Recorder]]]


@pytest.fixture
async def start_driver() -> AsyncIterator[DriverFactory]:
    """start_driver(device_id, driver_name, port, **settings) -> (started driver, its Recorder)."""
    started: list[Any] = []

    async def start(device_id: str, driver: str, port: str, **settings: Any) -> tuple[Any, Recorder]:
        device = create_driver(device_id, {"driver": driver, "port": port, **settings})
        recorder = Recorder()
        started.append(device)
        await device.start(recorder)
        return device, recorder

    yield start
    for device in started:
        await device.stop()
