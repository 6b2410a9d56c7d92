"""Every route of the console under bad requests, on real sockets against a real `tablectl floor` (its console on
loopback, a real PostgreSQL cluster, a real mosquitto): wrong methods, garbled paths and queries, bodies that are not
JSON or are JSON no reader should take, a Content-Length that lies, requests sent by halves, many connections at once.
Each gets a 4xx whose body names the problem (JSON from the console, text from aiohttp's parser), the floor logs no
error and no traceback, and the next request is answered. Hypothesis generates the bodies and path segments.

The event stream's reader that never reads is driven against the console served in this process (real sockets, the
same aiohttp options as `tablectl floor`), where the test can fill the stream as fast as a busy floor would."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import select
import socket
import ssl
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp.test_utils import TestClient, TestServer
from aiohttp.web_protocol import RequestHandler
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.supervisor.envelope import public_key_b64
from floor.config import parse_floor_config
from floor.console.auth import login_bytes
from floor.console.plumbing import CSP, MAX_BODY, SECURITY_HEADERS, ConsoleProtocol
from floor.console.server import ConsoleServer
from floor.console.session_ack import ACK_PATH
from floor.db import connect
from floor.pgcluster import PgCluster
from floor.schema import migrate
from tests.broker import Mosquitto
from tests.floor.chromium import chromium, page_errors
from tests.floor.conftest import wait_for
from tests.floor.console_requests import (
    BAD_BODIES,
    FIX,
    PIPELINED,
    RELAY,
    TIMEOUT_S,
    Console,
    answers_good_then_refuses_bad,
    bad_chunk_after_the_answer,
    floor_console,
)
from tests.floor.selfsigned import self_signed

# One worker runs the module: its tests share one console on a floor (the module fixture), made once.
pytestmark = [pytest.mark.floor, pytest.mark.xdist_group("console_bad_requests")]


@pytest.fixture(scope="module")
def console(pg_cluster: PgCluster, mosquitto: Mosquitto, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    with floor_console(pg_cluster, mosquitto, tmp_path_factory.mktemp("bad-requests")) as c:
        yield c


@pytest.mark.parametrize(("what", "body", "status", "problem"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
@pytest.mark.parametrize(
    "path", ["/api/enrol", "/api/login/challenge", "/api/login", "/api/logout", RELAY, "/api/floor/session/acknowledge"]
)
def test_every_post_refuses_a_body_no_reader_should_take_naming_it(
    console: Console, path: str, what: str, body: bytes, status: int, problem: str
) -> None:
    r = console.post(path, body)
    assert (r.status, problem in r.error(), FIX in r.error()) == (status, True, True), (r, what)
    assert r.headers["cache-control"] == "no-store" and r.headers["content-security-policy"] == CSP
    console.still_serves()


@pytest.mark.parametrize(
    ("path", "body", "status", "problem"),
    [
        # Values PostgreSQL cannot hold: a NUL, a lone surrogate (each was a 500 from psycopg).
        (
            "/api/login",
            b'{"key_id": "sup\\u0000", "challenge": "c", "signature": "s"}',
            403,
            "the challenge is unknown",
        ),
        ("/api/login", b'{"key_id": "\\ud800", "challenge": "c", "signature": "s"}', 403, "the challenge is unknown"),
        ("/api/login/challenge", b'{"key_id": "a\\u0000"}', 400, "give key_id: the key id this browser enrolled (1"),
        ("/api/login/challenge", b'{"key_id": "x"}', 415, "send the body as application/json"),
        ("/api/tables/t1/commands/a%00", b'{"command_id": "\\u0000"}', 400, "there is no table verb 'a\\x00'"),
        (RELAY, b'{"command_id": "\\u0000", "key_id": "\\udfff"}', 403, "signed as '\\udfff'"),
        ("/api/links/l%00/commands/clear_tilt", b'{"key_id": "sup"}', 400, "table_id and verb must be those"),
        ("/api/enrol", b'{"key_id": "a\\u0000", "role": "boss", "public_key": "\\ud800"}', 400, "not usable: key_id"),
        ("/api/floor/session/acknowledge", b'{"since": "\\u0000\\ud800"}', 409, "no lost-session alert is showing"),
    ],
)
def test_text_postgresql_cannot_hold_is_refused_and_the_refusal_recorded(
    console: Console, path: str, body: bytes, status: int, problem: str
) -> None:
    ctype = "text/plain" if status == 415 else "application/json"
    r = console.post(path, body, headers={"Content-Type": ctype})
    assert r.status == status and problem in r.error(), r
    console.still_serves()


@pytest.mark.parametrize(
    ("method", "path", "status", "problem"),
    [
        ("GET", "/api/tables/nowhere", 404, "no table 'nowhere' on this floor"),
        ("GET", "/api/tables/..", 404, "no table '..' on this floor"),
        ("GET", "/api/tables/%2e%2e%2f%2e%2e", 404, "no table '../..' on this floor"),
        ("GET", "/api/rounds/r%00", 404, "round 'r\\x00' is not in the archive"),
        ("GET", "/api/rounds/%ed%a0%80", 404, "is not in the archive"),
        ("GET", "/api/rounds/" + "9" * 4000, 404, "is not in the archive"),
        ("GET", "/static/..%2fserver.py", 404, "no file '../server.py' in the console"),
        ("GET", "/static/index.html", 404, "no file 'index.html' in the console"),
        ("GET", "/api/floor/extra", 404, "nothing at /api/floor/extra"),
        ("DELETE", "/api/floor", 405, "DELETE is not allowed on /api/floor"),
        ("PUT", RELAY, 405, f"PUT is not allowed on {RELAY}"),
        ("OPTIONS", "/api/stream", 405, "OPTIONS is not allowed on /api/stream"),
        ("GET", "/api/login", 405, "GET is not allowed on /api/login"),
        ("POST", "/api/floor", 405, "POST is not allowed on /api/floor"),
    ],
)
def test_paths_and_methods_no_route_serves_get_a_4xx_naming_them(
    console: Console, method: str, path: str, status: int, problem: str
) -> None:
    r = console.request(method, path, auth=True)
    assert r.status == status and problem in r.error(), r
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers.get("cache-control") == ("no-store" if path.startswith("/api/") else None)
    console.still_serves()


@pytest.mark.parametrize(
    ("head", "problem"),
    [
        (b"POST /api/enrol HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", "Invalid character in Content-Length"),
        (b"POST /api/enrol HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", "Content-Length"),
        (b"GET /api/floor HTTP/1.1\r\nHost: x\r\nCookie: a=\xff\x00\r\n\r\n", "Invalid header value char"),
        (b"GET /api/floor HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 9000 + b"\r\n\r\n", "Got more than 8190 bytes"),
        (b"GET /static/" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n", "Got more than 8190 bytes"),
        (b"GET /api/floor HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\ntrailing", "Data after `Connection: close`"),
        (b"HELLO THERE\r\n\r\n", "Invalid method encountered"),
        (b"GET /api/floor HTTP/9.Z\r\nHost: x\r\n\r\n", "Bad status line"),
        (b"POST /api/enrol HTTP/1.1\r\nHost: x\r\nContent-Length: 12ab\r\n\r\n", "Invalid character in Content-Length"),
        (
            b"POST /api/enrol HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
            "chunk size",
        ),
        (
            b"POST /api/enrol HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}}}\r\n0\r\n\r\n",
            "after chunk",
        ),
    ],
    ids=[
        "negative-length",
        "huge-length",
        "header-char",
        "long-header",
        "long-path",
        "data-after-close",
        "request-line",
        "http-version",
        "length-not-a-number",
        "chunk-size-not-hex",
        "chunk-longer-than-its-size",
    ],
)
def test_what_is_not_http_gets_a_400_naming_it_and_no_error_in_the_log(
    console: Console, head: bytes, problem: str
) -> None:
    """aiohttp's parser answers these itself, before any route, middleware or on_response_prepare (text, not the
    console's JSON), and logged each as an error with a traceback: the client's fault is logged at info (test
    fixture: no error lines at the end). Its answer said `Server: Python/3.x aiohttp/3.x` and carried none of the
    console's headers: ConsoleProtocol gives it the console's (docs/console.md, "Threat model"), names the problem
    as aiohttp words it and the fix, and echoes none of the client's bytes. The next request is served."""
    r = console.send(head)  # read until the server closes: aiohttp closes the connection after such an answer
    text = r.body.decode()
    assert r.status == 400 and problem in text, r
    assert text.startswith("400 Bad Request: ") and "send one HTTP/1.1 request" in text, r
    assert text.isascii() and "b'" not in text and len(r.body) < 400 and text.endswith("\n"), r
    assert r.headers["content-type"] == "text/plain; charset=utf-8", r.headers
    assert r.headers["server"] == "tablectl-console", r.headers
    assert r.headers["cache-control"] == "no-store", r.headers
    for name, value in SECURITY_HEADERS.items():
        assert r.headers[name.lower()] == value, (name, r.headers)
    assert "strict-transport-security" not in r.headers  # plain HTTP here: HSTS only once the console serves TLS
    console.still_serves()
    assert console.errors_logged() == []


