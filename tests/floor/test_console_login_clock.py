"""Sessions end and refusals are recorded on the floor's clock, and the rate limit's minute is a minute whatever the
wall clocks do (docs/console.md, "Limits"). The service puts the console on the database's clock
(floor/dbclock.py) once it is built; before, the log-in desk kept the clock it was built with, the host's, so on a
floor host whose clock is off the database's a session ended an hour early or late and the rate limit followed the
host's clock steps.

Real parts: the console in this process on a loopback socket, with the service's switch to a DbClock read from a real
PostgreSQL cluster (its keys and audit too). What cannot run here is a host whose clock is off the database's: the
host's wall clock is skewed by replacing `datetime` where the console reads it (the only fake, as
tests/floor/test_gap_clock.py does for the archive).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from aiohttp.test_utils import TestClient, TestServer
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.supervisor.envelope import public_key_b64
from floor.config import parse_floor_config
from floor.console.auth import login_bytes
from floor.console.server import ConsoleServer
from floor.db import async_connect, connect
from floor.dbclock import DbClock
from floor.schema import migrate

pytestmark = pytest.mark.floor
SESSION_MINUTES = 30


@dataclass
class HostClock:
    """How far the floor host's wall clock is off the real one (the database's): stepped by the test."""

    skew: timedelta


def skew_console_host(monkeypatch: pytest.MonkeyPatch, host: HostClock) -> None:
    import floor.console.server as server_module

    class Skewed(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Skewed:
            real = datetime.now(tz) + host.skew
            return cls.fromtimestamp(real.timestamp(), real.tzinfo)

    monkeypatch.setattr(server_module, "datetime", Skewed)


@dataclass
class Served:
    server: ConsoleServer
    client: TestClient[Any, Any]
    key: Ed25519PrivateKey
    dsn: str

    @property
    def origin(self) -> str:
        return f"http://{self.client.host}:{self.client.port}"

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        r = await self.client.post(path, json=body, headers={"Origin": self.origin})
        return r.status, await r.json()

    def audit(self, sql: str) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.dsn) as conn:
            return conn.execute(sql.encode()).fetchall()


@pytest.fixture(params=[timedelta(hours=-1), timedelta(hours=1)], ids=["host-behind", "host-ahead"])
async def served(
    floor_dsn: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[Served, HostClock]]:
    key = Ed25519PrivateKey.generate()
    config = parse_floor_config(
        f'[database]\ndsn = "{floor_dsn}"\n[console]\nlisten = "127.0.0.1:0"\nsession_minutes = {SESSION_MINUTES}\n'
        "attempts_per_minute = 2\n"
        f'[[console.supervisors]]\nkey_id = "sup"\nrole = "supervisor"\npublic_key = "{public_key_b64(key)}"\n'
    )
    with connect(config.database) as sync:
        migrate(sync)
    host = HostClock(request.param)
    skew_console_host(monkeypatch, host)
    server = ConsoleServer(config)  # built on the host's clock, as the service builds it
    clock = DbClock()
    conn = await async_connect(config.database)
    await clock.sync(conn)
    server.clock = clock.now  # the service's switch (floor/service.py, _start_console)
    client = TestClient(TestServer(server.app(), **server.server_options()))
    await client.start_server()
    try:
        yield Served(server, client, key, floor_dsn), host
    finally:
        await client.close()
        await server.stop()
        await conn.close()


async def test_a_session_ends_session_minutes_after_log_in_on_the_floors_clock(
    served: tuple[Served, HostClock],
) -> None:
    s, _ = served
    status, c = await s.post("/api/login/challenge", {"key_id": "sup"})
    assert status == 200, c
    signature = base64.b64encode(s.key.sign(login_bytes(c["challenge"], "sup", s.origin))).decode()
    status, body = await s.post("/api/login", {"key_id": "sup", "challenge": c["challenge"], "signature": signature})
    assert status == 200, body
    floor_now = s.server.clock()
    expires = datetime.fromisoformat(body["expires"])
    # Before: the host's now + 30 min, an hour off; with the host an hour behind, already past on the floor's clock.
    assert abs(expires - (floor_now + timedelta(minutes=SESSION_MINUTES))) < timedelta(seconds=30), (expires, floor_now)
    r = await s.client.get("/api/floor")
    assert r.status == 200, await r.text()
    session = await (await s.client.get("/api/session")).json()
    assert session["logged_in"] is True and session["expires"] == body["expires"]


async def test_the_rate_limit_holds_through_a_host_clock_step_and_its_evidence_is_on_the_floors_clock(
    served: tuple[Served, HostClock],
) -> None:
    s, host = served
    bad = {"key_id": "sup", "challenge": "none", "signature": "AAAA"}
    assert [(await s.post("/api/login", bad))[0] for _ in range(2)] == [403, 403]
    status, body = await s.post("/api/login", bad)
    assert status == 429, body
    host.skew += timedelta(minutes=5)  # the host's clock steps forward (NTP): the minute has not passed
    status, body = await s.post("/api/login", bad)
    assert status == 429, body  # before: judged on the host's clock, free again at once
    ((reply, at),) = s.audit("SELECT reply, at FROM console_audit WHERE action = 'throttle'")
    first_seen = datetime.fromisoformat(reply["first_seen"])
    # The audit row's `at` is the database's now(): the evidence beside it reads the same clock.
    assert abs(first_seen - at.astimezone(UTC)) < timedelta(seconds=30), (first_seen, at)
