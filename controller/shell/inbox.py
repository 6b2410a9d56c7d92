"""The service's queue of inputs, and the devices' bring-up into it, which a start begins early (issue 19).

Bringing a device up (Device.start: open its line, identify it, start reading) is mostly waiting on the wire: about
30 ms on paced 115200-baud lines. `tablectl run` begins it once the software check (605a.4(c)) has spoken and the
journal is open, and reads the broker's anchor and restores the stored state meanwhile. That is safe because a
device's start commands nothing: its reports (online, offline, a fault, a wager already on a station) only queue on
the inbox, and the service steps them after its first inputs (the recovery, any tilt raised at start), which are
decided on the state as it was stored (controller.shell.service). What the restore decides reaches a device as a
command only after that.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

import structlog

from controller.core.events import JournaledEvent
from drivers.interfaces import Device, DeviceEvent, DeviceOffline

if TYPE_CHECKING:
    # Annotations only: the engine loads with the service, after `tablectl run` started the devices (issue 19).
    from controller.engine.inputs import Input

log = structlog.get_logger("tablectl.service")


@dataclass(frozen=True, slots=True)
class Waited:
    """An input queued by submit_and_wait, whose caller awaits the events its step journaled."""

    inp: Input
    done: asyncio.Future[list[JournaledEvent]]


if TYPE_CHECKING:
    Inbox: TypeAlias = asyncio.Queue[Input | Waited]


def start_devices(devices: Iterable[Device], sink: Callable[[DeviceEvent], None]) -> asyncio.Task[None]:
    """Every device started at once (each start returns once its first attempt to connect settled); a device that does
    not start is reported offline through `sink`, as one that went away."""
    return asyncio.get_running_loop().create_task(_start_all(list(devices), sink), name="devices-start")


async def _start_all(devices: list[Device], sink: Callable[[DeviceEvent], None]) -> None:
    await asyncio.gather(*(_start(d, sink) for d in devices))


async def _start(device: Device, sink: Callable[[DeviceEvent], None]) -> None:
    try:
        await device.start(sink)
    except Exception as err:
        log.error("device did not start", device=device.device_id, error=str(err))
        sink(DeviceOffline(device.device_id, reason=f"did not start: {err}"))


@dataclass(frozen=True, slots=True)
class EarlyStart:
    """The devices being brought up before the service exists: their reports wait on `inbox`, the service's own queue
    once it takes it over (TableService(early=...))."""

    inbox: Inbox
    started: asyncio.Task[None]

    @classmethod
    def begin(cls, devices: Iterable[Device]) -> EarlyStart:
        inbox: Inbox = asyncio.Queue()
        return cls(inbox, start_devices(devices, inbox.put_nowait))

    async def abandon(self, devices: Iterable[Device]) -> None:
        """The start failed before the service took the devices over: let them go again."""
        self.started.cancel()
        await asyncio.gather(self.started, return_exceptions=True)
        await asyncio.gather(*(d.stop() for d in devices), return_exceptions=True)
