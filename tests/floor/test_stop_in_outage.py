"""A real `tablectl floor` stopped (SIGTERM) while its running writer waits for a PostgreSQL it lost (the server
killed mid-run, events arriving): the stop ends the writer's reconnect at once instead of after the run loop's 10 s
wait and a cancel, says how many messages it left unarchived, and leaves them at the broker, which sends them again
to the next start: nothing lost, nothing twice."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from floor.pgcluster import PgCluster
from tests.broker import Mosquitto, fresh_id
from tests.floor.conftest import FloorProcess, count, floor_toml, wait_for
from tests.floor.qos1_events import publish_events

pytestmark = [pytest.mark.e2e, pytest.mark.floor]
RETRYING = ("archive write failed; retrying the batch", "PostgreSQL unreachable; retrying")
HELD = "floor writer still busy after the stop's wait; cancelling it"


def _said(floor: FloorProcess) -> list[dict[str, object]]:
    return [json.loads(line) for line in floor.log().splitlines() if line.startswith("{")]


def test_a_stop_while_the_writer_reconnects_ends_it_and_says_what_the_broker_keeps(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    cluster = PgCluster.create(durable=False)
    floor = FloorProcess(tmp_path / "floor.toml", tmp_path)
    try:
        cluster.start()
        dsn = cluster.create_database("stopped")
        prefix = fresh_id("stopped")
        floor.config.write_text(floor_toml(dsn, mosquitto.url, prefix, f"floor-{prefix}"))
        floor.start()
        wait_for(lambda: "subscribed to the tables" in floor.log(), 60, "the floor to subscribe")
        publish_events(mosquitto, prefix, "t1", range(1, 101))
        wait_for(lambda: count(dsn, "SELECT count(*) FROM events") == 100, 60, "the first 100 events")
        cluster.kill()
        publish_events(mosquitto, prefix, "t1", range(101, 151))  # the broker holds them: the floor cannot commit
        wait_for(lambda: RETRYING[0] in floor.log(), 30, "the writer to lose its database")
        assert floor.stop() == 0, floor.log()
        said = _said(floor)
        stops = [i for i, e in enumerate(said) if e["event"] == "floor stopped with messages not archived"]
        # On the old code the writer's cancel said nothing of what it left.
        assert len(stops) == 1, floor.log()
        left = said[stops[0]]
        assert isinstance(left["messages"], int) and 1 <= left["messages"] <= 50, left
        assert "redelivers" in str(left["then"]), left
        written = [e for e in said if e["event"] == RETRYING[0]]
        assert isinstance(written[0]["messages"], int) and written[0]["messages"] <= left["messages"], written
        # Nothing retried once the service was stopping: the writer's backoff waited on the stop. On the old code it
        # went on retrying through the run loop's 10 s wait for it (each retry a line after `floor stopping`).
        stopping = [e["event"] for e in said].index("floor stopping")
        assert not [e for e in said[stopping:] if e["event"] in RETRYING], floor.log()
        assert HELD not in floor.log()
        assert "Traceback" not in floor.log()
        cluster.start()
        floor.start()
        wait_for(lambda: count(dsn, "SELECT count(*) FROM events") == 150, 60, "the rest, sent again by the broker")
        assert count(dsn, "SELECT count(DISTINCT seq) FROM events") == 150
        assert floor.stop() == 0, floor.log()
    finally:
        floor.kill()
        cluster.remove()


def test_a_stop_while_the_writer_s_reconnect_hangs_ends_it(mosquitto: Mosquitto, tmp_path: Path) -> None:
    """The server lost, then its port taken by a host that accepts the connection and never answers (a database host
    gone dark: the reconnect waits for its connect_timeout, 60 s here). The stop ends the connect at once; on the old
    code the stop waited its 10 s for the writer, then cancelled it, said by its warning."""
    cluster = PgCluster.create(durable=False)
    floor = FloorProcess(tmp_path / "floor.toml", tmp_path)
    dark = socket.socket()
    try:
        cluster.start()
        dsn = cluster.create_database("dark", connect_timeout_s=60)
        prefix = fresh_id("dark")
        floor.config.write_text(floor_toml(dsn, mosquitto.url, prefix, f"floor-{prefix}"))
        floor.start()
        wait_for(lambda: "subscribed to the tables" in floor.log(), 60, "the floor to subscribe")
        publish_events(mosquitto, prefix, "t1", range(1, 11))
        wait_for(lambda: count(dsn, "SELECT count(*) FROM events") == 10, 60, "the first 10 events")
        cluster.kill()
        dark.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        dark.bind(("127.0.0.1", cluster.port))
        dark.listen()
        dark.settimeout(60)
        publish_events(mosquitto, prefix, "t1", range(11, 21))
        held, _ = dark.accept()  # the writer's reconnect, which now waits for an answer that never comes
        with held:
            assert floor.stop() == 0, floor.log()
        said = _said(floor)
        assert HELD not in [e["event"] for e in said], floor.log()
        left = [e for e in said if e["event"] == "floor stopped with messages not archived"]
        assert len(left) == 1 and left[0]["messages"] == 10, floor.log()
        assert "Traceback" not in floor.log()
    finally:
        dark.close()
        floor.kill()
        cluster.remove()
