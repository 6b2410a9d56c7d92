"""The console's HTTP side without a browser: aiohttp's test server in this process against a real PostgreSQL (the
audit and the enrolled keys): security headers and the CSP on everything served, clear errors for bad requests,
the cross-site checks on every POST, log-in by a signed challenge, roles, and sessions that end on the clock."""

from __future__ import annotations

import base64
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from aiohttp.test_utils import TestClient, TestServer
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.supervisor.envelope import public_key_b64
from controller.supervisor.verbs import ROLE_VERBS, VERBS
from floor.config import parse_floor_config
from floor.console.auth import login_bytes
from floor.console.plumbing import CSP, static_files
from floor.console.server import ConsoleServer
from floor.console.verbs import VERBS as CONSOLE_VERBS
from floor.db import connect
from floor.schema import migrate

pytestmark = pytest.mark.floor


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def console(floor_dsn: str) -> AsyncIterator[tuple[TestClient[Any, Any], Clock, str]]:
    config = parse_floor_config(
        f'[database]\ndsn = "{floor_dsn}"\n[console]\nlisten = "127.0.0.1:0"\nsession_minutes = 5\n'
    )
    with connect(config.database) as conn:
        migrate(conn)
    clock = Clock()
    server = ConsoleServer(config, clock)
    client = TestClient(TestServer(server.app()))
    await client.start_server()
    origin = f"http://{client.host}:{client.port}"
    try:
        yield client, clock, origin
    finally:
        await client.close()


def test_the_console_offers_each_verb_to_exactly_the_roles_the_tables_accept() -> None:
    assert set(CONSOLE_VERBS) == set(VERBS)
    for name, verb in CONSOLE_VERBS.items():
        assert verb.roles == {role for role, verbs in ROLE_VERBS.items() if name in verbs}, name


async def test_headers_and_clear_errors(console: tuple[TestClient[Any, Any], Clock, str]) -> None:
    client, _, origin = console
    for path in ("/", "/static/console.js", "/api/session", "/nowhere"):
        r = await client.get(path)
        assert r.headers["Content-Security-Policy"] == CSP, path
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert r.headers["X-Frame-Options"] == "DENY"
    assert "'unsafe-inline'" not in CSP and "default-src 'none'" in CSP
    r = await client.get("/nowhere")
    assert r.status == 404 and (await r.json())["error"] == "nothing at /nowhere"
    r = await client.get("/static/..%2fserver.py")
    assert r.status == 404
    r = await client.post("/api/enrol", data="key_id=x", headers={"Origin": origin})
    assert r.status == 415 and "application/json" in (await r.json())["error"]
    r = await client.post("/api/enrol", data="{nope", headers={"Origin": origin, "Content-Type": "application/json"})
    assert r.status == 400 and (await r.json())["error"].startswith("the body is not JSON")
    r = await client.post("/api/enrol", json={"key_id": "a"}, headers={"Origin": "https://evil.example"})
    assert r.status == 403 and "Origin" in (await r.json())["error"]
    r = await client.post("/api/enrol", json={"key_id": "a b", "role": "boss", "public_key": "xx"},
                          headers={"Origin": origin})  # fmt: skip
    error = (await r.json())["error"]
    assert r.status == 400 and "key_id" in error and "role" in error and "public_key" in error
    r = await client.post("/api/enrol", data=b"{" + b" " * 40_000 + b"}",
                          headers={"Origin": origin, "Content-Type": "application/json"})  # fmt: skip
    assert r.status == 413
    r = await client.get("/api/floor")
    assert r.status == 401 and "log in" in (await r.json())["error"]
    r = await client.delete("/api/floor")
    assert r.status == 405 and "DELETE is not allowed" in (await r.json())["error"]


async def test_every_module_of_the_page_is_served_as_javascript_under_the_csp_and_revalidated(
    console: tuple[TestClient[Any, Any], Clock, str],
) -> None:
    """The page is ES modules importing one another: each must come as JavaScript (a browser refuses a module of any
    other type), under the CSP (script-src 'self' admits them), and revalidated at every load (no-cache), so a
    console upgraded under an open browser never runs a stale module beside a new one."""
    client, _, _ = console
    index = await (await client.get("/")).text()
    todo = re.findall(r'<script type="module" src="(/static/[\w.-]+)"></script>', index)
    assert todo == ["/static/console.js"] and "<script src=" not in index
    seen: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        r = await client.get(path)
        assert r.status == 200, path
        assert r.content_type == "text/javascript" and r.charset == "utf-8", path
        assert r.headers["Cache-Control"] == "no-cache" and r.headers["Content-Security-Policy"] == CSP, path
        todo += [f"/static/{name}" for name in re.findall(r'^import [^;]* from "\./([\w.-]+)";$', await r.text(), re.M)]
    # Every script shipped is one the page loads.
    assert seen == {f"/static/{name}" for name in static_files() if name.endswith(".js")}
    assert len(seen) > 1


async def test_log_in_role_csrf_and_expiry(console: tuple[TestClient[Any, Any], Clock, str], floor_dsn: str) -> None:
    client, clock, origin = console
    key = Ed25519PrivateKey.generate()
    h = {"Origin": origin}
    r = await client.post("/api/enrol", json={"key_id": "tech", "role": "technician",
                                              "public_key": public_key_b64(key)}, headers=h)  # fmt: skip
    assert r.status == 200 and (await r.json())["approved"] is False
    with psycopg.connect(floor_dsn) as conn:
        conn.execute("UPDATE console_keys SET approved_at = now() WHERE key_id = 'tech'")

    async def log_in(signer: Ed25519PrivateKey) -> int:
        c = await (await client.post("/api/login/challenge", json={"key_id": "tech"}, headers=h)).json()
        sig = base64.b64encode(signer.sign(login_bytes(c["challenge"], "tech", origin))).decode()
        r = await client.post("/api/login", json={"key_id": "tech", "challenge": c["challenge"], "signature": sig},
                              headers=h)  # fmt: skip
        return r.status

    assert await log_in(Ed25519PrivateKey.generate()) == 403  # another key
    assert await log_in(key) == 200
    session = await (await client.get("/api/session")).json()
    assert session["role"] == "technician" and "clear_tilt" not in session["allowed"]
    assert "mark_out_of_order" in session["allowed"]
    body = b'{"key_id": "tech"}'
    post = {"Origin": origin, "Content-Type": "application/json"}
    r = await client.post("/api/tables/t1/commands/clear_tilt", data=body, headers=post)
    assert r.status == 403 and "X-CSRF-Token" in (await r.json())["error"]
    r = await client.post(
        "/api/tables/t1/commands/clear_tilt", data=body, headers={**post, "X-CSRF-Token": session["csrf"]}
    )
    assert r.status == 403 and "a technician may not send clear_tilt" in (await r.json())["error"]
    clock.now += timedelta(minutes=5)
    r = await client.get("/api/floor")
    assert r.status == 401
    with psycopg.connect(floor_dsn) as conn:
        audit = conn.execute("SELECT action, outcome, verb FROM console_audit ORDER BY id").fetchall()
    assert audit == [
        ("enrol", "pending", None),
        ("login", "refused", None),
        ("login", "accepted", None),
        ("command", "refused", "clear_tilt"),
    ]
