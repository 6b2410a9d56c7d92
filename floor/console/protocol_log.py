"""The console's log of what aiohttp's HTTP protocol refuses (ConsoleProtocol's logger, floor/console/plumbing.py): a
request that is not HTTP it can parse is the client's fault, one line naming the problem and the client's address,
never the client's bytes nor a traceback."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import structlog
from aiohttp.http_exceptions import HttpProcessingError

from floor.console.wire import problem_in

log = structlog.get_logger("tablectl.console")


class ProtocolLog(logging.LoggerAdapter[logging.Logger]):
    """aiohttp's server logger for the console: a request that is not HTTP it can parse (a Content-Length that is not
    a number, a header line past 8190 bytes, bytes after `Connection: close`) is the client's fault, answered with a
    400 naming it; it is noted at info, not as an error with a traceback (at debug where aiohttp chose debug: non-HTTP
    bytes as a connection's first request, a scanner's or TLS sent to plain HTTP). The line says what was wrong as
    the 400 says it (wire.problem_in) and aiohttp's kind of error, never the client's bytes: aiohttp's own message and
    traceback quote them (escaped, but whatever a client chose to put in the floor's log, up to 8190 bytes a line).
    Anything else goes on as aiohttp logs it."""

    def __init__(self) -> None:
        super().__init__(logging.getLogger("aiohttp.server"), {})

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kw: Any) -> None:
        if not _refused(exc_info, args, log.info, kw.get("extra")):
            super().exception(msg, *args, exc_info=exc_info, **kw)

    def debug(self, msg: object, *args: object, **kw: Any) -> None:
        if not _refused(kw.get("exc_info"), args, log.debug):
            super().debug(msg, *args, **kw)


def client_host(peername: object) -> str | None:
    """The client's address from its connection's peername, as aiohttp's `request.remote` words it."""
    if isinstance(peername, (list, tuple)):
        return str(peername[0]) if peername else None
    return None if peername is None else str(peername)


def _refused(
    error: object, args: tuple[object, ...], say: Callable[..., object], extra: Mapping[str, object] | None = None
) -> bool:
    """Said (`say`) when `error` is the client's fault (a 4xx of aiohttp's parser); `args` are aiohttp's format
    arguments, the client's address first when aiohttp has it, else ConsoleProtocol gives it in `extra`."""
    if not isinstance(error, HttpProcessingError) or not 400 <= (error.code or 0) < 500:
        return False
    client = args[0] if args and isinstance(args[0], str) else (extra or {}).get("client")
    say(
        "console refused a malformed request",
        problem=problem_in(error),
        error=type(error).__name__,
        status=error.code,
        client=client,
    )
    return True