def test_a_body_shorter_than_its_length_gets_a_408_and_the_connection_back(console: Console) -> None:
    r = console.post("/api/login", b'{"key_id": "sup"}', headers={"Content-Length": "100"})
    assert r.status == 408 and f"the body did not arrive within {TIMEOUT_S} s" in r.error(), r
    assert "Content-Length equal to its bytes" in r.error()
    console.still_serves()


def test_a_chunked_body_with_no_length_is_read_and_a_huge_one_refused(console: Console) -> None:
    h = {"Origin": console.origin, "Content-Type": "application/json", "Transfer-Encoding": "chunked"}
    r = console.request("POST", "/api/login/challenge", b'11\r\n{"key_id": "sup"}\r\n0\r\n\r\n', h)
    assert r.status == 200 and json.loads(r.body)["challenge"], r
    big = b"".join(b"8000\r\n" + b" " * 0x8000 + b"\r\n" for _ in range(3)) + b"0\r\n\r\n"
    r = console.request("POST", "/api/login/challenge", big, h)
    assert r.status == 413 and f"larger than {MAX_BODY} bytes" in r.error(), r


def test_half_sent_requests_and_many_connections_are_dropped_in_time_and_others_served(console: Console) -> None:
    """A request whose headers never end (slowloris) held its connection for aiohttp's hour of keep-alive: each is
    closed after request_timeout_s, while others keep being answered."""
    held = []
    for i in range(200):
        s = socket.create_connection(("127.0.0.1", console.port), timeout=30)
        s.sendall(b"GET /api/session HTTP/1.1\r\nHost: x\r\n" if i % 2 else b"")
        held.append(s)
    try:
        console.still_serves()
        for s in held:
            assert s.recv(1) == b""  # closed by the server (the socket's own timeout, 30 s, would raise)
    finally:
        for s in held:
            s.close()
    console.still_serves()


