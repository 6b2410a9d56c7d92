"""A browser that leaves while its event stream is being prepared (a page closed or reloaded at once, a proxy's health
check): before, aiohttp logged "Error handling request" at error level with a traceback (ClientConnectionResetError
from the response's prepare() in server.py's _stream), an alarm for what is no fault of the floor's. It is a quiet
close now: one info line naming the client that went away, and the console goes on serving.

Real parts: ConsoleServer.start() as `tablectl floor` serves it (its own socket, ConsoleProtocol), a real PostgreSQL
(the log-in's keys and audit), a supervisor's session from a real signed log-in, raw sockets on loopback that send the
stream's GET and close at once. Whether a given close lands before or during prepare() is the kernel's timing: the
test sends many, in both ways a client goes (a FIN, and an RST with SO_LINGER 0), and asserts none of them is logged
as an error, whichever point each reached."""

from __future__ import annotations

import asyncio
import base64
import logging
import socket
import struct
from collections.abc import AsyncIterator

import aiohttp
import psycopg
import pytest
import structlog
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.supervisor.envelope import public_key_b64
from floor.config import parse_floor_config
from floor.console.auth import login_bytes
from floor.console.plumbing import COOKIE
from floor.console.server import ConsoleServer
from floor.db import connect
from floor.schema import migrate
from tests.floor.conftest import wait_for

pytestmark = pytest.mark.floor
GONE = 200  # streams opened and dropped at once: enough that some land inside prepare() on any machine


@pytest.fixture
async def console(floor_dsn: str) -> AsyncIterator[tuple[ConsoleServer, str, str]]:
    """The console served as `tablectl floor` serves it, and a supervisor's session cookie."""
    key = Ed25519PrivateKey.generate()
    config = parse_floor_config(f'[database]\ndsn = "{floor_dsn}"\n[console]\nlisten = "127.0.0.1:0"\n')
    with connect(config.database) as conn:
        migrate(conn)
    server = ConsoleServer(config)
    url = (await server.start()).rstrip("/")
    try:
        async with aiohttp.ClientSession() as http:
            h = {"Origin": url}
            await http.post(url + "/api/enrol", json={"key_id": "sup", "role": "supervisor",
                            "public_key": public_key_b64(key)}, headers=h)  # fmt: skip
            with psycopg.connect(floor_dsn) as c:
                c.execute("UPDATE console_keys SET approved_at = now() WHERE key_id = 'sup'")
            async with http.post(url + "/api/login/challenge", json={"key_id": "sup"}, headers=h) as r:
                challenge = (await r.json())["challenge"]
            sig = base64.b64encode(key.sign(login_bytes(challenge, "sup", url))).decode()
            body = {"key_id": "sup", "challenge": challenge, "signature": sig}
            async with http.post(url + "/api/login", json=body, headers=h) as r:
                assert r.status == 200, await r.text()
                cookie = f"{COOKIE}={r.cookies[COOKIE].value}"
        yield server, url, cookie
    finally:
        await server.stop()


async def _open_and_leave(port: int, cookie: str, reset: bool) -> None:
    sock = socket.socket()
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    if reset:  # close with an RST, as a browser's abort may: the server's next write fails at once
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    await asyncio.get_running_loop().sock_sendall(
        sock, f"GET /api/stream HTTP/1.1\r\nHost: x\r\nCookie: {cookie}\r\n\r\n".encode()
    )
    sock.close()


async def test_a_stream_whose_browser_left_during_prepare_is_closed_quietly(
    console: tuple[ConsoleServer, str, str], caplog: pytest.LogCaptureFixture
) -> None:
    server, url, cookie = console
    port = int(url.rsplit(":", 1)[1])
    caplog.set_level(logging.DEBUG)
    with structlog.testing.capture_logs() as logged:
        for i in range(GONE):
            await _open_and_leave(port, cookie, reset=i % 2 == 1)
            await asyncio.sleep(0)  # let the server take each in turn, as browsers arriving apart would come
        # Every stream's handler has ended (its place in the session's limit freed) before looking at the logs.
        # The server's state signals nothing a test could await: polled (conftest's wait_for) off the event loop.
        ended = lambda: not server.streams and not server.stream_limits.open  # noqa: E731
        await asyncio.to_thread(wait_for, ended, 30, "every dropped stream's handler ended")
        async with aiohttp.ClientSession() as http, http.get(url + "/api/session", headers={"Cookie": cookie}) as r:
            assert r.status == 200 and (await r.json())["logged_in"] is True  # still serving
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [(r.name, r.getMessage(), r.exc_info) for r in errors]
    assert [e for e in logged if e["log_level"] in ("error", "critical", "exception")] == []
    gone = [e for e in logged if e["event"] == "console stream closed: the browser went away"]
    # Some closes land before the handler runs (aiohttp drops the request itself); those that reach prepare() or the
    # first frame are each noted once, naming the session's key.
    assert gone and all(e["key_id"] == "sup" and e["log_level"] == "info" for e in gone), gone
