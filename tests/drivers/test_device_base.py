"""DeviceBase on its own: a driver whose sessions follow a script, so the base's bookkeeping is what is tested.

The drivers' own tests (reference, bus, Alpha sign, USB panel, skeleton) run the same base against real ptys and a
pyusb backend double; here each rule is pinned down once: the backoff schedule and its reset, offline once per
outage, a crash of the loop reported as a fault, a failing sink survived, stop() cancel-safe and final.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import ClassVar

import pytest
from pydantic import BaseModel

from drivers.base import BACKOFF_FIRST, BACKOFF_MAX, DeviceBase
from drivers.interfaces import ButtonPressed, DeviceEvent, DeviceFault, DeviceOffline, DeviceOnline

ABSENT = "no such port"


class ScriptedSettings(BaseModel):
    pass


class Scripted(DeviceBase):
    """Each session's _connect takes the next outcome: None (online), a reason (absent) or an exception."""

    Settings: ClassVar[type[ScriptedSettings]] = ScriptedSettings

    def __init__(self, *outcomes: str | Exception | None) -> None:
        super().__init__("panel")
        self.plan = list(outcomes)
        self.connects: list[float] = []
        self.disconnects = 0
        self.unplug = asyncio.Event()
        self.changed = asyncio.Event()  # set at every connect and every event emitted

    def emit(self, event: DeviceEvent) -> None:
        super().emit(event)
        self.changed.set()

    async def until(self, condition: Callable[[], object]) -> None:
        """Wait until condition() holds (bounded: a failure must not hang the suite)."""
        async with asyncio.timeout(5.0):
            while not condition():
                self.changed.clear()
                await self.changed.wait()

    async def _connect(self) -> str | None:
        self.connects.append(asyncio.get_running_loop().time())
        self.changed.set()
        outcome = self.plan.pop(0) if self.plan else ABSENT
        if isinstance(outcome, Exception):
            raise outcome
        if outcome is None:
            self._set_online({"model": "scripted"})
        return outcome

    async def _serve(self) -> str:
        await self.unplug.wait()
        self.unplug.clear()
        return "unplugged"

    async def _disconnect(self) -> None:
        self.disconnects += 1


def kinds(events: list[DeviceEvent]) -> list[type[DeviceEvent]]:
    return [type(e) for e in events]


def test_the_backoff_is_the_documented_one() -> None:
    assert (BACKOFF_FIRST, BACKOFF_MAX) == (0.1, 5.0)


async def test_backoff_doubles_while_absent_and_starts_over_after_a_session() -> None:
    device = Scripted(ABSENT, ABSENT, ABSENT, ABSENT, None, ABSENT)
    events: list[DeviceEvent] = []
    await device.start(events.append)
    try:
        assert kinds(events) == [DeviceOffline]  # start() returned once the first attempt settled
        await device.until(lambda: device.online)
        device.unplug.set()
        await device.until(lambda: len(device.connects) >= 7)
    finally:
        await device.stop()
    gaps = [later - earlier for earlier, later in zip(device.connects, device.connects[1:], strict=False)]
    # Lower bounds only: a busy machine may be late, never early (a timer may fire a clock tick early).
    for gap, nominal in zip(gaps[:4], (0.1, 0.2, 0.4, 0.8), strict=True):
        assert gap >= nominal - 0.02, gaps
    # The session that came online reset the backoff: 0.1 s after it, not 1.6 s.
    assert gaps[5] < 0.8, gaps
    assert kinds(events) == [DeviceOffline, DeviceOnline, DeviceOffline]
    assert events[0].reason == ABSENT and events[2].reason == "unplugged"  # type: ignore[attr-defined]


async def test_a_crash_of_the_loop_is_reported_not_silent() -> None:
    device = Scripted(RuntimeError("driver bug"))
    events: list[DeviceEvent] = []
    await device.start(events.append)
    # The crash settled the first attempt: start() did not give up after START_WAIT. Not timed: under SIGSTOP stalls
    # this start (its traceback logged) once took over a second.
    assert device._first_attempt.is_set()
    assert kinds(events) == [DeviceFault, DeviceOffline]
    fault = events[0]
    assert isinstance(fault, DeviceFault) and fault.code == "driver_error" and "driver bug" in fault.detail
    await device.stop()


async def test_a_failing_sink_does_not_stop_the_driver() -> None:
    device = Scripted(None, None)
    events: list[DeviceEvent] = []

    def sink(event: DeviceEvent) -> None:
        events.append(event)
        raise RuntimeError("controller bug")

    await device.start(sink)
    try:
        device.unplug.set()
        await device.until(lambda: kinds(events) == [DeviceOnline, DeviceOffline, DeviceOnline])
    finally:
        await device.stop()


async def test_stop_is_cancel_safe_final_and_harmless_twice() -> None:
    await Scripted().stop()  # before start()
    device = Scripted(None)
    events: list[DeviceEvent] = []
    await device.start(events.append)
    await device.stop()
    assert device.disconnects == 1 and not device.supervised
    # Events a worker thread hands over after stop() are dropped.
    thread = threading.Thread(target=device.emit_threadsafe, args=(ButtonPressed("panel", "fold"),))
    thread.start()
    thread.join()
    await asyncio.sleep(0.05)
    assert kinds(events) == [DeviceOnline]
    await device.stop()

    device = Scripted(None)
    await device.start(events.append)
    stopping = asyncio.create_task(device.stop())
    await asyncio.sleep(0)
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    await device.stop()  # a stop after a cancelled one still ends the session
    assert not device.supervised and device.disconnects >= 1