JSON_LEAF = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
JSON = st.recursive(JSON_LEAF, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=20)
FIELDS = st.sampled_from(
    ["key_id", "challenge", "signature", "role", "public_key", "command_id", "table_id", "verb", "since"]
)
BODIES = st.one_of(
    st.dictionaries(FIELDS, JSON).map(lambda d: json.dumps(d).encode()),  # well-formed, wrong types and values
    st.dictionaries(FIELDS, st.text()).map(lambda d: json.dumps(d).encode()),  # strings with NULs and surrogates
    st.binary(max_size=200),  # not JSON
    st.integers(1, 3000).map(lambda n: b'{"a": ' + b"[" * n + b"]" * n + b"}"),  # nested
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=BODIES, path=st.sampled_from(["/api/enrol", "/api/login/challenge", "/api/login", RELAY, ACK_PATH]))
def test_any_body_gets_an_answer_naming_its_problem_never_a_500(console: Console, body: bytes, path: str) -> None:
    r = console.post(path, body)
    assert r.status in (200, 400, 403, 409, 413), r
    if r.status != 200:
        assert r.error(), r
    assert console.errors_logged() == []


SEGMENT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=60) | st.sampled_from(
    ["..", ".", "%00", "%ff", "%2e%2e", "\u0661\u0662", "-1", "9" * 3000, "%", "a%2fb"]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    segment=SEGMENT,
    route=st.sampled_from(["/api/tables/{}", "/api/rounds/{}", "/static/{}", "/api/session?{}"]),
    query=st.lists(st.tuples(st.text(max_size=8), st.text(max_size=8)), max_size=4),
)
def test_any_path_segment_or_query_gets_a_404_or_its_page(
    console: Console, segment: str, route: str, query: list[tuple[str, str]]
) -> None:
    """No route reads a query: whatever one holds (repeated, empty, Unicode digits, garbled) changes nothing."""
    quoted = quote(segment, safe="%") if "%" in segment else quote(segment, safe="")
    q = "&".join(f"{quote(k)}={quote(v)}" for k, v in query)
    path = route.format(quoted) + (f"?{q}" if q and "?" not in route else "")
    r = console.request("GET", path, auth=True)
    expected = 200 if route.startswith("/api/session") or segment in ("console.js", "console.css") else 404
    assert r.status == expected, (path, r)
    if expected == 404:
        # The route's own word, or the router's for a segment it does not match (one with a brace, a slash).
        assert any(w in r.error() for w in ("not in the archive", "on this floor", "in the console", "nothing at /"))
    assert console.errors_logged() == []


