"""A real `tablectl floor` stopped (SIGTERM) while its running writer waits for a PostgreSQL it lost (the server
killed mid-run, events arriving): the stop ends the writer's reconnect at once instead of after the run loop's 10 s
wait and a cancel, says how many messages it left unarchived, and leaves them at the broker, which sends them again
to the next start: nothing lost, nothing twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from floor.pgcluster import PgCluster
from tests.broker import Mosquitto, fresh_id
from tests.floor.conftest import FloorProcess, count, floor_toml, wait_for
from tests.floor.qos1_events import publish_events

pytestmark = [pytest.mark.e2e, pytest.mark.floor]
RETRYING = ("archive write failed; retrying the batch", "PostgreSQL unreachable; retrying")


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
        assert "Traceback" not in floor.log()
        cluster.start()
        floor.start()
        wait_for(lambda: count(dsn, "SELECT count(*) FROM events") == 150, 60, "the rest, sent again by the broker")
        assert count(dsn, "SELECT count(DISTINCT seq) FROM events") == 150
        assert floor.stop() == 0, floor.log()
    finally:
        floor.kill()
        cluster.remove()
