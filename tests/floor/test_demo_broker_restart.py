"""The demo's broker restarted under a running floor leaves no seq gap. Its broker ran `persistence false`, so the
floor's persistent session (floor/listener_client.py) died with it: the events a table published between the broker's
return and the floor's new subscription reached no one, and every table came back with a gap until a person pressed
resend on each (found driving `tablectl demo --floor`).

Real parts: the demo's own mosquitto (floor.cli.private.start_mosquitto as private_servers starts it), stopped with
SIGTERM and started again on its port and dir; `tablectl floor`'s service (FloorService) on a real PostgreSQL; the
table is this test's MQTT client publishing QoS 1 events as a table does (the floor cannot tell). The events of the
outage are published, and acknowledged by the broker, while the test holds the event loop the floor runs in, so the
floor's reconnect surely comes after them (no sleep decides the order)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from floor.cli.private import start_mosquitto, stop_mosquitto
from floor.config import parse_floor_config
from floor.service import FloorService
from leash import Leash
from tests.broker import fresh_id
from tests.floor.conftest import count
from tests.floor.outage_table import publish
from tests.floor.service_running import running, until

pytestmark = [pytest.mark.floor, pytest.mark.e2e]
TABLE = "t1"


@pytest.fixture
def workdir() -> Iterator[Path]:
    d = Leash.mine().mkdtemp("tablectl-floor-demo-")  # as private_servers' own dir
    try:
        yield d
    finally:
        Leash.mine().release(d)


async def test_a_restart_of_the_demos_broker_leaves_no_seq_gap(workdir: Path, floor_dsn: str) -> None:
    proc, url = start_mosquitto(workdir, persistent=True)
    port = int(url.rsplit(":", 1)[1])
    prefix = fresh_id("restart")
    config = parse_floor_config(
        f'[database]\ndsn = "{floor_dsn}"\n[mqtt]\nbroker = "{url}"\nprefix = "{prefix}"\n'
        f'client_id = "{fresh_id("floor")}"\n'
    )
    service = FloorService(config)
    events = "SELECT count(*) FROM events"
    try:
        with capture_logs() as logs:
            async with running(service):
                await asyncio.to_thread(publish, port, prefix, TABLE, range(1, 6))
                await until(floor_dsn, events, 5, "the events before the restart were not archived")
                stop_mosquitto(proc)
                async with asyncio.timeout(30):
                    while service.mqtt_up:  # noqa: ASYNC110 (the service has no event for it)
                        await asyncio.sleep(0.05)
                before = service.generation
                # Held in the floor's loop: the broker is back and the table publishes before the floor reconnects.
                proc, _ = start_mosquitto(workdir, ports=lambda: port, persistent=True)
                publish(port, prefix, TABLE, range(6, 11))
                assert service.generation == before, "the floor reconnected before the outage's events: not the case"
                async with asyncio.timeout(60):
                    while service.generation == before or not service.mqtt_up:  # noqa: ASYNC110
                        await asyncio.sleep(0.05)
                await asyncio.to_thread(publish, port, prefix, TABLE, range(11, 12))
                await until(
                    floor_dsn,
                    "SELECT max(seq) FROM events",
                    11,
                    "the event after the restart was not archived",
                )
        # The session was kept: nothing to warn of.
        assert not [e for e in logs if e["event"].startswith("broker session lost")], logs
        assert count(floor_dsn, events) == 11
        assert count(floor_dsn, "SELECT count(*) FROM seq_gaps WHERE filled_at IS NULL") == 0, "a seq gap is open"
        assert (workdir / "mosquitto.db").exists(), "the demo's broker saved nothing at its stop"
    finally:
        stop_mosquitto(proc)
