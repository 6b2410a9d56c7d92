"""Shared fixtures for the device-layer tests (fixtures live here: tests are imported with importlib)."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
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


InstallDistribution = Callable[[str, Mapping[str, str], Mapping[str, str]], Path]


@pytest.fixture
def install_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> InstallDistribution:
    """install_distribution(name, entry_points, modules): another package, installed as pip leaves one (its
    modules and a .dist-info with METADATA and entry_points.txt) in a folder put on sys.path for this test alone.

    entry_points: driver name -> "module:Class" in the `table_controller.drivers` group; modules: file name ->
    source. Returns the folder, for the PYTHONPATH of a fresh interpreter."""

    def install(name: str, entry_points: Mapping[str, str], modules: Mapping[str, str]) -> Path:
        root = tmp_path / f"site-{name}"
        info = root / f"{name.replace('-', '_')}-1.0.dist-info"
        info.mkdir(parents=True)
        for filename, source in modules.items():
            (root / filename).write_text(source)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        lines = "".join(f"{driver} = {target}\n" for driver, target in entry_points.items())
        (info / "entry_points.txt").write_text(f"[table_controller.drivers]\n{lines}")
        monkeypatch.syspath_prepend(str(root))
        return root

    return install


FreshPython = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def fresh_python() -> FreshPython:
    """fresh_python(code, *args, path=[folders]) runs `code` in a new interpreter with those folders on its path:
    what it imports and which distributions it finds start from nothing."""

    def run(code: str, *args: str, path: tuple[Path, ...] = ()) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, path), os.environ.get("PYTHONPATH", "")])}
        return subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=60, check=False
        )

    return run
