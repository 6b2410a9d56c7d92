"""Every long-lived task of a running `tablectl link` (real mosquitto, real PostgreSQL primary and synchronous
standby), and a jackpot claim's own task, made to raise (a bug) or cancelled; the database hung (SIGSTOP): the
operator sees each (floor/tasks.py, docs/supervision.md "The floor and the link").

A task that raises or is cancelled stops the link with its error after one error-level line naming it (`tablectl`
exits 1, systemd restarts it; the tables resend what was not acknowledged); a database call that does not return is
said at error level and the watchdog is not pinged until it does. Before floor/tasks.py a cancelled task ended
without a word (the probe's end also ended the pings, but no line said why). The service runs in the test's event
loop so a fault can reach one task; the bug itself is the only fake (a patched method raising).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, MutableMapping
from dataclasses import dataclass
from typing import Any, NoReturn

import pytest
from structlog.testing import capture_logs

import link.service as link_service
from floor.sdnotify import Notifier
from floor.tasks import TaskEnded
from link.config import parse_link_config
from link.service import LinkService
from tests.broker import Mosquitto, fresh_id
from tests.floor.pgprocs import resume, stall
from tests.link.conftest import LinkTable, Pair, link_toml
from tests.systemd.notify import Notification, NotifySocket, abstract_socket

pytestmark = [pytest.mark.e2e, pytest.mark.floor]
TASKS = ["link-listener", "link-contributions", "link-publisher", "link-probe"]
ENDED = "a link task ended; stopping"
CLAIM = {
    "kind": "claim",
    "round_id": "ms-01-r1",
    "claim": {"seat": 2, "level": "mega", "percent": 100, "rule": "655a.11(i)(1)(iv)"},
}


@dataclass
class Running:
    service: LinkService
    run: asyncio.Task[None]
    logs: list[MutableMapping[str, Any]]
    table: LinkTable
    notify: NotifySocket

    def said(self, event: str) -> list[tuple[str, str]]:
        return [(e["log_level"], str(e.get("task"))) for e in self.logs if e["event"] == event]

    async def ask(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """A table's request from its own thread (paho's), so the link in this loop can answer it."""
        return await asyncio.to_thread(self.table.ask, body, 2.0)


@pytest.fixture
async def link(mosquitto: Mosquitto, link_db: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Running]:
    monkeypatch.setenv("WATCHDOG_USEC", "400000")  # a ping at most every 0.2 s: the tests wake on them
    prefix = fresh_id("lfaults")
    table = LinkTable("ms-01", mosquitto.host, mosquitto.port, prefix)
    with abstract_socket("link-faults") as notify_socket, capture_logs() as logs:
        service = LinkService(
            parse_link_config(link_toml(link_db, mosquitto.url, prefix)), Notifier(notify_socket.address)
        )
        run = asyncio.create_task(service.run(), name="link-under-test")
        running = Running(service, run, logs, table, notify_socket)
        await notify_socket.await_for(
            lambda n: n.get("WATCHDOG") == "1" and bool(running.said("listening for the tables")), 60, "listening"
        )
        try:
            yield running
        finally:
            service.stop()
            await asyncio.wait({run}, timeout=30)
            table.close()


def _task(name: str) -> asyncio.Task[Any]:
    return next(t for t in asyncio.all_tasks() if t.get_name() == name)


@pytest.mark.parametrize("name", TASKS)
async def test_a_cancelled_task_stops_the_link_with_an_error_naming_it(link: Running, name: str) -> None:
    _task(name).cancel()
    with pytest.raises(TaskEnded, match=f"{name} was cancelled while the link ran"):
        await asyncio.wait_for(link.run, 30)
    assert link.said(ENDED) == [("error", name)]


async def _bug(*args: object, **kwargs: object) -> NoReturn:
    raise RuntimeError("injected bug")


def _sync_bug(*args: object, **kwargs: object) -> NoReturn:
    raise RuntimeError("injected bug")


@pytest.mark.parametrize("name", [*TASKS, "link-hit:ms-01"])
async def test_a_task_that_raises_stops_the_link_with_its_error(
    link: Running, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = link.service
    request: dict[str, Any] = {"kind": "heartbeat"}
    if name == "link-listener":
        monkeypatch.setattr(service, "_dispatch", _bug)
    elif name == "link-contributions":
        monkeypatch.setattr(service.tables, "_commit", _bug)
        request = {
            "kind": "contribute",
            "round_id": "ms-01-r1",
            "contributions": [{"seat": 1, "wager": "progressive", "cents": 500}],
        }
    elif name == "link-publisher":
        monkeypatch.setattr(service.signs, "_retained", _bug)
    elif name == "link-probe":
        monkeypatch.setattr(service, "_check_stuck", _sync_bug)
    else:  # a jackpot claim, answered by a task of its own
        monkeypatch.setattr(service.tables, "_claim", _bug)
        request = CLAIM
    answer = await link.ask(request)
    with pytest.raises(RuntimeError, match="injected bug"):
        await asyncio.wait_for(link.run, 30)
    assert link.said(ENDED) == [("error", name)]
    if name in ("link-contributions", "link-hit:ms-01"):
        assert answer is None, "nothing is acknowledged that was not committed: the table resends after the restart"


async def test_a_stuck_database_call_is_said_and_stops_the_watchdog(
    link: Running, pg_pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(link_service, "DB_STUCK_S", 1.0)
    assert pg_pair.primary.proc is not None
    stalled = stall(pg_pair.primary.proc.pid)
    try:
        await link.notify.await_for(lambda n: "database call stuck" in n.get("STATUS"), 20, "the unhealthy status")
        quiet: list[Notification] = []
        while (n := await link.notify.anext(1.5)) is not None and len(quiet) < 50:
            quiet.append(n)
        assert not [n for n in quiet if n.get("WATCHDOG")], "pinged while the database did not answer"
        assert link.said("a link task is stuck; the watchdog is no longer pinged") == [("error", "link-db")]
    finally:
        resume(stalled)
    await link.notify.await_for(lambda n: n.get("WATCHDOG") == "1", 30, "pings once the database answers again")
    assert not link.run.done()
