"""A real `tablectl floor` stopped (SIGTERM, as systemd stops it) at its start while PostgreSQL does not answer yet (a
floor PC booting before its database): the stop ends the service at once, said in its log, instead of once the
database answers, which the old retry loop waited for (systemd's TimeoutStopSec ended it with a SIGKILL)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.broker import Mosquitto
from tests.floor.conftest import FloorProcess, floor_toml, wait_for

pytestmark = pytest.mark.floor


def test_a_stop_while_the_database_is_unreachable_at_the_start_ends_the_service(
    mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    with socket.socket() as closed:  # bound, never listening: a connection to it is refused, and no one takes it
        closed.bind(("127.0.0.1", 0))
        dsn = f"host=127.0.0.1 port={closed.getsockname()[1]} user=tablectl dbname=floor connect_timeout=5"
        config = tmp_path / "floor.toml"
        config.write_text(floor_toml(dsn, mosquitto.url, unique_id, f"floor-{unique_id}"))
        (logs := tmp_path / "logs").mkdir()
        floor = FloorProcess(config, logs)
        try:
            floor.start()
            wait_for(lambda: "PostgreSQL unreachable; retrying" in floor.log(), 60, "the floor waiting for PostgreSQL")
            # On the old code the retry loop never looked at the stop: the 30 s guard of stop() ran out.
            assert floor.stop() == 0, floor.log()
        finally:
            floor.kill()
    said = [json.loads(line) for line in floor.log().splitlines() if line.startswith("{")]
    assert [e["event"] for e in said if e["event"] != "PostgreSQL unreachable; retrying"] == [
        "floor stopped before its archive was reachable"
    ], floor.log()
    assert "Traceback" not in floor.log()


def test_a_stop_while_a_database_host_gone_dark_holds_the_start_ends_the_service(
    mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    """The dsn's port taken by a host that accepts the connection and never answers (a database host gone dark), and
    no connect_timeout in the dsn: the schema's connect would wait for ever. On the old code it ran in a worker thread
    the stop could not reach, and the process could not exit while it waited: the 30 s guard of stop() ran out."""
    with socket.socket() as dark:
        dark.bind(("127.0.0.1", 0))
        dark.listen()
        dark.settimeout(60)
        dsn = f"host=127.0.0.1 port={dark.getsockname()[1]} user=tablectl dbname=floor"
        config = tmp_path / "floor.toml"
        config.write_text(floor_toml(dsn, mosquitto.url, unique_id, f"floor-{unique_id}"))
        (logs := tmp_path / "logs").mkdir()
        floor = FloorProcess(config, logs)
        try:
            floor.start()
            held, _ = dark.accept()  # the floor's first connect, which now waits for an answer that never comes
            with held:
                assert floor.stop() == 0, floor.log()
        finally:
            floor.kill()
    said = [json.loads(line) for line in floor.log().splitlines() if line.startswith("{")]
    assert [e["event"] for e in said] == ["floor stopped before its archive was reachable"], floor.log()
    assert "Traceback" not in floor.log()
