"""A console served in the test's own process on a real loopback socket (`tablectl floor`'s aiohttp options), on a
real PostgreSQL cluster, with a clock the test steps; and a table's command desk on the real broker. Shared by the
console's limits and relay tests."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt
import psycopg
from aiohttp.test_utils import TestClient, TestServer
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.supervisor.envelope import public_key_b64
from floor.config import parse_floor_config
from floor.console.auth import login_bytes
from floor.console.server import ConsoleServer
from floor.db import connect
from floor.schema import migrate
from tests.broker import Mosquitto

PREFIX = "lim"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def ticks(self) -> float:
        """The monotonic clock the rate limit runs on, stepped with the wall clock here."""
        return (self.now - datetime(2026, 1, 1, tzinfo=UTC)).total_seconds()


@dataclass
class Served:
    server: ConsoleServer
    client: TestClient[Any, Any]
    clock: Clock
    dsn: str
    config: Path
    keys: dict[str, Ed25519PrivateKey]

    @property
    def origin(self) -> str:
        return f"http://{self.client.host}:{self.client.port}"

    async def post(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, Any]:
        r = await self.client.post(path, json=body, headers={"Origin": self.origin, **(headers or {})})
        return r.status, (await r.json()) | {"retry_after": r.headers.get("Retry-After")}

    async def enrol(self, key_id: str) -> tuple[int, Any]:
        public = public_key_b64(Ed25519PrivateKey.generate())
        return await self.post("/api/enrol", {"key_id": key_id, "role": "floorperson", "public_key": public})

    async def bad_login(self) -> tuple[int, Any]:
        return await self.post("/api/login", {"key_id": "sup", "challenge": "none", "signature": "AAAA"})

    async def session(self, key_id: str) -> tuple[aiohttp.CookieJar, str]:
        """A logged-in session of its own (cookie jar, CSRF token), as a second browser would hold."""
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as http:
            url, h = self.origin, {"Origin": self.origin}
            c = await (await http.post(f"{url}/api/login/challenge", json={"key_id": key_id}, headers=h)).json()
            sig = base64.b64encode(self.keys[key_id].sign(login_bytes(c["challenge"], key_id, url))).decode()
            body = {"key_id": key_id, "challenge": c["challenge"], "signature": sig}
            r = await http.post(f"{url}/api/login", json=body, headers=h)
            assert r.status == 200, await r.text()
            csrf = (await (await http.get(f"{url}/api/session")).json())["csrf"]
        return jar, csrf

    async def relay(self, broker: Mosquitto, reply: bytes, command_id: str) -> tuple[int, str, str]:
        """A supervisor's clear_tilt for t1 through the console's relay to a table desk answering `reply`: the
        console's status and body as the browser got them, and the command as the desk received it."""
        jar, csrf = await self.session("sup")
        ready = asyncio.Event()
        desk = asyncio.create_task(table_desk(broker, reply, ready))
        await ready.wait()
        envelope = {"command_id": command_id, "key_id": "sup", "table_id": "t1", "verb": "clear_tilt", "args": {}}
        async with aiohttp.ClientSession(cookie_jar=jar) as http:
            r = await http.post(
                f"{self.origin}/api/tables/t1/commands/clear_tilt",
                json=envelope,
                headers={"Origin": self.origin, "X-CSRF-Token": csrf},
            )
            status, body = r.status, await r.text()
        return status, body, await desk

    def audit(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.dsn) as conn:
            return conn.execute(sql.encode(), params).fetchall()


async def serve(dsn: str, tmp: Path, broker: str, limits: str) -> AsyncIterator[Served]:
    keys = {k: Ed25519PrivateKey.generate() for k in ("sup", "ann")}
    sups = "".join(
        f'[[console.supervisors]]\nkey_id = "{k}"\nrole = "supervisor"\npublic_key = "{public_key_b64(v)}"\n'
        for k, v in keys.items()
    )
    text = (
        f'name = "limits"\n[database]\ndsn = "{dsn}"\n[mqtt]\nbroker = "{broker}"\nprefix = "{PREFIX}"\n'
        f'[console]\nlisten = "127.0.0.1:0"\ncommand_timeout_s = 10\n{limits}\n{sups}'
    )
    path = tmp / "floor.toml"
    path.write_text(text)
    config = parse_floor_config(text)
    with connect(config.database) as conn:
        migrate(conn)
    clock = Clock()
    server = ConsoleServer(config, clock, clock.ticks)
    client = TestClient(TestServer(server.app(), **server.server_options()))
    await client.start_server()
    try:
        yield Served(server, client, clock, dsn, path, keys)
    finally:
        await client.close()
        await server.stop()


async def table_desk(broker: Mosquitto, reply: bytes, ready: asyncio.Event) -> str:
    """A table's command desk on the real broker: takes one command and answers it with `reply` (its command_id put
    in), as the table's own would publish; returns what it took."""
    async with aiomqtt.Client(broker.host, broker.port, identifier="lim-t1-desk") as c:
        await c.subscribe(f"{PREFIX}/t1/cmd/+", qos=1)
        ready.set()
        async for m in c.messages:
            if str(m.topic).endswith("/reply"):
                continue
            assert isinstance(m.payload, bytes)
            command_id = json.loads(m.payload)["command_id"]
            await c.publish(f"{PREFIX}/t1/cmd/reply", reply.replace(b"CID", command_id.encode()), qos=1)
            return m.payload.decode()
    raise AssertionError("the broker closed")
