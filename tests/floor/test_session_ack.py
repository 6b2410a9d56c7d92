"""A supervisor acknowledges the lost broker session's alert: every console shows who and when, a reload and a floor
restart show it still, and a gap opening after it raises the alert again. Before, the alert could not be
acknowledged: it stayed red on every console until its gaps closed. A request the console cannot take gets a 4xx
naming the problem, and every one past the session's checks is a console_audit row.

Real parts: `tablectl floor`'s service (FloorService) with its console, a real PostgreSQL, a private mosquitto without
persistence stopped and started under it, the console's HTTP API and event stream after signed log-ins; the table is
this test's MQTT client publishing QoS 1 events as a table does."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import psycopg
import pytest

from floor.console.floor_alerts import SESSION_GROUP
from floor.service import FloorService
from tests.broker import fresh_id, own_mosquitto
from tests.floor.event_stream import Stream
from tests.floor.outage_table import publish
from tests.floor.service_running import running, until
from tests.floor.session_lost_floor import floor_config, log_in, logged_in_stream, lose_session, names

pytestmark = [pytest.mark.floor, pytest.mark.e2e]
ACK_PATH = "/api/floor/session/acknowledge"  # as docs/console.md names it


async def ack(http: aiohttp.ClientSession, url: str, csrf: str | None, body: dict[str, Any]) -> tuple[int, Any]:
    headers = {"Origin": url} | ({"X-CSRF-Token": csrf} if csrf else {})
    r = await http.post(f"{url}{ACK_PATH}", json=body, headers=headers)
    return r.status, await r.json()


def session_alert(u: dict[str, Any]) -> dict[str, Any] | None:
    found = u.get("alerts", {}).get(SESSION_GROUP) or []
    return dict(found[0]) if found else None


def rows(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT outcome, key_id, role, reason, reply FROM console_audit WHERE action = 'acknowledge' ORDER BY id"
        ).fetchall()


async def refused_each(http: aiohttp.ClientSession, url: str, csrf: str, since: str) -> None:
    """Each request the console cannot take: its status and the words naming the problem."""
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as stranger:
        assert (await ack(stranger, url, None, {"since": since}))[0] == 401
    status, body = await ack(http, url, None, {"since": since})
    assert (status, "X-CSRF-Token" in body["error"]) == (403, True), body
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as fay:
        fay_csrf = await log_in(fay, url, "fay.floor")
        status, body = await ack(fay, url, fay_csrf, {"since": since})
        assert (status, "a supervisor's; this session is a floorperson" in body["error"]) == (403, True), body
    status, body = await ack(http, url, csrf, {})
    assert (status, "names no alert to acknowledge" in body["error"]) == (400, True), body
    status, body = await ack(http, url, csrf, {"since": "2026-01-01T00:00:00Z"})
    assert (status, f"is not the one showing (since {since})" in body["error"]) == (409, True), body


async def test_the_lost_sessions_alert_acknowledged_shown_everywhere_kept_and_raised_by_a_new_gap(
    floor_dsn: str,
) -> None:
    table, prefix = fresh_id("t"), fresh_id("ack")
    with own_mosquitto() as broker:
        config = floor_config(floor_dsn, broker.url, prefix)
        service = FloorService(config)
        async with (
            running(service, console=True),
            aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http,
        ):
            assert service.console is not None
            url = service.console.url.rstrip("/")
            csrf = await log_in(http, url)
            stream = Stream(await http.get(f"{url}/api/stream"))
            await stream.next_where("floor", lambda f: True)
            status, body = await ack(http, url, csrf, {"since": "2026-11-21T10:00:00Z"})
            assert (status, "no lost-session alert is showing" in body["error"]) == (409, True), body

            await asyncio.to_thread(publish, broker.port, prefix, table, range(1, 4))
            await until(floor_dsn, "SELECT count(*) FROM events", 3, "the events before the outage")
            await lose_session(service, broker, prefix, table, range(4, 6))
            await stream.next_where("update", lambda u: SESSION_GROUP in u.get("alerts", {}), within=60)
            await asyncio.to_thread(publish, broker.port, prefix, table, range(6, 7))
            alert = session_alert(await stream.next_where("update", names(table), within=60))
            assert alert is not None and alert["ack"] is None, alert
            since = str(alert["key"])
            await refused_each(http, url, csrf, since)

            status, body = await ack(http, url, csrf, {"since": since})
            assert status == 200 and body["acknowledged"]["by"] == "sue.sup", body
            first_at = body["acknowledged"]["at"]
            seen = session_alert(await stream.next_where("update", lambda u: (session_alert(u) or {}).get("ack")))
            assert seen is not None and seen["ack"] == {"by": "sue.sup", "at": first_at}, seen
            assert f"acknowledged by sue.sup at {first_at}" in seen["text"], seen
            status, body = await ack(http, url, csrf, {"since": since})
            assert (status, "acknowledged already, by sue.sup" in body["error"]) == (409, True), body
            csrf = await log_in(http, url)  # a reload, logged in again (another console alike)
            reloaded = Stream(await http.get(f"{url}/api/stream"))
            floor = await reloaded.next_where("floor", lambda f: True)
            assert [a["ack"] for a in floor["alerts"] if a["kind"] == "session"] == [{"by": "sue.sup", "at": first_at}]

            await asyncio.to_thread(publish, broker.port, prefix, table, range(8, 9))  # seq 7 lost after the ack
            raised = session_alert(
                await stream.next_where("update", lambda u: SESSION_GROUP in u.get("alerts", {}), within=60)
            )
            assert raised is not None and raised["ack"] is None and raised["key"] == since, raised
            status, body = await ack(http, url, csrf, {"since": since})
            assert status == 200, body
            second_at = body["acknowledged"]["at"]
            await until(
                floor_dsn, "SELECT count(*) FROM console_audit WHERE action = 'session_lost'", 1, "the loss kept"
            )

        acks = rows(floor_dsn)
        assert [(r[0], r[1], r[2]) for r in acks] == [
            ("refused", "sue.sup", "supervisor"),  # nothing showing yet
            ("refused", "fay.floor", "floorperson"),
            ("refused", "sue.sup", "supervisor"),  # no since
            ("refused", "sue.sup", "supervisor"),  # another loss's
            ("acknowledged", "sue.sup", "supervisor"),
            ("refused", "sue.sup", "supervisor"),  # twice
            ("acknowledged", "sue.sup", "supervisor"),
        ], acks
        assert acks[4][4] == {"since": since, "at": first_at, "tables": [table]}, acks[4]
        assert acks[4][3].startswith(f"the broker session lost at {since} acknowledged"), acks[4]

        restarted = FloorService(config)  # the same archive and broker: the broker kept this session
        async with (
            running(restarted, console=True),
            aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http,
        ):
            assert restarted.console is not None
            stream = await logged_in_stream(http, restarted.console.url.rstrip("/"))
            floor = await stream.next_where("floor", lambda f: True)
            kept = [a for a in floor["alerts"] if a["kind"] == "session"]
            assert [(a["key"], a["ack"]) for a in kept] == [(since, {"by": "sue.sup", "at": second_at})], kept
