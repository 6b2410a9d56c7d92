"""The running table's parts and the tasks the supervisor keeps (controller/shell/tasks.py), each with its policy.

Which task is restarted and which escalates, and why, is docs/supervision.md's table; each TaskSpec below carries
the short reason. In short: a task whose state lives in the journal (publisher, commands, tick, meters, a device's
watch) is restarted with backoff and raises its tilt only when it keeps failing; a display (console) and systemd's
notifier never raise one; the demo's people, who cannot be restarted mid-round, escalate at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from controller.config.table import TableConfig
from controller.engine.context import BonusDraws
from controller.engine.inputs import RaiseTilt
from controller.mqtt.birth import build_birth, software_check
from controller.mqtt.meter_topics import follow_meters, publish
from controller.mqtt.publisher import EventPublisher
from controller.shell.inbox import EarlyStart
from controller.shell.service import TableService
from controller.shell.tasks import TaskSpec, TaskSupervisor, degraded_reason
from controller.shell.watchdog import SystemdSupervisor
from controller.store.anchor import Claim
from controller.store.journal import Journal
from drivers.interfaces import Device
from drivers.tasks import unwatched

if TYPE_CHECKING:
    from controller.shell.archiver import Archiver
    from controller.supervisor.listener import CommandListener

PUBLISHER = "publisher"
NEVER = 1 << 30  # escalate_after for the tasks whose failure never warrants a tilt


class DeviceTaskFailed(RuntimeError):
    """One of a driver's own tasks ended while the device was not being stopped."""


class SupervisedTable:
    """The service, its publisher and the task supervisor, wired to each other."""

    def __init__(
        self,
        config: TableConfig,
        devices: Mapping[str, Device],
        journal: Journal,
        broker: str | None,
        remote_anchor: Claim | None = None,
        draws: BonusDraws | None = None,
        early: EarlyStart | None = None,
    ) -> None:
        self.config = config
        self.broker = broker
        self.journal = journal
        self.publisher = EventPublisher(
            journal,
            config.mqtt,
            config.table_id,
            broker=broker,
            birth=build_birth(config, journal.boot_id),
            note=lambda events: self.service.note(events),
            health=lambda: degraded_reason(self.tasks, self.service.state.blocks),
            tilt=lambda name, reason, remedy: self.service.submit(RaiseTilt(name, reason, remedy)),
        )
        self.service = TableService(
            config,
            devices,
            journal,
            on_journaled=self.publisher.notify,
            # The writer thread hands durable events straight to the publisher (docs/mqtt.md, "Latency"), so the broker
            # may hear of an event before the listeners: no promise either way, and nothing relies on it.
            on_durable=self.publisher.offer,
            remote_anchor=remote_anchor,
            software_check=software_check(config),
            draws=draws,
            early=early,
        )
        self.tasks = TaskSupervisor(self.service, on_change=self.publisher.health_changed)
        self.archiver: Archiver | None = None
        self.listener: CommandListener | None = None  # made by the "commands" task once the table is ready
        keep = config.journal.keep_rounds
        if keep is not None:
            # The archiver (and the archive store under it) and the link client below load only for a table
            # configured with them: a start imports what its table needs (issue 19).
            from controller.shell.archiver import Archiver, archive_directory

            directory = archive_directory(config, journal.path)
            self.archiver = Archiver(
                journal.path,
                config.table_id,
                keep,
                directory,
                lambda: self.service.state,
                # lossy: it only counts rounds ended to time its passes; a drop makes a pass due (the journal keeps
                # every row until a pass archives it)
                self.service.subscribe("journal-archive", "lossy"),
            )

    def specs(
        self, out: TextIO | None, companions: Sequence[Coroutine[Any, Any, None]], systemd: SystemdSupervisor | None
    ) -> list[TaskSpec]:
        service, publisher = self.service, self.publisher
        specs = [
            TaskSpec(PUBLISHER, publisher.run, required=True, why="the outbox is in the journal"),
            TaskSpec("commands", self._commands, required=True, why="supervisor commands arrive through it"),
            TaskSpec("tick", service.ticks, required=True, why="deck life and idle checks run on it"),
        ]
        specs += self._meters_specs() + self._link_specs()
        if self.archiver is not None:
            from controller.shell.archiver import ESCALATE_AFTER as ARCHIVE_ESCALATE_AFTER
            from controller.shell.archiver import TASK as ARCHIVE_TASK

            specs.append(
                TaskSpec(
                    ARCHIVE_TASK,
                    self.archiver.run,
                    escalate_after=ARCHIVE_ESCALATE_AFTER,
                    why="the journal keeps every row meanwhile; retried at the next quiet moment",
                )
            )
        if out is not None:
            # Here: only `--live-log` and the demo print the readable log; a daemon's start does not load it (issue 19).
            from controller.shell.console import Console

            console = Console(service.subscribe("console", "lossy"), out)  # lossy: a display
            specs.append(TaskSpec("console", console.run, escalate_after=NEVER, why="display only"))
        if systemd is not None:
            specs.append(TaskSpec("systemd", systemd.run, escalate_after=NEVER, why="no pings while down"))
        specs += [
            TaskSpec(f"people:{n}", _once(c), policy="escalate", why="cannot be restarted mid-round")
            for n, c in enumerate(companions, 1)
        ]
        return specs

    async def _commands(self) -> None:
        """The supervisor command listener, loaded once the table is ready (it waits for that anyway: commands act on
        the restored state). Its modules (the gate, the verbs' models, the replay store, resend) are about 10 ms of
        import that `tablectl run` no longer pays before READY=1 (issue 19); the same listener across restarts."""
        if self.listener is None:
            await self.service.ready.wait()
            # systemd's notifier waits on the same event and was woken after this task: one turn of the loop lets
            # READY=1 go out before the import.
            await asyncio.sleep(0)
            from controller.supervisor.listener import CommandListener  # after READY=1 (see above)

            self.listener = CommandListener(self.service, self.broker)
        await self.listener.run()

    def _meters_specs(self) -> list[TaskSpec]:
        service, publisher = self.service, self.publisher
        params = service.engine.meter_params
        if params.levels:
            # Only a table with progressive levels follows its meters: a subscribed queue nobody reads would keep
            # every journaled event of the table's life in memory (about 60 kB a seven-seat round, issue 19).
            # lossy: the retained topics show the journaled meters; after a drop every level is published again.
            meters = service.subscribe("meters", "lossy")
            return [
                TaskSpec(
                    "meters",
                    lambda: follow_meters(
                        meters,
                        lambda: service.state.meters,
                        params,
                        self.config.table_id,
                        publisher,
                        dropped=lambda: meters.dropped,
                    ),
                    why="the retained meter topics",
                )
            ]
        return []

    def meters_at_close(self) -> None:
        """Hand the publisher every level's meters as journaled, once the service has stopped: the meters task is
        cancelled with the others at the end and may not have read the last `meter.*` events of its queue (a round
        that completed as the table closed), which would leave the retained progressive/<level> topics behind the
        journal until the next start (docs/mqtt.md)."""
        params = self.service.engine.meter_params
        if params.levels:
            meters = self.service.state.meters
            publish(
                meters, params, self.config.table_id, self.publisher, levels=params.levels, seq=self.journal.last_seq
            )

    def _link_specs(self) -> list[TaskSpec]:
        service = self.service
        if self.config.progressive.link is not None:
            from controller.shell.link_client import LinkClient

            client = LinkClient(service, self.config, self.broker)
            service.link_wake(client.kick)
            return [
                TaskSpec(
                    "link",
                    client.run,
                    required=True,
                    why="the outbox is in the journal; while it is down the lease lapses and progressive play stops",
                )
            ]
        return []

    async def watch_devices(self) -> None:
        """Once the devices are started, a supervised watch on each (a restart stops and starts the device)."""
        await self.service.ready.wait()
        for device in self.service.devices.values():
            self.tasks.add(TaskSpec(f"device:{device.device_id}", device_watch(device, self.service.sink)))


