"""The floor service outlives its database: started before PostgreSQL answers, it waits and then archives; with the
server killed (SIGKILL) while events arrive, it holds them unacknowledged at the broker and archives every one once
the server is back. Nothing lost, nothing twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from floor.pgcluster import PgCluster
from tests.broker import Mosquitto, fresh_id
from tests.floor.conftest import FloorProcess, count, floor_toml, wait_for
from tests.floor.qos1_events import publish_events

pytestmark = [pytest.mark.e2e, pytest.mark.floor]


def test_the_floor_waits_for_its_database_and_loses_nothing_while_it_is_down(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    cluster = PgCluster.create(durable=False)
    floor = FloorProcess(tmp_path / "floor.toml", tmp_path)
    try:
        cluster.start()
        dsn = cluster.create_database("outage")
        cluster.stop()
        prefix = fresh_id("outage")
        floor.config.write_text(floor_toml(dsn, mosquitto.url, prefix, f"floor-{prefix}"))
        floor.start()
        wait_for(lambda: "PostgreSQL unreachable; retrying" in floor.log(), 30, "the floor to wait for PostgreSQL")
        cluster.start()
        wait_for(lambda: "subscribed to the tables" in floor.log(), 60, "the floor to subscribe")
        publish_events(mosquitto, prefix, "t1", range(1, 201))
        wait_for(lambda: count(dsn, "SELECT count(*) FROM events") == 200, 60, "the first 200 events")
        cluster.kill()
        publish_events(mosquitto, prefix, "t1", range(201, 401))  # the broker holds them: the floor cannot commit
        wait_for(lambda: "archive write failed" in floor.log() or "unreachable" in floor.log(), 30, "a retry")
        cluster.start()
        wait_for(lambda: count(dsn, "SELECT count(*) FROM events") == 400, 60, "every event after the outage")
        assert count(dsn, "SELECT count(DISTINCT seq) FROM events") == 400
        assert count(dsn, "SELECT count(*) FROM seq_gaps WHERE filled_at IS NULL") == 0
        assert floor.stop() == 0
    finally:
        floor.kill()
        cluster.remove()
