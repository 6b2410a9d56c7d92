"""The console's command relay reads its envelope with the one JSON-body reader every POST uses
(floor/console/plumbing.py, read_json): a malformed body, a wrong content type and an oversized one get the same
errors, naming the problem and the fix, as the log-in and enrolment endpoints, through real HTTP on loopback against
a real PostgreSQL (the enrolled keys, the audit). Nothing reaches a table: each is refused before the relay."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from aiohttp.test_utils import TestClient, TestServer
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.supervisor.envelope import public_key_b64
from floor.config import parse_floor_config
from floor.console.auth import login_bytes
from floor.console.plumbing import MAX_BODY
from floor.console.server import ConsoleServer
from floor.db import connect
from floor.schema import migrate

pytestmark = pytest.mark.floor
RELAY = "/api/tables/t1/commands/mark_out_of_order"


@pytest.fixture
async def logged_in(floor_dsn: str) -> AsyncIterator[tuple[TestClient[Any, Any], dict[str, str]]]:
    """A technician's session: the client (its cookie) and the headers a POST from the console carries."""
    config = parse_floor_config(f'[database]\ndsn = "{floor_dsn}"\n[console]\nlisten = "127.0.0.1:0"\n')
    with connect(config.database) as conn:
        migrate(conn)
    client = TestClient(TestServer(ConsoleServer(config).app()))
    await client.start_server()
    origin = f"http://{client.host}:{client.port}"
    key, key_id = Ed25519PrivateKey.generate(), f"tech-{client.port}"
    h = {"Origin": origin}
    try:
        r = await client.post("/api/enrol", json={"key_id": key_id, "role": "technician",
                                                  "public_key": public_key_b64(key)}, headers=h)  # fmt: skip
        assert r.status == 200, await r.text()
        with psycopg.connect(floor_dsn) as conn:
            conn.execute("UPDATE console_keys SET approved_at = now() WHERE key_id = %s", (key_id,))
        c = await (await client.post("/api/login/challenge", json={"key_id": key_id}, headers=h)).json()
        sig = base64.b64encode(key.sign(login_bytes(c["challenge"], key_id, origin))).decode()
        r = await client.post("/api/login", json={"key_id": key_id, "challenge": c["challenge"], "signature": sig},
                              headers=h)  # fmt: skip
        assert r.status == 200, await r.text()
        csrf = (await (await client.get("/api/session")).json())["csrf"]
        yield client, {"Origin": origin, "Content-Type": "application/json", "X-CSRF-Token": csrf}
    finally:
        await client.close()


async def _error(client: TestClient[Any, Any], path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    r = await client.post(path, data=body, headers=headers)
    assert r.headers["Content-Type"].startswith("application/json"), await r.text()
    return r.status, str((await r.json())["error"])


@pytest.mark.parametrize(
    ("body", "status", "problem"),
    [
        (b'{"key_id": "tech", ', 400, "the body is not JSON ("),
        (b"\xff\xfe", 400, "the body is not JSON ("),
        (b'["an", "array"]', 400, "the body is a JSON list, not an object"),
        (b"{" + b" " * MAX_BODY + b"}", 413, f"the body is larger than {MAX_BODY} bytes"),
    ],
    ids=["truncated", "not-utf8", "not-an-object", "oversized"],
)
async def test_a_bad_envelope_gets_the_same_error_as_any_bad_body(
    logged_in: tuple[TestClient[Any, Any], dict[str, str]], body: bytes, status: int, problem: str
) -> None:
    client, post = logged_in
    relayed = await _error(client, RELAY, body, post)
    enrolled = await _error(client, "/api/enrol", body, post)
    assert relayed == enrolled  # one reader, one wording
    got, error = relayed
    assert got == status and error.startswith(problem), error
    assert "send one JSON object" in error  # the fix, not only the problem


async def test_a_wrong_content_type_is_refused_naming_the_type_to_send(
    logged_in: tuple[TestClient[Any, Any], dict[str, str]],
) -> None:
    client, post = logged_in
    form = {**post, "Content-Type": "application/x-www-form-urlencoded"}
    relayed = await _error(client, RELAY, b"key_id=tech", form)
    assert relayed == await _error(client, "/api/enrol", b"key_id=tech", form)
    assert relayed == (415, "send the body as application/json (it came as application/x-www-form-urlencoded)")


async def test_a_stranger_gets_no_further_than_the_session_whatever_the_body(
    logged_in: tuple[TestClient[Any, Any], dict[str, str]],
) -> None:
    """The relay reads the body only once the session may send: a request without the CSRF token is refused for that,
    malformed body or not (docs/console.md, CSRF)."""
    client, post = logged_in
    no_token = {k: v for k, v in post.items() if k != "X-CSRF-Token"}
    status, error = await _error(client, RELAY, b"{nope", no_token)
    assert status == 403 and "X-CSRF-Token" in error
