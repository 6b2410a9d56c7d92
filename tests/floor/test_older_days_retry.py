"""The floor's older-days task (floor/ts_index.py `older_days`: the round summary and the ts index of the days archived
before migrations 7 and 8) when the database is lost under it, against a real PostgreSQL: the task waits, says so, and
asks again, and the work is done once the server answers. Before, the lost connection ended the task, and a task's
end stops the whole floor (exit 1, restarted by systemd) over work the archiving does not need; a loaded CI machine
hit it when a test stalled the server during the floor's first seconds (docs/performance-history.md, Part 35).

The loss is a real one: a proxy in front of the cluster takes the first connection and closes it unanswered (as a
server restarting does), and relays every later one."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from structlog.testing import capture_logs
from structlog.typing import EventDict

from floor.config import DatabaseSection
from floor.db import connect
from floor.schema import migrate, partition_name
from floor.ts_index import older_days, partition_index, valid
from tests.floor.ts_archive import DAYS, archive_at_7, indexed

pytestmark = pytest.mark.floor


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


async def test_the_older_days_work_waits_out_a_lost_database_and_is_done_once_it_answers(floor_dsn: str) -> None:
    archive_at_7(floor_dsn)
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        migrate(conn)
    upstream = int(conninfo_to_dict(floor_dsn)["port"] or 5432)
    accepted = 0
    pipes: set[asyncio.Task[None]] = set()

    async def taken(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        if accepted == 1:  # the database lost: the connection closed before any answer
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream)
        for task in (_pipe(reader, up_writer), _pipe(up_reader, writer)):
            pipes.add(asyncio.create_task(task))

    proxy = await asyncio.start_server(taken, "127.0.0.1", 0)
    port = proxy.sockets[0].getsockname()[1]
    db = DatabaseSection(dsn=make_conninfo(floor_dsn, host="127.0.0.1", port=str(port)))
    try:
        with capture_logs() as logs:
            async with asyncio.timeout(60):  # a guard against a hang, not a speed bound
                await older_days(db, asyncio.Event(), retry_s=0.05)
    finally:
        proxy.close()
        for task in pipes:
            task.cancel()
        await asyncio.gather(*pipes, return_exceptions=True)
    lost = [e for e in logs if e["event"].startswith("older days' work lost the database")]
    assert [(e["log_level"], e["retry_in_s"]) for e in lost] == [("warning", 0.05)], logs
    assert "fix" in lost[0] and lost[0]["problem"]
    assert logs[-1]["event"] == "events ts index complete"
    assert accepted > 1  # asked again through the proxy, not elsewhere
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        names = [partition_name(d) for d in DAYS]
        assert indexed(conn) == {n: partition_index(n) for n in names} and valid(conn)


async def test_a_stop_ends_the_wait_for_a_lost_database_at_once(floor_dsn: str) -> None:
    """Nothing answers on the port (refused): the task asks, says so, and a stop during its wait ends it, no error."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    db = DatabaseSection(dsn=make_conninfo(floor_dsn, host="127.0.0.1", port=str(port)))
    stop, said = asyncio.Event(), asyncio.Event()

    def watch(_: object, __: str, event: EventDict) -> EventDict:
        if str(event["event"]).startswith("older days' work lost the database"):
            said.set()  # the task is in its wait now
        return event

    with capture_logs(processors=[watch]):
        task = asyncio.create_task(older_days(db, stop, retry_s=3600))
        async with asyncio.timeout(30):  # a guard against a hang
            await said.wait()
        stop.set()
        async with asyncio.timeout(5):  # a guard: the hour's wait is cut by the stop
            await task
    assert task.result() is None
