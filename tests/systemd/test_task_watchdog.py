"""The systemd watchdog sees the supervised tasks (issue 12, item 1): while a required task is down, no WATCHDOG=1
and the STATUS line says which task and why; once it runs again, pinging resumes. Each failure is journaled as
`task.failed` with what happens next, and a task that keeps failing raises its tilt.

Real parts: the notification socket bound as systemd binds it, the SQLite journal, the service's engine loop; the
devices are stand-ins whose commands return at once (what they do is not what is tested here).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.config.table import demo_config
from controller.shell.sdnotify import SdNotify
from controller.shell.service import TableService
from controller.shell.tasks import TaskSpec, TaskSupervisor, degraded_reason
from controller.shell.watchdog import SystemdSupervisor
from controller.store.journal import Journal
from drivers.interfaces import EventSink
from tests.systemd.notify import NotifySocket

PERIOD = 0.25


class QuietDevice:
    def __init__(self, device_id: str) -> None:
        self.device_id = device_id

    async def start(self, sink: EventSink) -> None:
        return None

    async def stop(self) -> None:
        return None

    def __getattr__(self, verb: str) -> Callable[..., Any]:
        async def command(*args: object) -> None:
            return None

        return command


class Flaky:
    """A task that fails each time it is started until `healed` is set, then runs until cancelled."""

    def __init__(self) -> None:
        self.healed = asyncio.Event()
        self.starts = 0

    async def run(self) -> None:
        self.starts += 1
        if not self.healed.is_set():
            raise ConnectionResetError("the broker library fell over")
        await asyncio.Event().wait()


async def test_no_ping_while_a_required_task_is_down_and_a_tilt_when_it_keeps_failing(
    tmp_path: Path, notify_socket: NotifySocket
) -> None:
    config = demo_config()
    ids = ["shuffler", "shoe", "dealer_panel", *(f"wager_station_{s}" for s in range(1, 7))]
    journal = Journal(tmp_path / "journal.sqlite", config.table_id, boot_id="b1")
    service = TableService(config, {i: QuietDevice(i) for i in ids}, journal)
    tasks = TaskSupervisor(service, backoff_min=2 * PERIOD, backoff_max=8 * PERIOD)
    systemd = SystemdSupervisor(
        service,
        SdNotify(notify_socket.address),
        watchdog=2 * PERIOD,
        tasks_down=lambda: tasks.down(required_only=True),
    )
    flaky = Flaky()
    heard = service.subscribe("test", "lossless")
    running = [asyncio.create_task(service.run()), asyncio.create_task(systemd.run())]
    try:
        await notify_socket.await_for(lambda n: n.get("READY") == "1", 10, "READY=1")
        await notify_socket.await_for(lambda n: "WATCHDOG" in n.fields, 10 * PERIOD, "WATCHDOG=1 while healthy")
        running.append(
            asyncio.create_task(tasks.run([TaskSpec("commands", flaky.run, required=True, escalate_after=3)]))
        )
        sick = await notify_socket.await_for(
            lambda n: n.get("STATUS").startswith("UNHEALTHY"), 20 * PERIOD, "an UNHEALTHY status"
        )
        assert "required task(s) down: commands" in sick.get("STATUS")
        assert "ConnectionResetError" in sick.get("STATUS")
        # Three failures in the window: the tilt, which stops new rounds.
        async with asyncio.timeout(60 * PERIOD):
            while (await heard.get()).type != "tilt.raised":
                pass
        assert "tilt:task:commands" in service.state.blocks
        # Never a ping that comes with an UNHEALTHY status: each one was sent while no required task was down.
        pinged = [n for n in notify_socket.received if "WATCHDOG" in n.fields]
        assert not any(n.get("STATUS").startswith("UNHEALTHY") for n in pinged)
        assert degraded_reason(tasks, service.state.blocks) is not None
        flaky.healed.set()
        back = await notify_socket.await_for(lambda n: "WATCHDOG" in n.fields, 40 * PERIOD, "WATCHDOG=1 again")
        assert not back.get("STATUS").startswith("UNHEALTHY")
        assert tasks.down() == {}
        # Healed, but the tilt stands until a supervisor clears it: the status stays degraded, naming it.
        reason = degraded_reason(tasks, service.state.blocks)
        assert reason is not None and reason.startswith("tilt:task:commands: the commands task failed 3 time(s)")
    finally:
        for t in running:
            t.cancel()
        await asyncio.gather(*running, return_exceptions=True)
    failed = [e for e in journal.events() if e.type == "task.failed"]
    assert [e.payload["failures_in_window"] for e in failed] == [1, 2, 3]
    assert [e.payload["escalated"] for e in failed] == [False, False, True]
    assert failed[0].payload["then"] == "restarted in 0.5 s"
    assert failed[2].payload["then"] == "restarted in 2 s; tilt tilt:task:commands raised"
    raised = [e for e in journal.events() if e.type == "tilt.raised"]
    assert len(raised) == 1 and raised[0].seq > failed[2].seq and raised[0].payload["tilt"] == "tilt:task:commands"
    assert flaky.starts == 4
    journal.close()
