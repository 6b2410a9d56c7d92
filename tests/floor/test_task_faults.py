"""Every long-lived task of a running `tablectl floor` (real mosquitto, real PostgreSQL cluster), made to raise (a
bug), cancelled, or hung: the operator sees it (floor/tasks.py, docs/supervision.md "The floor and the link").

A task that raises or is cancelled stops the service with its error (`tablectl` exits 1 on it, so systemd's
Restart=on-failure starts it again), after one error-level line naming the task; a stuck archive write (the
database SIGSTOPped) stops the watchdog pings and says so. Before floor/tasks.py a cancelled listener, writer, gap
watch or watchdog stopped without a word and the watchdog went on pinging over a stopped ingest. The service runs in
the test's event loop so a fault can reach one task; the bug itself is the only fake (a patched function raising).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, NoReturn

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from structlog.testing import capture_logs

import floor.intake as floor_intake
import floor.service as floor_service
import floor.writing as floor_writing
from floor.config import parse_floor_config
from floor.pgcluster import PgCluster
from floor.sdnotify import Notifier
from floor.service import FloorService
from floor.tasks import TaskEnded
from tests.broker import Mosquitto, fresh_id
from tests.floor.conftest import count, floor_toml
from tests.floor.pgprocs import resume, stall
from tests.systemd.notify import Notification, NotifySocket, abstract_socket

pytestmark = [pytest.mark.e2e, pytest.mark.floor]
TASKS = ["floor-listener", "floor-writer", "floor-gaps", "floor-watchdog"]
ENDED = "a floor task ended; stopping"


@dataclass
class Running:
    service: FloorService
    run: asyncio.Task[None]
    logs: list[MutableMapping[str, Any]]
    prefix: str
    dsn: str
    broker: Mosquitto
    notify: NotifySocket

    def publish(self, seq: int) -> None:
        """One table event, QoS 1, acknowledged by the broker before this returns."""
        client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"fault-{uuid.uuid4().hex[:8]}")
        client.connect(self.broker.host, self.broker.port)
        client.loop_start()
        event = {
            "event_id": f"t1-{seq}", "boot_id": "b1", "seq": seq, "ts": f"2026-11-21T10:00:{seq:02d}.000000Z",
            "table_id": "t1", "round_id": None, "type": "wager.accepted", "rule": "655a.7(d)(1)",
            "payload": {"seat": 1, "spot": "ante", "amount": 500},
        }  # fmt: skip
        client.publish(f"{self.prefix}/t1/event", json.dumps(event), qos=1).wait_for_publish(timeout=10)
        client.disconnect()
        client.loop_stop()

    def said(self, event: str) -> list[tuple[str, str]]:
        return [(e["log_level"], str(e.get("task"))) for e in self.logs if e["event"] == event]


@pytest.fixture
async def floor(mosquitto: Mosquitto, floor_dsn: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Running]:
    monkeypatch.setenv("WATCHDOG_USEC", "400000")  # a ping every 0.2 s: the tests wake on them
    prefix = fresh_id("faults")
    config = parse_floor_config(floor_toml(floor_dsn, mosquitto.url, prefix, f"floor-{prefix}"))
    with abstract_socket("floor-faults") as notify_socket, capture_logs() as logs:
        service = FloorService(config, Notifier(notify_socket.address))
        run = asyncio.create_task(service.run(), name="floor-under-test")
        running = Running(service, run, logs, prefix, floor_dsn, mosquitto, notify_socket)
        await notify_socket.await_for(
            lambda n: n.get("WATCHDOG") == "1" and bool(running.said("subscribed to the tables")), 60, "subscribed"
        )
        try:
            yield running
        finally:
            service.stop()
            await asyncio.wait({run}, timeout=30)


def _task(name: str) -> asyncio.Task[Any]:
    return next(t for t in asyncio.all_tasks() if t.get_name() == name)


@pytest.mark.parametrize("name", TASKS)
async def test_a_cancelled_task_stops_the_floor_with_an_error_naming_it(floor: Running, name: str) -> None:
    _task(name).cancel()
    with pytest.raises(TaskEnded, match=f"{name} was cancelled while the floor ran"):
        await asyncio.wait_for(floor.run, 30)
    assert floor.said(ENDED) == [("error", name)]


def _bug(what: str) -> Callable[..., NoReturn]:
    def bug(*args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError(f"injected bug in {what}")

    return bug


@pytest.mark.parametrize("name", TASKS)
async def test_a_task_that_raises_stops_the_floor_with_its_error(
    floor: Running, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = floor.service
    if name == "floor-listener":
        monkeypatch.setattr(floor_intake, "parse", _bug(name))  # parsing what a table sent
    elif name == "floor-writer":
        monkeypatch.setattr(service.writes, "_report", _bug(name))  # after the commit, before the acknowledgement
    elif name == "floor-gaps":
        monkeypatch.setattr(floor_service, "open_gaps", _bug(name))
    else:
        monkeypatch.setattr(service, "_status", _bug(name))  # the watchdog's STATUS line
    floor.publish(1)
    with pytest.raises(RuntimeError, match=f"injected bug in {name}"):
        await asyncio.wait_for(floor.run, 30)
    assert floor.said(ENDED) == [("error", name)]
    ended = next(e for e in floor.logs if e["event"] == ENDED)
    assert "systemd restarts the service" in ended["then"]


async def _start_work_done(within: float) -> None:
    """The start's one-off database work (floor-older-days) ended. Its thread connects with connect_timeout=5: a
    stall that catches that connect is that task's lost database (said, and asked again: floor/ts_index.py), not the
    writer's stuck commit this test is about, so a test of the writer's stall waits it out. On a loaded machine it can
    still run when the fixture's first ping and SUBACK have come; unloaded it is done long before."""
    starting = {t for t in asyncio.all_tasks() if t.get_name() == "floor-older-days"}
    if starting:
        done, _ = await asyncio.wait(starting, timeout=within)
        assert done == starting, f"floor-older-days still running after {within} s"


async def test_a_stuck_archive_write_stops_the_watchdog_and_says_which_task(
    floor: Running, pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(floor_writing, "WRITE_STUCK_S", 1.0)
    await _start_work_done(60)
    assert not floor.run.done()  # the start's work ended without stopping the floor
    assert pg_cluster.proc is not None
    stalled = stall(pg_cluster.proc.pid)
    try:
        floor.publish(1)  # taken, and its commit waits on a server that does not answer
        await floor.notify.await_for(lambda n: "floor-writer stuck" in n.get("STATUS"), 20, "the unhealthy status")
        quiet: list[Notification] = []
        while (n := await floor.notify.anext(1.5)) is not None:  # three ping periods and more
            quiet.append(n)
            if len(quiet) > 50:
                break
        assert not [n for n in quiet if n.get("WATCHDOG")], "pinged while the archive write was stuck"
        assert floor.said("a floor task is stuck; the watchdog is no longer pinged") == [("error", "floor-writer")]
    finally:
        resume(stalled)
    await floor.notify.await_for(lambda n: n.get("WATCHDOG") == "1", 30, "pings once the write went through")
    assert count(floor.dsn, "SELECT count(*) FROM events") == 1
    assert not floor.run.done()
