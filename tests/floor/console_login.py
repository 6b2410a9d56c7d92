"""The console for the browser tests: served on loopback from a thread of its own (Selenium blocks the test's), and a
session as a browser gets one: enrol a key, approve it as an administrator does, log in by signing the challenge."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.cookiejar import CookieJar
from typing import Any

import psycopg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.supervisor.envelope import public_key_b64
from floor.config import parse_floor_config
from floor.console.auth import login_bytes
from floor.console.plumbing import COOKIE
from floor.console.server import ConsoleServer
from floor.db import connect
from floor.schema import migrate


def log_in(origin: str, floor_dsn: str, key_id: str = "sup", role: str = "supervisor") -> str:
    """Enrol a key, approve it as an administrator does, log in by signing the challenge: the session's token."""
    key = Ed25519PrivateKey.generate()
    jar = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    def post(path: str, body: dict[str, str]) -> dict[str, Any]:
        req = urllib.request.Request(
            origin + path,
            data=json.dumps(body).encode(),
            headers={"Origin": origin, "Content-Type": "application/json"},
            method="POST",
        )
        with opener.open(req, timeout=30) as r:
            reply: dict[str, Any] = json.loads(r.read())
            return reply

    post("/api/enrol", {"key_id": key_id, "role": role, "public_key": public_key_b64(key)})
    with psycopg.connect(floor_dsn) as conn:
        conn.execute("UPDATE console_keys SET approved_at = now() WHERE key_id = %s", (key_id,))
    challenge = post("/api/login/challenge", {"key_id": key_id})["challenge"]
    signature = base64.b64encode(key.sign(login_bytes(challenge, key_id, origin))).decode()
    post("/api/login", {"key_id": key_id, "challenge": challenge, "signature": signature})
    [token] = [c.value for c in jar if c.name == COOKIE and c.value is not None]
    return token


def browser_logged_in(browser: Any, origin: str, floor_dsn: str) -> str:
    """A supervisor's session (log_in) handed to the browser: its cookie set for the console's origin before the page
    loads (not by visiting the origin first: a JSON page has no icon, and the browser's 404 for it would be a console
    error that is not the console's). The session's token."""
    token = log_in(origin, floor_dsn)
    browser.execute_cdp_cmd("Network.setCookie", {"name": COOKIE, "value": token, "url": origin + "/"})
    return token


def session_known(browser: Any) -> bool:
    """Whether the page has its session's answer (/api/session): before it the page says it is loading and offers
    neither log-in nor log-out (a log-out sent then would carry no CSRF token and be refused)."""
    from selenium.webdriver.common.by import By

    return bool(browser.find_element(By.ID, "whoami").get_attribute("data-session") == "known")


_LOOPS: dict[int, asyncio.AbstractEventLoop] = {}  # each console_in_thread server's loop, by id(server)


def in_console(server: ConsoleServer, call: Callable[[], object]) -> None:
    """Run `call` in the console's own loop (as the floor service feeds it, between requests) and wait for it."""

    async def run() -> None:
        call()

    asyncio.run_coroutine_threadsafe(run(), _LOOPS[id(server)]).result(30)


@contextmanager
def console_in_thread(floor_dsn: str, console: str = "") -> Iterator[tuple[ConsoleServer, str]]:
    """The console (its [console] section's extra lines in `console`) on a fresh loop in a thread of its own, on the
    host's clock (the service puts it on the database's): the server and its URL."""
    config = parse_floor_config(f'[database]\ndsn = "{floor_dsn}"\n[console]\nlisten = "127.0.0.1:0"\n{console}')
    with connect(config.database) as conn:
        migrate(conn)
    server = ConsoleServer(config)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="console", daemon=True)
    thread.start()
    _LOOPS[id(server)] = loop
    try:
        url = asyncio.run_coroutine_threadsafe(server.start(), loop).result(30)
        yield server, url.rstrip("/")
    finally:
        del _LOOPS[id(server)]
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()
