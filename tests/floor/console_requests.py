"""The console's bad-request stage (a real `tablectl floor` with its console on loopback) and the wire-level
requests shared by tests/floor/test_console_bad_requests.py (the C parser) and test_console_wire.py (the pure-Python
one)."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.supervisor.envelope import public_key_b64
from floor.console.auth import login_bytes
from floor.console.plumbing import MAX_BODY
from floor.pgcluster import PgCluster
from tests.broker import Mosquitto, free_port
from tests.floor.conftest import FloorProcess, console_port, floor_toml, wait_for
from tests.floor.console_probe import console_up

TIMEOUT_S = 1  # the console's request_timeout_s here: a stalled request is dropped within it


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def error(self) -> str:
        assert self.headers.get("content-type", "").startswith("application/json"), self
        return str(json.loads(self.body)["error"])


@dataclass
class Console:
    """The floor process, its console's address and a supervisor's session (cookie and CSRF token)."""

    floor: FloorProcess
    port: int
    cookie: str = ""
    csrf: str = ""

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def send(self, data: bytes, timeout: float = 30.0) -> Reply:
        """Bytes as sent on one connection, the response as parsed from what came back until the server closed."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            s.sendall(data)
            got = b""
            while chunk := s.recv(65536):
                got += chunk
        head, _, body = got.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        return Reply(int(lines[0].split()[1]), headers, body)

    def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None, auth: bool = False
    ) -> Reply:
        h = {"Host": f"127.0.0.1:{self.port}", "Connection": "close"}
        if auth:
            h |= {"Cookie": self.cookie, "X-CSRF-Token": self.csrf, "Origin": self.origin}
        h |= headers or {}
        if method == "POST" and "Transfer-Encoding" not in h:
            h.setdefault("Content-Length", str(len(body)))
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
        return self.send(head.encode("latin-1") + body)

    def post(self, path: str, body: bytes, auth: bool = True, headers: dict[str, str] | None = None) -> Reply:
        h = {"Origin": self.origin, "Content-Type": "application/json", **(headers or {})}
        return self.request("POST", path, body, h, auth=auth)

    def still_serves(self) -> None:
        r = self.request("GET", "/api/session", auth=True)
        assert r.status == 200 and json.loads(r.body)["logged_in"] is True, r

    def errors_logged(self) -> list[str]:
        return [
            line
            for line in self.floor.log().splitlines()
            if '"level": "error"' in line or '"level": "critical"' in line or "Traceback" in line
        ]


@contextlib.contextmanager
def floor_console(
    pg_cluster: PgCluster, mosquitto: Mosquitto, tmp: Path, env: dict[str, str] | None = None
) -> Iterator[Console]:
    """`tablectl floor` with its console on loopback (`env` added to its environment), a supervisor logged in; at
    the end, no error in its log."""
    key = Ed25519PrivateKey.generate()
    port = free_port()  # names this run's database, prefix and client; the console binds port 0 (console_port)
    extra = (
        # Hypothesis sends hundreds of refused log-ins from this one address: the per-client limit is not under test
        # here (test_console_limits.py).
        f'[console]\nlisten = "127.0.0.1:0"\nrequest_timeout_s = {TIMEOUT_S}\nattempts_per_minute = 100000\n'
        f'[[console.supervisors]]\nkey_id = "sup"\nrole = "supervisor"\npublic_key = "{public_key_b64(key)}"\n'
    )
    dsn = pg_cluster.create_database(f"bad_requests_{port}")
    config = tmp / "floor.toml"
    config.write_text(floor_toml(dsn, mosquitto.url, f"bad{port}", f"floor-bad{port}", extra))
    floor = FloorProcess(config, tmp, env)
    floor.start()
    try:
        c = Console(floor, console_port(floor))
        wait_for(lambda: console_up(c.origin), 60, f"the console:\n{floor.log()}")
        challenge = json.loads(c.post("/api/login/challenge", b'{"key_id": "sup"}', auth=False).body)["challenge"]
        sig = base64.b64encode(key.sign(login_bytes(challenge, "sup", c.origin))).decode()
        r = c.post(
            "/api/login", json.dumps({"key_id": "sup", "challenge": challenge, "signature": sig}).encode(), False
        )
        assert r.status == 200, r
        c.cookie = r.headers["set-cookie"].split(";")[0]
        c.csrf = json.loads(c.request("GET", "/api/session", auth=True).body)["csrf"]
        yield c
        assert c.errors_logged() == []
    finally:
        floor.stop()