def test_the_page_loads_under_its_headers_with_no_console_error(console: Console) -> None:
    """The security headers are those a console must send, and the page (its modules, style, icon, the API calls
    and event stream it opens) loads under them in headless Chromium with nothing refused."""
    page = console.request("GET", "/")
    api = console.request("GET", "/api/floor", auth=True)
    for r in (page, api):
        assert r.headers["content-security-policy"] == CSP
        assert "frame-ancestors 'none'" in CSP and r.headers["x-frame-options"] == "DENY"
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["referrer-policy"] == "no-referrer"
    assert page.headers["cache-control"] == "no-cache" and api.headers["cache-control"] == "no-store"
    with chromium("1200,800", {"browser": "ALL"}) as driver:
        driver.get(console.origin + "/")
        wait_for(lambda: driver.execute_script("return document.readyState") == "complete", 30, "the page")
        wait_for(lambda: bool(driver.execute_script("return !!document.querySelector('main, body *')")), 30, "drawn")
        assert page_errors(driver) == []


# -- the event stream's reader that never reads ---------------------------------------------------------------------


@pytest.fixture
async def served(floor_dsn: str) -> AsyncIterator[tuple[ConsoleServer, TestClient[Any, Any], str]]:
    """The console in this process on a real loopback socket, served with `tablectl floor`'s options, and a
    supervisor's session cookie."""
    key = Ed25519PrivateKey.generate()
    config = parse_floor_config(
        f'[database]\ndsn = "{floor_dsn}"\n[console]\nlisten = "127.0.0.1:0"\nrequest_timeout_s = {TIMEOUT_S}\n'
        f'[[console.supervisors]]\nkey_id = "sup"\nrole = "supervisor"\npublic_key = "{public_key_b64(key)}"\n'
    )
    with connect(config.database) as conn:
        migrate(conn)
    server = ConsoleServer(config)
    client = TestClient(TestServer(server.app(), **server.server_options()))
    await client.start_server()
    origin = f"http://{client.host}:{client.port}"
    try:
        c = await (await client.post("/api/login/challenge", json={"key_id": "sup"}, headers={"Origin": origin})).json()
        sig = base64.b64encode(key.sign(login_bytes(c["challenge"], "sup", origin))).decode()
        body = {"key_id": "sup", "challenge": c["challenge"], "signature": sig}
        r = await client.post("/api/login", json=body, headers={"Origin": origin})
        assert r.status == 200
        yield server, client, r.headers["Set-Cookie"].split(";")[0]
    finally:
        await client.close()