def _once(coro: Coroutine[Any, Any, None]) -> Callable[[], Coroutine[Any, Any, None]]:
    """A start for a coroutine made once (the demo's people): a restart waits for the table's end instead."""
    started = False

    def start() -> Coroutine[Any, Any, None]:
        nonlocal started
        if started:
            return asyncio.Event().wait()  # type: ignore[return-value]
        started = True
        return coro

    return start


def _driver_tasks(device_id: str) -> list[asyncio.Task[Any]]:
    """A driver's own tasks for its lifetime, by the naming its base class keeps: "<role>:<device id>" (driver:,
    pacer:, ...). Not a session's (a link's reader, which ends whenever the device is unplugged: the driver reports it
    offline and reconnects) nor a simulator's of the same device (the demo runs them in this process; an unplug stops
    them on purpose): drivers.tasks.unwatched says which, and logs their own failures."""
    return [
        t
        for t in asyncio.all_tasks()
        if t.get_name().endswith(f":{device_id}") and not t.done() and unwatched(t) is None
    ]


def device_watch(device: Device, sink: Callable[..., None]) -> Callable[[], Coroutine[Any, Any, None]]:
    first = True

    async def watch() -> None:
        nonlocal first
        if not first:  # restarted after a failure: the device gets a fresh start, as after an unplug
            await device.stop()
            await device.start(sink)
        first = False
        tasks = _driver_tasks(device.device_id)
        if not tasks:
            await asyncio.Event().wait()  # a driver that runs no task of its own: nothing to watch
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            err = None if task.cancelled() else task.exception()
            raise DeviceTaskFailed(
                f"the driver's task {task.get_name()} ended" + (f": {err!r}" if err else "")
            ) from err

    return watch