RELAY = "/api/tables/t1/commands/clear_tilt"
FIX = "send one JSON object"
BAD_BODIES = [
    # (what, body, status, the problem as the error names it)
    ("deep", b"[" * 30_000, 400, "the body nests too deep to read"),
    ("deep-inside", b'{"key_id": ' + b"[" * 15_000 + b"]" * 15_000 + b"}", 400, "the body nests too deep"),
    ("digits", b'{"seat": ' + b"9" * 5000 + b"}", 400, "a number of 5000 digits; the console takes at most 30"),
    ("nan", b'{"amount": NaN}', 400, "NaN is not a JSON number"),
    ("infinity", b'{"amount": -Infinity}', 400, "-Infinity is not a JSON number"),
    ("twice", b'{"key_id": "sup", "key_id": "other"}', 400, "the key 'key_id' is given twice"),
    ("not-json", b"key_id=sup", 400, "the body is not JSON ("),
    ("latin-1", b'{"key_id": "\xe9"}', 400, "the body is not JSON ("),
    ("empty", b"", 400, "the body is not JSON ("),
    ("string", b'"sup"', 400, "the body is a JSON str, not an object"),
    ("huge", b'{"a": "' + b"x" * MAX_BODY + b'"}', 413, f"the body is larger than {MAX_BODY} bytes"),
]


# -- a malformed request pipelined after good ones on one keep-alive connection -------------------------------------


def replies(console: Console, data: bytes) -> list[Reply]:
    """Bytes sent on one connection, then every response read (each framed by its Content-Length) until the server
    closes it: the socket's timeout (30 s) fails the test if it never does."""
    got = b""
    with socket.create_connection(("127.0.0.1", console.port), timeout=30) as s:
        s.sendall(data)
        while chunk := s.recv(65536):
            got += chunk
    out = []
    while got:
        head, _, rest = got.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers["content-length"])
        out.append(Reply(int(lines[0].split()[1]), headers, rest[:length]))
        got = rest[length:]
    return out


PIPELINED = [
    (b"GET /api/floor HTTP/1.1\r\nHost: x\r\nX-A: \x01\r\n\r\n", "Invalid header value char", "Invalid HTTP header"),
    (b"HELLO THERE\r\n\r\n", "Invalid method encountered", "Bad HTTP method in status line"),
    (b"GET /api/floor HTTP/9.Z\r\nHost: x\r\n\r\n", "Bad status line", "Bad status line"),
]


def answers_good_then_refuses_bad(console: Console, bad: bytes, problem: str) -> None:
    """Two good requests and a malformed one in one send: aiohttp's parsers drop every request parsed in a feed that
    ends in an error, so the client got the 400 alone, its good requests unanswered. Each good one is answered, in
    order, then a 400 naming the problem, and the connection is closed."""
    good = f"GET /api/session HTTP/1.1\r\nHost: 127.0.0.1:{console.port}\r\nCookie: {console.cookie}\r\n\r\n".encode()
    rs = replies(console, good + good + bad)
    assert [r.status for r in rs] == [200, 200, 400], rs
    assert all(json.loads(r.body)["logged_in"] is True for r in rs[:2]), rs
    text = rs[2].body.decode()
    assert text.startswith(f"400 Bad Request: {problem}") and "send one HTTP/1.1 request" in text, rs[2]
    assert rs[2].headers["server"] == "tablectl-console" and rs[2].headers["cache-control"] == "no-store"
    console.still_serves()
    assert console.errors_logged() == []


def bad_chunk_after_the_answer(console: Console) -> None:
    """A chunked POST the console answers before reading its body (a 415: not JSON), then a chunk size that is not hex.
    aiohttp reads and discards an unread body after the answer, for up to its lingering 10 s: its C parser told that
    reading nothing of the bad chunk, so the connection stayed open the whole 10 s. The console ends the body there
    (its log says so) and the connection closes at once; the client has its answer, and no 400 follows it."""
    head = (
        f"POST /api/login/challenge HTTP/1.1\r\nHost: 127.0.0.1:{console.port}\r\nOrigin: {console.origin}\r\n"
        "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", console.port), timeout=30) as s:
        s.sendall(head + b'2\r\n{"\r\n')
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += s.recv(65536)
        s.sendall(b"zz\r\n}\r\n0\r\n\r\n")
        rest = b""
        while chunk := s.recv(65536):  # until the server closes (the socket's 30 s timeout fails the test)
            rest += chunk
    assert answer.startswith(b"HTTP/1.1 415 ") and b"HTTP/1.1 " not in rest, (answer, rest)
    ended = [
        line
        for line in console.floor.log().splitlines()
        if "console refused a malformed request body" in line and '"answered": true' in line
    ]
    assert ended and "Invalid character in chunk size" in ended[-1] and "zz" not in ended[-1], ended
    # Each refusal names who sent it: aiohttp's pure-Python parser also reports the bad chunk from its discarding of
    # the body, a report that carries no address (logged as `"client": null` before); the console takes it from the
    # connection, as for the body's own line.
    whole = "".join(p.read_text(errors="replace") for p in sorted(console.floor.logs.glob("floor-*.log")))
    said = [json.loads(line) for line in whole.splitlines() if line.startswith("{")]
    refused = [e for e in said if str(e.get("event")).startswith("console refused a malformed request")]
    assert refused and {e.get("client") for e in refused} == {"127.0.0.1"}, refused
    console.still_serves()
    assert console.errors_logged() == []