async def _never_reading_stream(port: int, cookie: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fills at once: the server's writes wait on it
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=1 << 20)
    writer.write(f"GET /api/stream HTTP/1.1\r\nHost: x\r\nCookie: {cookie}\r\n\r\n".encode())
    assert (await reader.readuntil(b"event: floor")).startswith(b"HTTP/1.1 200")
    return reader, writer


def _described(handler: RequestHandler) -> dict[str, object]:
    transport = handler.transport
    return {
        "peer": None if transport is None else transport.get_extra_info("peername"),
        "closing": None if transport is None else transport.is_closing(),
        "keepalive": handler._keepalive,
        "force_close": handler._force_close,
        "handler_task": repr(handler._task_handler),
    }


async def _until(predicate: Any, what: str) -> None:
    # The server's state signals nothing a test could await: polled (conftest's wait_for) off the event loop.
    await asyncio.to_thread(wait_for, predicate, 30, what)


async def test_a_stream_nobody_reads_is_dropped_and_its_queue_freed(
    served: tuple[ConsoleServer, TestClient[Any, Any], str],
) -> None:
    """A browser that stops reading: the server's writes wait on its full socket. Before, the handler waited there
    forever, its queue kept filling to 2000 updates and stayed referenced after the drop; now the write gives up after
    request_timeout_s, the connection is closed and nothing of the stream is kept."""
    server, client, cookie = served
    assert client.port is not None
    reader, writer = await _never_reading_stream(client.port, cookie)
    await _until(lambda: len(server.streams) == 1, "the stream registered")
    (queue,) = server.streams
    update = json.dumps({"lines": ["x" * 20_000]})
    sent = 0
    while server.streams and sent < 5000:  # megabytes: more than loopback's socket buffers hold
        server._broadcast("update", update)
        sent += 1
        await asyncio.sleep(0)
    await _until(lambda: not server.streams, f"the stream dropped (after {sent} updates)")
    assert queue.qsize() <= 1  # what it had not taken is not kept
    runner = client.server.runner
    assert runner is not None and runner.server is not None
    http = runner.server
    # Nothing read yet: the server gives up its write and closes the connection of itself (the client's log-in
    # connections close too, idle past request_timeout_s). Before, the handler waited on the write for ever.
    try:
        await _until(lambda: not http.connections, "every connection closed by the server")
    except AssertionError as err:
        # Seen once in CI under load (2026-11-27), not reproduced since: which connection stayed, and in what state.
        raise AssertionError(f"{err}; still open: {[_described(h) for h in http.connections]}") from None
    with pytest.raises((ConnectionResetError, asyncio.IncompleteReadError)):
        async with asyncio.timeout(30):
            while True:
                await reader.readexactly(65536)  # what was buffered, then the server's close
    writer.close()
    r = await client.get("/api/session")
    assert r.status == 200


async def test_a_stream_whose_queue_overflows_is_told_to_go_and_freed(
    served: tuple[ConsoleServer, TestClient[Any, Any], str],
) -> None:
    server, client, cookie = served
    assert client.port is not None
    reader, writer = await _never_reading_stream(client.port, cookie)
    await _until(lambda: len(server.streams) == 1, "the stream registered")
    (queue,) = server.streams
    for _ in range(2001):  # all at once, as one long archive batch's worth would: the queue's bound passed
        server._broadcast("update", "{}")
    assert not server.streams and queue.qsize() == 1  # only the word to go
    frames = await reader.readuntil(b"event: bye")
    assert frames.count(b"event: update") < 2001
    writer.close()


