"""What the floor's log says of a request aiohttp's parser refuses: what was wrong (as the 400 words it) and aiohttp's
kind of error, never the client's bytes. aiohttp's own line (`Error handling request from ...` with a traceback)
quoted them, escaped, whatever a client chose to put in the floor's log, up to a header line's 8190 bytes.

The console is served in this process (ConsoleServer.start(), as `tablectl floor` serves it: real loopback sockets,
its protocol and logger), so that both the console's structlog lines and aiohttp's stdlib logger are captured, at
debug too (aiohttp logs non-HTTP bytes as a connection's first request at debug)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest
from structlog.testing import capture_logs

from floor.config import parse_floor_config
from floor.console.server import ConsoleServer
from floor.db import connect
from floor.schema import migrate

# structlog_at_debug: aiohttp logs non-HTTP bytes at debug, and so does the console its line for them.
pytestmark = [pytest.mark.floor, pytest.mark.usefixtures("structlog_at_debug")]
MARK = b"SEKRIT"  # in every malformed request below: must appear in no log line, nor in the 400
MALFORMED = [
    # (the request, the problem the log names, aiohttp's kind of error, the level aiohttp chose)
    (b"GE\x01T-SEKRIT / HTTP/1.1\r\n\r\n", "Invalid method encountered", "BadHttpMethod", "debug"),
    (b"GET / HTTP/1.1\r\nCookie: SEKRIT=\xff\x00\r\n\r\n", "Invalid header value char", "BadHttpMessage", "info"),
    (b"GET / HTTP/9.SEKRIT\r\nHost: x\r\n\r\n", "Bad status line", "BadStatusLine", "info"),
    (b"POST / HTTP/1.1\r\nContent-Length: 12SEKRIT\r\n\r\n", "Invalid character in Content-Length", "BadHttpMessage",
     "info"),
    (b"GET /a\x7fSEKRIT HTTP/1.1\r\nHost: x\r\n\r\n", "Invalid char in url path", "InvalidURLError", "info"),
    (b"GET / HTTP/1.1\r\nHost: x\r\nX-SEKRIT\x01: a\r\n\r\n", "Invalid header token", "BadHttpMessage", "info"),
]  # fmt: skip


@pytest.fixture
async def console(floor_dsn: str) -> AsyncIterator[tuple[str, int]]:
    config = parse_floor_config(f'[database]\ndsn = "{floor_dsn}"\n[console]\nlisten = "127.0.0.1:0"\n')
    with connect(config.database) as conn:
        migrate(conn)
    server = ConsoleServer(config)
    url = await server.start()
    host, port = url.rsplit("/", 1)[0].split("//")[1].rsplit(":", 1)
    try:
        yield host, int(port)
    finally:
        await server.stop()


async def _send(host: str, port: int, data: bytes) -> bytes:
    """`data` on a connection of its own, and all the console answers until it closes it (it does after a 400)."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(data)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    return answer


@pytest.mark.parametrize(("data", "problem", "kind", "level"), MALFORMED, ids=[m[2] + "-" + m[3] for m in MALFORMED])
async def test_a_malformed_request_is_logged_naming_its_problem_without_the_clients_bytes(
    console: tuple[str, int], caplog: pytest.LogCaptureFixture, data: bytes, problem: str, kind: str, level: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="aiohttp")
    with capture_logs() as logs:
        answer = await _send(*console, data)
    assert answer.split(b" ", 2)[1] == b"400" and MARK not in answer, answer
    refused = [e for e in logs if e["event"] == "console refused a malformed request"]
    assert refused == [
        {
            "event": "console refused a malformed request",
            "log_level": level,
            "problem": problem,
            "error": kind,
            "status": 400,
            "client": "127.0.0.1",
        }
    ], logs
    # Nothing the console or aiohttp logged carries the client's bytes, escaped or not, nor a traceback.
    said = [repr(e) for e in logs] + [r.getMessage() + repr(r.exc_info) for r in caplog.records]
    assert not [line for line in said if "SEKRIT" in line], said
    assert not [r for r in caplog.records if r.exc_info is not None], caplog.records
