"""A real `tablectl floor` stopped (SIGTERM) while its console's requests wait on the archive: one in its statement
(held on a lock of `events`, as a database host stalled mid-statement holds it), one connecting to a host gone dark
(it takes each new connection and never answers). Before, each ran in a worker thread on a synchronous connection
that no stop reached: the process's exit waited for the statement (for ever here) or for connect_timeout (60 s,
past the test's 30 s). Now the console's requests connect once the server answered an asynchronous connect raced
against the console's stop (floor/reach.py), and the stop cuts the statements in flight (floor/stmt_stop.py): the
floor stops at once, and each request gets a 503 saying the floor is stopping.

Real parts: the floor process with its console on a loopback port, a real PostgreSQL behind a TCP proxy the test
turns dark (tests/floor/dark_proxy.py), the suite's mosquitto, a supervisor's session as a browser gets one."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import psycopg
import pytest
from structlog.testing import capture_logs

from floor.config import parse_floor_config
from floor.console.plumbing import COOKIE
from floor.console.server import FLUSH_S, ConsoleServer
from floor.db import connect
from floor.pgcluster import PgCluster
from floor.schema import migrate
from tests.broker import Mosquitto
from tests.floor.conftest import console_floor, wait_for
from tests.floor.console_login import log_in
from tests.floor.dark_proxy import DarkAfter

pytestmark = pytest.mark.floor
WAITING = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"


class Ask:
    """A GET of the console's in a thread of the test's: its status and body once answered."""

    def __init__(self, url: str, token: str) -> None:
        self.status: int | None = None
        self.body = ""
        self.req = urllib.request.Request(url, headers={"Cookie": f"{COOKIE}={token}"})
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            with urllib.request.urlopen(self.req, timeout=120) as r:
                self.status, self.body = r.status, r.read().decode()
        except urllib.error.HTTPError as err:
            self.status, self.body = err.code, err.read().decode()


def test_a_stop_cuts_the_consoles_requests_waiting_on_a_stalled_or_dark_archive(
    pg_cluster: PgCluster, floor_dsn: str, mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    proxy = DarkAfter(pg_cluster.port, 10**6)  # relays every connection until the test turns it dark
    floor, port = console_floor(tmp_path, proxy.dsn(floor_dsn, connect_timeout_s=60), mosquitto.url, unique_id)
    origin = f"http://127.0.0.1:{port}"
    try:
        token = log_in(origin, floor_dsn)
        with psycopg.connect(floor_dsn) as holder, psycopg.connect(floor_dsn, autocommit=True) as watcher:
            holder.execute("LOCK TABLE events IN ACCESS EXCLUSIVE MODE")
            stalled = Ask(f"{origin}/api/rounds/t1-r1", token)  # its statement waits on the lock
            wait_for(lambda: watcher.execute(WAITING).fetchone() == (1,), 30, "the recall's statement to wait")
            proxy.relayed = 0  # dark: every new connection taken and never answered
            dark = Ask(f"{origin}/api/rounds/t1-r2", token)
            assert proxy.held.wait(30), floor.log()
            started = time.monotonic()
            assert floor.stop() == 0, floor.log()
            took = time.monotonic() - started
            holder.rollback()
        for ask in (stalled, dark):
            ask.thread.join(30)
            assert ask.status == 503, (ask.status, ask.body)
            assert json.loads(ask.body) == {
                "error": "the floor is stopping: ask again once `tablectl floor` runs again"
            }, ask.body
        assert took < 15, f"the stop took {took:.1f} s"
    finally:
        floor.kill()
        proxy.close()
    assert "Traceback" not in floor.log()


async def test_the_stops_last_audit_write_waits_on_a_dark_host_no_longer_than_flush_s(
    pg_cluster: PgCluster, floor_dsn: str
) -> None:
    """A client's run of refused log-ins not yet written when the console stops, the database host dark: the stop's
    last write of it (login.flush) is given up after FLUSH_S, said in the log. Before, it connected in a worker thread
    and the stop waited for connect_timeout (60 s here; the test gives it 20)."""
    proxy = DarkAfter(pg_cluster.port, 0)  # every connection taken and never answered
    try:
        dsn = proxy.dsn(floor_dsn, connect_timeout_s=60)
        config = parse_floor_config(f'[database]\ndsn = "{dsn}"\n[console]\nlisten = "127.0.0.1:0"\n')
        server = ConsoleServer(config)
        server.login.refusals.refused("192.0.2.7", server.clock())
        started = time.monotonic()
        with capture_logs() as logs:
            await asyncio.wait_for(server.stop(), 20)
        took = time.monotonic() - started
        said = [e for e in logs if e["log_level"] == "warning"]
        assert [e["event"] for e in said] == ["console: the refusals' audit rows were not brought up to date at stop"]
        assert said[0]["refusals"] == 1 and said[0]["problem"] == f"the archive did not answer within {FLUSH_S} s"
        assert [(r["client"], r["count"], r["not_in_audit"], r["audit_row"]) for r in said[0]["runs"]] == [
            ("192.0.2.7", 1, 1, None)
        ], said
        assert proxy.held.is_set()  # the write was tried: the host took its connection
        assert FLUSH_S <= took < FLUSH_S + 3, f"the stop took {took:.1f} s"
    finally:
        proxy.close()


async def test_the_refusals_the_stop_could_not_write_are_each_named_in_its_log_line(floor_dsn: str) -> None:
    """Two clients' runs of refused log-ins, one with its row written at its first refusal (as the gate writes it)
    and three more refusals since, the other never written; then the archive refuses every connection (its port
    closed): the stop's line counts the refusals the audit lacks and names each run (client, count, first and last
    seen, its row). Before, a traceback said the rows could not be brought up to date, not how many nor whose."""
    with connect(parse_floor_config(f'[database]\ndsn = "{floor_dsn}"\n').database) as conn:
        migrate(conn)
    config = parse_floor_config(f'[database]\ndsn = "{floor_dsn}"\n[console]\nlisten = "127.0.0.1:0"\n')
    server = ConsoleServer(config)
    desk = server.login
    first = desk.refusals.refused("192.0.2.7", server.clock())
    await server.records.throttled(first, desk.attempts.limit)
    for _ in range(3):
        desk.refusals.refused("192.0.2.7", server.clock())
    for _ in range(2):
        desk.refusals.refused("198.51.100.9", server.clock())
    with socket.create_server(("127.0.0.1", 0)) as s:
        gone = int(s.getsockname()[1])  # nothing listens once closed: each connect is refused
    server.records.database = config.database.model_copy(
        update={"dsn": f"host=127.0.0.1 port={gone} dbname=floor user=floor connect_timeout=5"}
    )
    with capture_logs() as logs:
        await server.stop()
    said = [e for e in logs if e["log_level"] in ("warning", "error")]
    assert [e["event"] for e in said] == ["console: the refusals' audit rows were not brought up to date at stop"]
    line = said[0]
    assert line["refusals"] == 5 and str(gone) in line["problem"], line
    runs = {r["client"]: r for r in line["runs"]}
    assert (runs["192.0.2.7"]["count"], runs["192.0.2.7"]["not_in_audit"]) == (4, 3)
    assert runs["192.0.2.7"]["audit_row"] == first.row is not None
    assert (runs["198.51.100.9"]["count"], runs["198.51.100.9"]["not_in_audit"], runs["198.51.100.9"]["audit_row"]) == (
        2, 2, None
    )  # fmt: skip
    assert all(r["first_seen"] <= r["last_seen"] for r in line["runs"])
    with psycopg.connect(floor_dsn) as conn:  # the row written keeps its first count: the line has the rest
        assert conn.execute("SELECT reply->>'count' FROM console_audit WHERE id = %s", (first.row,)).fetchone() == (
            "1",
        )