@pytest.mark.parametrize(
    ("method", "path", "auth", "status"),
    [
        ("GET", "/", False, 200),
        ("GET", "/static/console.js", False, 200),
        ("GET", "/api/floor", True, 200),
        ("GET", "/api/floor", False, 401),
        ("GET", "/api/nothing", True, 404),
        ("DELETE", "/api/floor", True, 405),
        ("POST", "/api/enrol", False, 415),
    ],
)
def test_the_server_header_names_no_version(console: Console, method: str, path: str, auth: bool, status: int) -> None:
    """Before, every response said `Server: Python/3.11 aiohttp/3.x`: a gaming network's scanner flags the versions."""
    r = console.request(method, path, auth=auth)
    assert r.status == status, r
    assert r.headers["server"] == "tablectl-console", r.headers
    assert r.headers["x-content-type-options"] == "nosniff"


async def test_under_tls_aiohttps_own_400s_carry_hsts_and_the_next_request_is_served(tmp_path: Path) -> None:
    """ConsoleServer.start() as `tablectl floor` runs it with TLS (its own socket, ConsoleProtocol, a real TLS
    handshake on loopback): a header past 8190 bytes gets the console's headers and HSTS, as the page does."""
    cert, key = self_signed(tmp_path)
    config = parse_floor_config(
        f'[database]\ndsn = "dbname=none"\n[console]\nlisten = "127.0.0.1:0"\ntls_cert = "{cert}"\ntls_key = "{key}"\n'
    )
    server = ConsoleServer(config)
    url = await server.start()
    assert url.startswith("https://127.0.0.1:"), url
    context = ssl.create_default_context(cafile=str(cert))

    def send(data: bytes) -> tuple[str, dict[str, str], str]:
        with (
            socket.create_connection(("127.0.0.1", int(url.rstrip("/").rsplit(":", 1)[1])), timeout=30) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as s,
        ):
            s.sendall(data)
            got = b""
            with contextlib.suppress(ssl.SSLEOFError):  # a peer that closes without TLS's close_notify
                while chunk := s.recv(65536):
                    got += chunk
        head, _, body = got.decode("latin-1").partition("\r\n\r\n")
        lines = head.split("\r\n")
        return lines[0], {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}, body

    try:
        bad = await asyncio.to_thread(send, b"GET /api/floor HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 9000 + b"\r\n\r\n")
        good = await asyncio.to_thread(send, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    finally:
        await server.stop()
    status, headers, body = bad
    assert " 400 " in status and body.startswith("400 Bad Request: Got more than 8190 bytes"), bad
    assert headers["strict-transport-security"] == "max-age=31536000", headers
    assert headers["server"] == "tablectl-console" and headers["cache-control"] == "no-store", headers
    assert headers["content-security-policy"] == CSP, headers
    status, headers, _ = good
    assert " 200 " in status and headers["strict-transport-security"] == "max-age=31536000", good


# -- bodies that go bad after their headers, and bodies past the limit sent slowly ----------------------------------


async def test_a_chunk_gone_bad_after_the_headers_gets_a_400_at_once_and_the_connection_closed() -> None:
    """Headers and a good first chunk in one send; once the handler is reading, a chunk size that is not hex in a
    second. aiohttp's C parser raises on it, queues its 400 for after the running handler and tells that handler's body
    nothing: the console answered a 408 after request_timeout_s, the handler having read the first chunk only, held the
    connection 10 s more (aiohttp's lingering) and never sent the 400. ConsoleProtocol hands the error to the body:
    a 400 naming it, with the console's headers and `no-store`, and the connection closed. Served by
    ConsoleServer.start() as `tablectl floor` serves it (its own socket and ConsoleProtocol); the body is refused
    before anything reads the database, so none is needed."""
    config = parse_floor_config(
        f'[database]\ndsn = "dbname=none"\n[console]\nlisten = "127.0.0.1:0"\nrequest_timeout_s = {TIMEOUT_S}\n'
    )
    server = ConsoleServer(config)
    url = (await server.start()).rstrip("/")
    port = int(url.rsplit(":", 1)[1])
    assert server.runner is not None and server.runner.server is not None
    http = server.runner.server
    head = (
        f"POST /api/login/challenge HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {url}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(head + b'2\r\n{"\r\n')
        await writer.drain()
        # The handler runs (watch_body has given the protocol its body) before the bad chunk is sent.
        await _until(
            lambda: any(isinstance(p, ConsoleProtocol) and p.body is not None for p in http.connections),
            "the handler reading the body",
        )
        writer.write(b"zz\r\n}\r\n0\r\n\r\n")
        await writer.drain()
        async with asyncio.timeout(30):
            got = await reader.read()  # until the server closes: within request_timeout_s it is the fix's doing
        writer.close()
        page = await asyncio.to_thread(urllib.request.urlopen, url + "/", None, 30)
        assert page.status == 200  # the next connection is served
    finally:
        await server.stop()
    head_text, _, body = got.partition(b"\r\n\r\n")
    lines = head_text.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert lines[0].split()[1] == "400", got
    error = json.loads(body)["error"]
    assert error.startswith("the body's transfer encoding is malformed (Invalid character in chunk size); "), error
    assert "its chunks each a hex size" in error and "zz" not in error, error
    assert headers["cache-control"] == "no-store" and headers["server"] == "tablectl-console", headers
    for name, value in SECURITY_HEADERS.items():
        assert headers[name.lower()] == value, (name, headers)
    assert got.count(b"HTTP/1.1 ") == 1, got  # aiohttp's queued 400 is not sent after it


def _rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1])


def test_a_body_past_the_limit_sent_slowly_is_refused_once_past_it_and_not_kept(console: Console) -> None:
    """A Content-Length of 256 MiB and the body sent 4 KiB at a time: the console answers 413 once it has read past
    MAX_BODY, not at the end, and what comes after is read and thrown away (aiohttp's lingering close), not kept: the
    floor's memory grows by far less than the 16 MiB sent after the answer."""
    assert console.floor.proc is not None
    pid = console.floor.proc.pid
    before = _rss_kib(pid)
    head = (
        f"POST /api/enrol HTTP/1.1\r\nHost: 127.0.0.1:{console.port}\r\nOrigin: {console.origin}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {256 << 20}\r\n\r\n"
    ).encode()
    piece = b" " * 4096
    with socket.create_connection(("127.0.0.1", console.port), timeout=30) as s:
        s.sendall(head)
        sent = 0
        # Sent a piece at a time, each after looking (10 ms at most) for the answer: a slow client's pace.
        while not select.select([s], [], [], 0.01)[0]:
            assert sent < 4 * MAX_BODY, f"no answer after {sent} bytes of the body"
            s.sendall(piece)
            sent += len(piece)
        answered_at = sent
        got = s.recv(65536)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for _ in range((16 << 20) // len(piece)):  # what a client that does not listen goes on sending
                s.sendall(piece)
        grown = _rss_kib(pid) - before
    assert got.startswith(b"HTTP/1.1 413 ") and f"larger than {MAX_BODY} bytes".encode() in got, got
    assert MAX_BODY <= answered_at <= 4 * MAX_BODY, answered_at
    assert grown < 4 * 1024, f"the floor grew by {grown} KiB while 16 MiB were sent after the 413"
    console.still_serves()


@pytest.mark.parametrize(("bad", "problem"), [(b, c) for b, c, _ in PIPELINED], ids=["header", "method", "version"])
def test_a_malformed_request_after_good_ones_on_one_connection_gets_a_400_after_their_answers(
    console: Console, bad: bytes, problem: str
) -> None:
    answers_good_then_refuses_bad(console, bad, problem)


def test_a_bad_chunk_after_the_answer_closes_the_connection_at_once(console: Console) -> None:
    bad_chunk_after_the_answer(console)
