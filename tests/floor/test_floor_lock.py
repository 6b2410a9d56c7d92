"""The floor's lock (floor/floor_lock.py) across the writer's lost connections, with a real `tablectl floor` process,
a real PostgreSQL and mosquitto: the lock goes with the session, so the writer takes it again on its new connection
and archives on; and when another floor took it meanwhile, the writer's floor stops (exit 2) naming that floor
instead of archiving beside it. The other floor is stood for by a session holding the lock as a floor's writer does
(its name as a floor's), so the moment it takes the lock is the test's, not a race with a second process's start."""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest

from floor.floor_lock import KEEPALIVES, LOCK, hold
from tests.broker import Mosquitto
from tests.floor.conftest import FloorProcess, count, floor_toml, wait_for
from tests.floor.qos1_events import publish_events

pytestmark = [pytest.mark.e2e, pytest.mark.floor]
HOLDERS = (
    "SELECT a.pid, a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
    " WHERE l.locktype = 'advisory' AND l.granted AND l.classid::bigint = %s AND l.objid::bigint = %s"
    " AND l.objsubid = 2"
)


def holders(dsn: str) -> list[tuple[int, str]]:
    with psycopg.connect(dsn) as conn:
        return [(int(pid), str(name)) for pid, name in conn.execute(HOLDERS.encode(), LOCK).fetchall()]


def end_session(dsn: str, pid: int) -> None:
    """The writer's session ended as a database restart or a failover ends it; returns once it has ended."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_terminate_backend(%s, 30000)", (pid,)).fetchone()
    assert row is not None and row[0] is True, f"backend {pid} did not end"


def test_the_writer_takes_the_lock_again_on_reconnect_and_stops_when_another_floor_took_it(
    tmp_path: Path, floor_dsn: str, mosquitto: Mosquitto, unique_id: str
) -> None:
    config = tmp_path / "floor.toml"
    config.write_text(floor_toml(floor_dsn, mosquitto.url, unique_id, f"floor-{unique_id}"))
    floor = FloorProcess(config, tmp_path)
    floor.start()
    assert floor.proc is not None
    ours = f"tablectl-floor {socket.gethostname()} pid {floor.proc.pid}"
    try:
        wait_for(lambda: "subscribed to the tables" in floor.log(), 60, "the floor subscribed")
        [(first_pid, name)] = holders(floor_dsn)
        assert name == ours
        end_session(floor_dsn, first_pid)
        publish_events(mosquitto, unique_id, "t1", range(1, 11))  # its write fails, reconnects and retries
        wait_for(lambda: count(floor_dsn, "SELECT count(*) FROM events") == 10, 60, "the events after the reconnect")
        [(second_pid, name)] = holders(floor_dsn)
        assert name == ours and second_pid != first_pid, "the lock was not taken again on the new connection"

        end_session(floor_dsn, second_pid)
        with psycopg.connect(floor_dsn, autocommit=True, application_name="tablectl-floor elsewhere pid 4242") as other:
            row = other.execute("SELECT pg_try_advisory_lock(%s, %s)", LOCK).fetchone()
            assert row is not None and row[0] is True
            publish_events(mosquitto, unique_id, "t1", range(11, 21))
            status = floor.proc.wait(timeout=60)
            assert count(floor_dsn, "SELECT count(*) FROM events") == 10  # nothing archived beside the other floor
    finally:
        floor.kill()
    said = floor.log()
    assert status == 2, said
    assert "another floor service holds this archive" in said and "tablectl-floor elsewhere pid 4242" in said, said
    assert "archive write failed; retrying the batch" in said, said  # the first reconnect, said


def test_an_idle_floor_whose_lock_another_floor_took_stops_with_no_traffic(
    tmp_path: Path, floor_dsn: str, mosquitto: Mosquitto, unique_id: str
) -> None:
    """No message arrives after the writer's session ends: the idle writer's own check (floor_lock.IDLE_CHECK_S)
    finds it gone, and the lock another floor took within the reconnect's first 0.5 s backoff stops this floor with
    the words and exit status of a start beside it. Before, it ran on beside the other until its next write."""
    config = tmp_path / "floor.toml"
    config.write_text(floor_toml(floor_dsn, mosquitto.url, unique_id, f"floor-{unique_id}"))
    floor = FloorProcess(config, tmp_path)
    floor.start()
    assert floor.proc is not None
    try:
        wait_for(lambda: "subscribed to the tables" in floor.log(), 60, "the floor subscribed")
        [(pid, _)] = holders(floor_dsn)
        with psycopg.connect(floor_dsn, autocommit=True, application_name="tablectl-floor elsewhere pid 4242") as other:
            # Ended and taken in one session back to back: the floor's earliest reconnect is 0.5 s after it noticed.
            row = other.execute("SELECT pg_terminate_backend(%s, 30000)", (pid,)).fetchone()
            assert row is not None and row[0] is True, f"backend {pid} did not end"
            row = other.execute("SELECT pg_try_advisory_lock(%s, %s)", LOCK).fetchone()
            assert row is not None and row[0] is True
            status = floor.proc.wait(timeout=30)  # no publish: only the idle check can find it
    finally:
        floor.kill()
    said = floor.log()
    assert status == 2, said
    assert "archive connection lost while idle" in said, said
    assert "another floor service holds this archive" in said and "tablectl-floor elsewhere pid 4242" in said, said
    assert "archive write failed" not in said, said


async def test_the_lock_holders_session_lets_a_dead_host_go_within_a_minute(floor_dsn: str) -> None:
    """The server probes the holder's connection (floor_lock.KEEPALIVES): a floor host gone without a word frees the
    lock in some 40 s, not after the kernel's two hours, in which a standby floor host would refuse to start."""
    async with await psycopg.AsyncConnection.connect(floor_dsn, autocommit=True) as conn:
        await hold(conn, "test")
        shown = {}
        for setting in KEEPALIVES:
            row = await (await conn.execute(f"SHOW {setting}".encode())).fetchone()
            assert row is not None
            shown[setting] = row[0]
        host = conn.info.host
    assert host.startswith("127."), "a local socket has no keepalives: the test must reach the server over TCP"
    idle, interval, probes = (int(shown[s].removesuffix("s")) for s in KEEPALIVES)
    assert 0 not in (idle, interval, probes), shown  # 0: the kernel's own (two hours idle on Linux)
    assert idle + interval * probes <= 60, shown
