"""A simulated device unplugged on purpose is not a failed task (docs/supervision.md): the simulator's own tasks end
as a normal stop, logged at info as an unplug; the driver, on the table's side, reports the device offline (the real
event) and back online at the replug; the supervisor journals no `task.failed` and restarts nothing. A driver's own
task that ends while the device is not being stopped is still a failure: `task failed`, journaled, the device
restarted.

Before, the device watch took every task named `<role>:<device id>` for the driver's, the simulator's too (the demo
runs its simulators in the table's process): an unplug logged `task failed ... the driver's task
sim-send:wager_terminal_2 ended` and restarted the driver.

Real parts: the wager terminal simulator on a real pseudo-terminal, the reference driver on its stable name, the
task supervisor and the device watch the daemon runs. The table the supervisor reports to is a recorder (what the
service does with `task.failed` and tilts is tests/systemd/test_task_watchdog.py's subject).
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from structlog.testing import capture_logs

from controller.core.events import DomainEvent, JournaledEvent
from controller.engine.inputs import Input
from controller.shell.supervised import device_watch
from controller.shell.tasks import TaskSpec, TaskSupervisor
from drivers.interfaces import DeviceEvent, DeviceOffline, DeviceOnline
from drivers.registry import create_driver
from drivers.sim.table import SimulatedTable
from drivers.tasks import unwatched

TERMINAL = "wager_terminal_2"
TIMEOUT = 10.0  # failure bound only


class Recorded:
    """The table's side of the supervisor: what it journals and what it is asked to do."""

    def __init__(self) -> None:
        self.noted: list[DomainEvent] = []
        self.submitted: list[Input] = []
        self.changed = asyncio.Event()

    def note(self, events: list[DomainEvent]) -> list[JournaledEvent]:
        self.noted.extend(events)
        self.changed.set()
        return []

    def submit(self, inp: Input) -> None:
        self.submitted.append(inp)


class Sink:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[DeviceEvent] = asyncio.Queue()

    def __call__(self, event: DeviceEvent) -> None:
        self.queue.put_nowait(event)

    async def next(self, kind: type[DeviceEvent]) -> DeviceEvent:
        async def find() -> DeviceEvent:
            while not isinstance(event := await self.queue.get(), kind):
                pass
            return event

        return await asyncio.wait_for(find(), TIMEOUT)


async def test_an_unplug_is_a_normal_stop_and_a_driver_task_ending_is_still_a_failure() -> None:
    async with SimulatedTable(seats=2, rng=random.Random(7), terminals=True) as sims:
        sim = sims.terminals[2]
        driver: Any = create_driver(TERMINAL, {"driver": "reference-wager-terminal", "port": sim.port, "seat": 2})
        sink = Sink()
        table = Recorded()
        supervisor = TaskSupervisor(table, backoff_min=0.01, backoff_max=0.01)
        await driver.start(sink)
        await sink.next(DeviceOnline)
        running = asyncio.create_task(supervisor.run([TaskSpec(f"device:{TERMINAL}", device_watch(driver, sink))]))
        try:
            with capture_logs() as logs:
                await sim.unplug()
                offline = await sink.next(DeviceOffline)
                await sim.replug()
                await sink.next(DeviceOnline)
            assert isinstance(offline, DeviceOffline) and offline.device_id == TERMINAL and offline.reason
            events = [(e["event"], e["log_level"]) for e in logs]
            assert ("simulator unplugged", "info") in events, events
            assert ("device offline", "warning") in events and ("device online", "info") in events, events
            assert not [e for e in logs if e["log_level"] in ("error", "critical")], logs
            assert supervisor.failures == {} and table.noted == [] and table.submitted == []

            # The driver's own task ends while nobody stopped the device: a failure, journaled, the device restarted.
            # Its link reads the port in the transport's callback (drivers/reference/line_reader.py), with no task of
            # that name: a reader task, where there is one (the read loop's readers), is a session's, never watched.
            named = [t for t in asyncio.all_tasks() if t.get_name() == f"driver:{TERMINAL}"]
            assert sorted(str(unwatched(t)) for t in named) == ["None"]
            (own,) = [t for t in named if unwatched(t) is None]
            with capture_logs() as logs:
                own.cancel()
                await asyncio.wait_for(table.changed.wait(), TIMEOUT)
                await sink.next(DeviceOnline)  # restarted: the watch stopped and started the driver
            (failed,) = table.noted
            assert failed.type == "task.failed" and failed.payload["task"] == f"device:{TERMINAL}"
            assert f"the driver's task driver:{TERMINAL} ended" in failed.payload["error"]
            assert ("task failed", "error") in [(e["event"], e["log_level"]) for e in logs]
            assert supervisor.failures == {f"device:{TERMINAL}": 1}
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await driver.stop()
