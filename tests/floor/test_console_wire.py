"""The console's bad-request handling under aiohttp's pure-Python parser: a real `tablectl floor` started with
AIOHTTP_NO_EXTENSIONS=1 (what a platform without aiohttp's C parser runs), its console on loopback, a real PostgreSQL
and mosquitto. tests/floor/test_console_bad_requests.py holds the same checks under the C parser; the two parsers word
some problems differently (each test names both), and the pure one worded a chunk size that is not hex with the
client's bytes alone, which the console sent back (floor/console/wire.py names it as the C parser does now).

The wordings differ by parser, so these tests also show the floor really ran the pure-Python one."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from floor.console.plumbing import SECURITY_HEADERS
from floor.pgcluster import PgCluster
from tests.broker import Mosquitto
from tests.floor.conftest import wait_for
from tests.floor.console_requests import (
    BAD_BODIES,
    FIX,
    PIPELINED,
    RELAY,
    Console,
    answers_good_then_refuses_bad,
    bad_chunk_after_the_answer,
    floor_console,
    replies,
)

# One worker runs the module: its tests share one console on a floor (the module fixture), made once.
pytestmark = [pytest.mark.floor, pytest.mark.xdist_group("console_wire")]


@pytest.fixture(scope="module")
def console(pg_cluster: PgCluster, mosquitto: Mosquitto, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    tmp = tmp_path_factory.mktemp("pure-parser")
    with floor_console(pg_cluster, mosquitto, tmp, {"AIOHTTP_NO_EXTENSIONS": "1"}) as c:
        yield c


POST = b"POST /api/enrol HTTP/1.1\r\nHost: x\r\n"
CHUNKED = POST + b"Transfer-Encoding: chunked\r\n\r\n"
NOT_HTTP = [
    # (what, bytes, the problem as the pure-Python parser words it; the C parser's in test_console_bad_requests.py)
    ("negative-length", POST + b"Content-Length: -1\r\n\r\n", "Invalid HTTP header"),
    ("length-not-a-number", POST + b"Content-Length: 12ab\r\n\r\n", "Invalid HTTP header"),
    ("header-char", b"GET /api/floor HTTP/1.1\r\nHost: x\r\nCookie: a=\xff\x00\r\n\r\n", "Invalid HTTP header"),
    ("long-header", b"GET /api/floor HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 9000 + b"\r\n\r\n", "Got more than 8190"),
    ("long-path", b"GET /static/" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n", "Got more than 8190 bytes"),
    ("request-line", b"HELLO THERE\r\n\r\n", "Bad HTTP method in status line"),
    ("http-version", b"GET /api/floor HTTP/9.Z\r\nHost: x\r\n\r\n", "Bad status line"),
    # Worded `zz` alone before: the client's bytes, sent back.
    ("chunk-size-not-hex", CHUNKED + b"zz\r\n{}\r\n0\r\n\r\n", "Invalid character in chunk size"),
    ("chunk-longer-than-its-size", CHUNKED + b"2\r\n{}}}\r\n0\r\n\r\n", "Chunk size mismatch"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "head", "problem"), NOT_HTTP, ids=[n[0] for n in NOT_HTTP])
def test_what_is_not_http_gets_a_400_naming_it_under_the_pure_parser(
    console: Console, what: str, head: bytes, problem: str
) -> None:
    r = console.send(head)
    text = r.body.decode()
    assert r.status == 400 and text.startswith(f"400 Bad Request: {problem}"), (what, r)
    assert "send one HTTP/1.1 request" in text and text.isascii() and "zz" not in text and "b'" not in text, r
    assert r.headers["server"] == "tablectl-console" and r.headers["cache-control"] == "no-store", r.headers
    for name, value in SECURITY_HEADERS.items():
        assert r.headers[name.lower()] == value, (name, r.headers)
    console.still_serves()


def test_data_after_connection_close_is_not_read_under_the_pure_parser(console: Console) -> None:
    """The C parser refuses the request whole (400, `Data after Connection: close`); the pure one answers it and
    reads nothing after: one answer, the connection closed."""
    rs = replies(console, b"GET /api/floor HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\ntrailing")
    assert [r.status for r in rs] == [401] and "not logged in" in rs[0].error(), rs


@pytest.mark.parametrize(("what", "body", "status", "problem"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_a_body_no_reader_should_take_is_refused_naming_it_under_the_pure_parser(
    console: Console, what: str, body: bytes, status: int, problem: str
) -> None:
    r = console.post(RELAY, body)
    assert (r.status, problem in r.error(), FIX in r.error()) == (status, True, True), (r, what)


def test_a_chunk_gone_bad_after_the_headers_gets_a_400_at_once_under_the_pure_parser(console: Console) -> None:
    """Headers and a good first chunk, then a chunk size that is not hex in a later send: a 400 at once (not a 408
    after request_timeout_s) naming it as the C parser does, never with the client's bytes; the connection closed.
    Whether the second send reaches the parser before or after the handler starts reading is the kernel's timing:
    aiohttp's protocol answers the first case, the console's body reader the second; both are held to the same."""
    head = (
        f"POST /api/login/challenge HTTP/1.1\r\nHost: 127.0.0.1:{console.port}\r\nOrigin: {console.origin}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", console.port), timeout=30) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(head + b'2\r\n{"\r\n')
        s.sendall(b"zz\r\n}\r\n0\r\n\r\n")
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    # aiohttp's protocol answers a request it could not parse as HTTP/1.0, the application as HTTP/1.1.
    assert got.startswith((b"HTTP/1.1 400 ", b"HTTP/1.0 400 ")) and b"\r\nHTTP/1." not in got, got  # one answer
    body = got.partition(b"\r\n\r\n")[2].decode()
    assert "Invalid character in chunk size" in body and "zz" not in body, body
    if body.startswith("{"):  # the body reader's answer, through the application
        assert json.loads(body)["error"].startswith("the body's transfer encoding is malformed (Invalid character")
    console.still_serves()


@pytest.mark.parametrize(("bad", "problem"), [(b, p) for b, _, p in PIPELINED], ids=["header", "method", "version"])
def test_a_malformed_request_after_good_ones_gets_a_400_after_their_answers_under_the_pure_parser(
    console: Console, bad: bytes, problem: str
) -> None:
    answers_good_then_refuses_bad(console, bad, problem)


def test_a_bad_chunk_after_the_answer_closes_the_connection_at_once_under_the_pure_parser(console: Console) -> None:
    bad_chunk_after_the_answer(console)


# (a request with the client's bytes SEKRIT in it, the problem the pure-Python parser words without them)
MARKED = [
    (b"GET / HTTP/1.1\r\nHost: x\r\nCookie: SEKRIT=\xff\x00\r\n\r\n", "Invalid HTTP header"),
    (b"GET / HTTP/9.SEKRIT\r\nHost: x\r\n\r\n", "Bad status line"),
    (b"GET /a\x7fSEKRIT HTTP/1.1\r\nHost: x\r\n\r\n", "Invalid URL"),  # worded with the path alone by aiohttp
    (b"GET / HTTP/1.1\r\nHost: x\r\nX-SEKRIT\x01: a\r\n\r\n", "Invalid HTTP header"),
]


def test_the_floors_log_of_a_malformed_request_names_its_problem_without_the_clients_bytes_under_the_pure_parser(
    console: Console,
) -> None:
    """The real process's log (JSON lines at info), as an operator reads it: tests/floor/test_console_refusal_log.py
    holds the same under the C parser, with aiohttp's own logger captured at debug too."""

    def whole_log() -> str:  # log() keeps each boot's tail only
        return "".join(p.read_text(errors="replace") for p in sorted(console.floor.logs.glob("floor-*.log")))

    def refused() -> list[dict[str, object]]:
        lines = [json.loads(line) for line in whole_log().splitlines() if line.startswith("{")]
        return [e for e in lines if e.get("event") == "console refused a malformed request"]

    before = len(refused())
    for data, problem in MARKED:
        r = console.send(data)
        assert r.status == 400 and r.body.decode().startswith(f"400 Bad Request: {problem}"), r
    wait_for(lambda: len(refused()) == before + len(MARKED), 30, "the refusals in the floor's log")
    said = refused()[before:]
    assert [(e["problem"], e["status"], e["client"]) for e in said] == [(p, 400, "127.0.0.1") for _, p in MARKED]
    assert "SEKRIT" not in whole_log()
