"""The lost session's rows (floor/console/session_ack.py, keep): written the older loss first, so a restart restores
the latest; an archive that refuses them is said once, and the rows are written once it answers again.

Real parts: the console's records on a real PostgreSQL, and a port nothing listens on for the archive gone."""

from __future__ import annotations

import socket

import psycopg
from structlog.testing import capture_logs

from floor.config import parse_floor_config
from floor.console.server import ConsoleServer
from floor.console.session_ack import load_session
from floor.console.views import FloorView
from floor.db import connect
from floor.schema import migrate

OLD, NEW = "2026-11-27T10:00:00.000000Z", "2026-11-27T11:00:00.000000Z"


def rows(dsn: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn) as conn:
        got = conn.execute(
            "SELECT outcome, reply->>'since' FROM console_audit WHERE action = 'session_lost' ORDER BY id"
        ).fetchall()
    return [(str(a), str(b)) for a, b in got]


async def test_the_rows_wait_for_the_archive_said_once_and_the_latest_loss_is_restored(floor_dsn: str) -> None:
    config = parse_floor_config(f'[database]\ndsn = "{floor_dsn}"\n[console]\nlisten = "127.0.0.1:0"\n')
    with connect(config.database) as conn:
        migrate(conn)
    server = ConsoleServer(config)
    desk = server.lost_desk
    with socket.create_server(("127.0.0.1", 0)) as s:
        gone = int(s.getsockname()[1])
    server.records.database = config.database.model_copy(
        update={"dsn": f"host=127.0.0.1 port={gone} dbname=floor user=floor connect_timeout=5"}
    )
    server.view.session_ended = OLD  # an earlier loss ended, and a new one shown, neither written yet
    desk.lost(NEW)
    with capture_logs() as logs:
        await desk.keep()
        await desk.keep()
    said = [e for e in logs if e["log_level"] == "warning"]
    assert [(e["event"], e["outcome"], e["since"]) for e in said] == [
        ("console: the lost session's alert not kept in the archive yet; trying each second", "ended", OLD)
    ], said
    assert str(gone) in said[0]["problem"]
    assert rows(floor_dsn) == []

    server.records.database = config.database
    await desk.keep()
    assert rows(floor_dsn) == [("ended", OLD), ("alerted", NEW)]
    await desk.keep()  # nothing owed: nothing written twice
    assert rows(floor_dsn) == [("ended", OLD), ("alerted", NEW)]
    view = FloorView()
    with connect(config.database) as conn:
        load_session(view, conn)
    assert view.session_lost == NEW
