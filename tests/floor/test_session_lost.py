"""A broker that comes back without the floor's session is noticed: the floor logs a warning with the cause and the
fix, and every console page gets an alert naming the tables whose seq gaps opened since. Before, the CONNACK's
session-present flag was never read: the gaps it caused (the events the tables published between the broker's return
and the floor's new subscription) came unexplained, one table at a time.

Real parts: `tablectl floor`'s service (FloorService) with its console, a real PostgreSQL, a private mosquitto without
persistence stopped and started again under it, the console's event stream read over HTTP after a signed log-in; the
table is this test's MQTT client publishing QoS 1 events as a table does. The outage's events are published while the
test holds the floor's event loop, so they surely come before its reconnect (no sleep decides the order)."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from structlog.testing import capture_logs

from floor.console.floor_alerts import SESSION_GROUP
from floor.service import FloorService
from tests.broker import fresh_id, own_mosquitto
from tests.floor.outage_table import publish
from tests.floor.service_running import running, until
from tests.floor.session_lost_floor import floor_config, logged_in_stream, names

pytestmark = [pytest.mark.floor, pytest.mark.e2e]


async def test_a_lost_session_is_said_in_the_log_and_on_the_console_naming_the_tables(floor_dsn: str) -> None:
    table, prefix = fresh_id("t"), fresh_id("lost")
    with own_mosquitto() as broker, capture_logs() as logs:
        config = floor_config(floor_dsn, broker.url, prefix)
        service = FloorService(config)
        async with (
            running(service, console=True),
            aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http,
        ):
            assert service.console is not None
            stream = await logged_in_stream(http, service.console.url.rstrip("/"))
            floor = await stream.next_where("floor", lambda f: True)
            assert not [a for a in floor["alerts"] if a["kind"] == "session"], floor["alerts"]
            await asyncio.to_thread(publish, broker.port, prefix, table, range(1, 4))
            await until(floor_dsn, "SELECT count(*) FROM events", 3, "the events before the outage")
            assert not [e for e in logs if e["event"].startswith("broker session lost")]

            broker.stop()
            async with asyncio.timeout(30):
                while service.mqtt_up:  # noqa: ASYNC110 (the service has no event for it)
                    await asyncio.sleep(0.05)
            before = service.generation
            broker.start()  # held here, in the floor's loop: the table publishes before the floor is back
            publish(broker.port, prefix, table, range(4, 6))
            assert service.generation == before, "the floor reconnected before the outage's events: not the case"

            said = await stream.next_where("update", lambda u: SESSION_GROUP in u.get("alerts", {}), within=60)
            alert = said["alerts"][SESSION_GROUP][0]
            assert alert["kind"] == "session" and "no seq gap seen since yet" in alert["text"], alert
            await asyncio.to_thread(publish, broker.port, prefix, table, range(6, 7))
            named = await stream.next_where("update", names(table), within=60)
            alert = named["alerts"][SESSION_GROUP][0]
            assert alert["args"]["tables"] == [table] and table in alert["text"], alert
        warned = [e for e in logs if e["event"].startswith("broker session lost")]
        assert len(warned) == 1, [e["event"] for e in logs]
        assert warned[0]["log_level"] == "warning"
        assert "persistence true" in warned[0]["fix"] and "without persistence" in warned[0]["cause"], warned[0]


def tile_gaps(table: str, gaps: list[list[int]]) -> Any:
    return lambda u: any(t["table_id"] == table and t["gaps"] == gaps for t in u.get("tiles", []))


async def test_the_alert_ends_with_its_gaps_and_a_later_gap_is_not_named_in_it(floor_dsn: str) -> None:
    """The loss's gap resent, the alert leaves every page; a gap opening later at the same table is that table's own
    alert, not the lost session's. Before, the alert came back for any gap opened at any time after the loss."""
    table, prefix = fresh_id("t"), fresh_id("lost")
    with own_mosquitto() as broker:
        config = floor_config(floor_dsn, broker.url, prefix, "[gaps]\ngrace_s = 4\n")
        service = FloorService(config)
        async with (
            running(service, console=True),
            aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http,
        ):
            assert service.console is not None
            url = service.console.url.rstrip("/")
            stream = await logged_in_stream(http, url)
            await asyncio.to_thread(publish, broker.port, prefix, table, range(1, 4))
            await until(floor_dsn, "SELECT count(*) FROM events", 3, "the events before the outage")
            broker.stop()
            async with asyncio.timeout(30):
                while service.mqtt_up:  # noqa: ASYNC110 (the service has no event for it)
                    await asyncio.sleep(0.05)
            broker.start()  # held here, in the floor's loop: seqs 4 and 5 reach no one
            publish(broker.port, prefix, table, range(4, 6))
            await stream.next_where("update", lambda u: SESSION_GROUP in u.get("alerts", {}), within=60)
            await asyncio.to_thread(publish, broker.port, prefix, table, range(6, 7))
            await stream.next_where("update", names(table), within=60)

            await asyncio.to_thread(publish, broker.port, prefix, table, range(4, 6))  # the table's resend
            ended = await stream.next_where("update", lambda u: u.get("alerts", {}).get(SESSION_GROUP) == [], within=60)
            assert ended["alerts"][SESSION_GROUP] == []

            await asyncio.to_thread(publish, broker.port, prefix, table, range(8, 9))  # seq 7 missing, long after
            later = await stream.next_where("update", tile_gaps(table, [[7, 7]]), within=60)
            assert not later["alerts"].get(SESSION_GROUP), later["alerts"]
            assert later["alerts"][f"table:{table}"], later["alerts"]  # the table's own gap alert says it
            fresh = await logged_in_stream(http, url)
            floor = await fresh.next_where("floor", lambda f: True)
            assert not [a for a in floor["alerts"] if a["kind"] == "session"], floor["alerts"]
