"""A real `tablectl floor` stopped (SIGTERM) while a database host that answered its start has gone dark (it takes
each new connection and never answers): the steps after the writer's connect open connections of their own in worker
threads (the console's first load, the older days' round summary and ts index), whose synchronous connect no stop
reaches and whose end the process's exit waits for. Each now connects once the server answered an asynchronous
connect raced against the stop: the stop ends the service at once, not after the dsn's connect_timeout (60 s here,
past stop()'s 30 s guard, which the old code ran out)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from floor.pgcluster import PgCluster
from tests.broker import Mosquitto
from tests.floor.conftest import FloorProcess, floor_toml, wait_for
from tests.floor.dark_proxy import DarkAfter

pytestmark = pytest.mark.floor
# The floor's connections before the steps tested: the start's ask, the schema's migration, the writer's.
BEFORE = 3


@pytest.mark.parametrize(
    ("console", "said"),
    [
        ('[console]\nlisten = "127.0.0.1:0"\n', "floor stopped before its console was loaded"),
        ("", "floor stopping"),  # the older days' task, once the service runs
    ],
    ids=["console-load", "older-days"],
)
def test_a_stop_while_a_later_connect_waits_on_a_host_gone_dark_ends_the_service(
    pg_cluster: PgCluster, floor_dsn: str, mosquitto: Mosquitto, unique_id: str, tmp_path: Path, console: str, said: str
) -> None:
    proxy = DarkAfter(pg_cluster.port, BEFORE)
    try:
        dsn = proxy.dsn(floor_dsn, connect_timeout_s=60)
        config = tmp_path / "floor.toml"
        config.write_text(floor_toml(dsn, mosquitto.url, unique_id, f"f-{unique_id}", console))
        (logs := tmp_path / "logs").mkdir()
        floor = FloorProcess(config, logs)
        try:
            floor.start()
            assert proxy.held.wait(60), floor.log()  # the step's connect, taken and never answered
            if not console:  # a stop inside aiomqtt's subscribe logs its own KeyError (not the case tested)
                wait_for(lambda: "subscribed to the tables" in floor.log(), 60, "the floor to subscribe")
            assert floor.stop() == 0, floor.log()
        finally:
            floor.kill()
    finally:
        proxy.close()
    events = [json.loads(line)["event"] for line in floor.log().splitlines() if line.startswith("{")]
    assert "floor archive ready" in events and said in events, floor.log()
    assert "console at" not in floor.log()
    assert "Traceback" not in floor.log()
