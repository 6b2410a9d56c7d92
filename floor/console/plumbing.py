"""The console's HTTP plumbing, apart from what it serves: its socket and aiohttp protocol, the security headers and
content security policy on every response (aiohttp's own errors too), errors as JSON that say what to fix, the checks a
POST passes before it is read (content type, Origin, size: docs/console.md, CSRF), the session cookie, server-sent
event frames and the shipped static files. Knows nothing of the floor: server.py and login.py build on it."""

from __future__ import annotations

import asyncio
import errno
import json
import math
import ssl
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import datetime
from http import HTTPStatus
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import structlog
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import _ErrInfo

from controller.core import strictjson
from floor.console.auth import Session, Sessions
from floor.console.protocol_log import client_host
from floor.console.wire import problem_in, requests_apart

log = structlog.get_logger("tablectl.console")

COOKIE = "tablectl_console"
MAX_BODY = 32 * 1024  # an envelope is a few hundred bytes; an enrolment less
MAX_DIGITS = 30
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), usb=(), serial=()",
}
# What the console says it is: aiohttp would send `Python/3.x aiohttp/3.x`, versions a scanner on the gaming network
# flags (and an attacker looks up). aiohttp sets its own only where a response has none (web_response.py).
SERVER = "tablectl-console"
STATIC_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def http_error(status: int, message: str, headers: dict[str, str] | None = None) -> web.HTTPException:
    classes: dict[int, type[web.HTTPException]] = {
        400: web.HTTPBadRequest,
        401: web.HTTPUnauthorized,
        403: web.HTTPForbidden,
        404: web.HTTPNotFound,
        408: web.HTTPRequestTimeout,
        409: web.HTTPConflict,
        413: web.HTTPRequestEntityTooLarge,
        415: web.HTTPUnsupportedMediaType,
        429: web.HTTPTooManyRequests,
        502: web.HTTPBadGateway,
        503: web.HTTPServiceUnavailable,
        504: web.HTTPGatewayTimeout,
    }
    cls = classes.get(status, web.HTTPBadRequest)
    body = json.dumps({"error": message})
    if cls is web.HTTPRequestEntityTooLarge:
        return web.HTTPRequestEntityTooLarge(MAX_BODY, 0, text=body, content_type="application/json")
    return cls(text=body, content_type="application/json", headers=headers)


def sse_frame(name: str, data: str) -> bytes:
    return f"event: {name}\ndata: {data}\n\n".encode()


def static_files() -> dict[str, bytes]:
    root = resources.files("floor.console") / "static"
    out = {}
    for entry in root.iterdir():
        if entry.is_file() and Path(entry.name).suffix in STATIC_TYPES:
            out[entry.name] = entry.read_bytes()
    return out


def static_response(static: dict[str, bytes], name: str) -> web.Response:
    """One of the console's files (static_files()); revalidated at each load, so a new release is picked up."""
    ctype = STATIC_TYPES[Path(name).suffix]
    return web.Response(body=static[name], content_type=ctype, charset="utf-8", headers={"Cache-Control": "no-cache"})


def origin(request: web.Request) -> str:
    return f"{request.scheme}://{request.host}"


def check_post(request: web.Request) -> None:
    """The checks that make a cross-site POST fail before anything else is looked at (docs/console.md, CSRF)."""
    if request.content_type != "application/json":
        raise http_error(415, f"send the body as application/json (it came as {request.content_type})")
    sent = request.headers.get("Origin")
    if sent != origin(request):
        raise http_error(403, f"the request's Origin {sent!r} is not this console's ({origin(request)})")


async def read_json(request: web.Request, within: float) -> tuple[bytes, dict[str, Any]]:
    """A POST's body as sent (the command relay passes a signed envelope on byte for byte) and the JSON object it
    holds; the one reader of every body, so every endpoint words a bad one alike. Strict JSON: no NaN or Infinity
    (the tables' canonical form has none) and no key twice (one reader taking the first, another the last, would
    judge different envelopes); a body that does not arrive whole within `within` seconds (a Content-Length that
    lies, a client that stalls) is refused rather than held open."""
    fix = "send one JSON object (a signed envelope, a log-in or an enrolment)"
    try:
        async with asyncio.timeout(within):
            raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise http_error(413, f"the body is larger than {MAX_BODY} bytes; {fix}, a few hundred bytes") from None
    except (web.RequestPayloadError, HttpProcessingError) as err:  # ConsoleProtocol's, or aiohttp's Python parser's
        raise http_error(
            400,
            # As the C parser names it (the pure-Python parser may word it with the client's bytes alone: wire.py).
            f"the body's transfer encoding is malformed ({problem_in(err, body=True)}); "
            f"{fix}, its chunks each a hex size, "
            "CRLF, that many bytes and CRLF, or a Content-Length",
            {"Connection": "close"},
        ) from None
    except TimeoutError:
        raise http_error(
            408, f"the body did not arrive within {within:g} s; {fix} with a Content-Length equal to its bytes"
        ) from None
    try:
        obj = strictjson.loads(raw, max_digits=MAX_DIGITS, reader="the console")
    except RecursionError:
        raise http_error(400, f"the body nests too deep to read (an envelope nests three levels); {fix}") from None
    except (UnicodeDecodeError, ValueError) as err:  # JSONDecodeError and the hooks' refusals
        raise http_error(400, f"the body is not JSON ({err}); {fix}") from None
    if not isinstance(obj, dict):
        raise http_error(400, f"the body is a JSON {type(obj).__name__}, not an object; {fix}")
    return raw, obj


def storable(text: str) -> str:
    """`text` as a PostgreSQL text column takes it: no NUL (PostgreSQL refuses one) and no lone surrogate (UTF-8 has
    none; JSON's \\ud800 makes one). The audit records what a client sent, whatever it was, rather than fail on it."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


def storable_json(value: Any) -> Any:
    """A JSON value as PostgreSQL's jsonb takes it: every string (keys too) through storable() (jsonb refuses \\u0000
    and a lone surrogate as text refuses them), and a NaN or an infinity (Python's json reads them; jsonb has none) as
    its name. A table's or link's reply is outside text: the audit keeps what it said rather than fail after the
    command was relayed."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {storable(str(k)): storable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_json(v) for v in value]
    return value


async def json_body(request: web.Request, within: float) -> dict[str, Any]:
    """A POST's JSON object, after check_post."""
    check_post(request)
    return (await read_json(request, within))[1]


def session_of(sessions: Sessions, request: web.Request, now: datetime) -> Session:
    s = sessions.get(request.cookies.get(COOKIE), now)
    if s is None:
        raise http_error(401, "not logged in, or the session expired: log in with your key")
    return s


def check_csrf(request: web.Request, s: Session) -> None:
    if request.headers.get("X-CSRF-Token") != s.csrf:
        raise http_error(403, "missing or wrong X-CSRF-Token: reload the console")


def stamp_headers(headers: MutableMapping[str, str], hsts: bool) -> None:
    """The headers every response of the console carries, whoever builds it (security_headers() for the
    application's, ConsoleProtocol for aiohttp's own errors)."""
    headers.update(SECURITY_HEADERS)
    headers["Server"] = SERVER
    if hsts:
        headers["Strict-Transport-Security"] = "max-age=31536000"


def security_headers(hsts: bool) -> Callable[[web.Request, web.StreamResponse], Awaitable[None]]:
    """The headers of SECURITY_HEADERS on every response the application prepares (pages, API answers, errors, 404s
    and 405s of the router, the event stream), live data (/api/) never cached; HSTS once the console serves TLS; a
    Server header with no version. aiohttp's own 400s for requests it cannot parse never reach the application: its
    protocol, ConsoleProtocol, stamps those (docs/console.md, "Threat model")."""

    async def headers(request: web.Request, response: web.StreamResponse) -> None:
        stamp_headers(response.headers, hsts)
        if request.path.startswith("/api/"):
            response.headers["Cache-Control"] = "no-store"

    return headers


# What a client sent that aiohttp's parser could not read, and what to do about it (ConsoleProtocol's body).
PROTOCOL_FIX = {
    400: "send one HTTP/1.1 request: a request line and headers of at most 8190 bytes each, a Content-Length that "
    "counts the body or a well-formed chunked body",
    500: "the console failed on this request: see the floor's log",
    504: "the console took too long on this request: try again",
}


class MalformedBody(web.RequestPayloadError):
    """What aiohttp's C parser found wrong in a body after its headers, handed to the body by ConsoleProtocol."""


class ConsoleProtocol(web.RequestHandler):
    """aiohttp's HTTP protocol for the console's socket, whose errors carry the console's headers.

    A request aiohttp cannot parse (a request line that is not HTTP, a header past 8190 bytes or with a bad byte, a
    Content-Length that is not a number, a chunk size that is not hex) is answered by the protocol itself, before any
    route, middleware or on_response_prepare runs: aiohttp offers no option that reaches that response (aio-libs/aiohttp
    #3287 is open), so it left out the security headers and said `Server: Python/3.x aiohttp/3.x`. handle_error() is
    where the protocol builds it (and its 500 and 504 for a handler that failed outside the middleware): this keeps
    aiohttp's logging and closing of the connection and gives the answer the console's headers, `no-store` and a short
    text naming the problem (its first line as aiohttp words it, never the client's bytes after it) and the fix.
    tests/floor/test_console_bad_requests.py holds every kind to it against a real `tablectl floor`.

    A body that goes bad in a later packet than its headers (a chunk size that is not hex, once the handler runs) is
    the other case: aiohttp's C parser raises, aiohttp queues a 400 for after the running handler and tells that
    handler's body nothing, so its read waited for request_timeout_s (a 408) and the connection lingered 10 s more
    with the 400 never sent. data_received() hands the parser's error to the body being read (`body`, kept by the
    watch_body middleware) as aiohttp's pure-Python parser does, so read_json answers at once with a 400 through the
    application (its headers, `no-store`), and closes the connection after it: the parser is past recovery. A body
    that goes bad after its answer (one sent before reading it) is ended as well, which ends aiohttp's lingering 10 s
    of discarding it: the connection closes at once. No further internal is needed for it: aiohttp's lingering stops
    on the body's public is_eof().

    A good request pipelined with a malformed one in one packet: aiohttp's parsers drop every request of a feed that
    ends in an error, so the good one went unanswered. data_received() feeds each bodiless request head on its own
    (floor/console/wire.py, requests_apart()): the good one is answered, then the 400, and the connection closed.

    Internals leaned on (aiohttp has no supported hook, #3287): the constructor's keyword options, handle_error(),
    data_received(), and the queue of parsed messages `_messages` with its `_ErrInfo` for a request it could not
    parse; the pure-Python parser's wordings of a bad body (wire.PURE_BODY_WORDS). tests/floor/
    test_console_protocol_seams.py fails naming which one changed (aiohttp is pinned to the tested minor in
    pyproject.toml)."""

    def __init__(self, manager: web.Server, *, loop: asyncio.AbstractEventLoop, hsts: bool, **kwargs: Any) -> None:
        super().__init__(manager, loop=loop, **kwargs)
        self.hsts = hsts
        # The body of the request in hand, kept after its answer while unread (aiohttp lingers reading it): watch_body.
        self.body: StreamReader | None = None
        self.answered = False  # the handler of `body` has returned

    def data_received(self, data: bytes) -> None:
        for piece in requests_apart(data):
            super().data_received(piece)
        body = self.body
        if body is None or body.is_eof():
            return  # no request in hand, or its body is whole: a bad request after it is handle_error()'s
        error = body.exception()
        if error is None:
            queued = self._messages[-1][0] if self._messages else None
            if not isinstance(queued, _ErrInfo):
                return
            error = MalformedBody(queued.message)
            if not self.answered:  # the handler reading it answers the 400 (read_json)
                body.set_exception(error)
        # The error set by aiohttp's Python parser, or by the line above: the body ends there and the connection closes
        # after the answer. Answered already: aiohttp was discarding the rest of the body and waited its lingering 10 s
        # for an end that never comes; the ended body ends that wait, and the connection closes at once.
        body.feed_eof()
        self.close()
        problem = problem_in(error, body=True)
        log.info(
            "console refused a malformed request body",
            problem=problem,
            status=400,
            answered=self.answered,
            client=client_host(self.peername),
        )

    def log_exception(self, *args: Any, **kw: Any) -> None:
        # aiohttp's report of an error outside a handler (under its pure-Python parser, a chunk gone bad while it
        # discards a body after the answer) names no address: the refusal's line takes it from the connection.
        kw.setdefault("extra", {}).setdefault("client", client_host(self.peername))
        super().log_exception(*args, **kw)

    def handle_error(
        self, request: web.BaseRequest, status: int = 500, exc: BaseException | None = None, message: str | None = None
    ) -> web.StreamResponse:
        response = super().handle_error(request, status, exc, message)
        if not isinstance(response, web.Response):  # aiohttp builds a Response; anything else is left as it is
            return response
        problem = problem_in(exc if isinstance(exc, HttpProcessingError) else message or "")
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Error"
        fix = PROTOCOL_FIX.get(status, PROTOCOL_FIX[400] if 400 <= status < 500 else PROTOCOL_FIX[500])
        response.text = f"{status} {phrase}: {problem + '; ' if problem and status < 500 else ''}{fix}\n"
        response.content_type = "text/plain"
        stamp_headers(response.headers, self.hsts)
        response.headers["Cache-Control"] = "no-store"
        return response


@web.middleware
async def watch_body(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Tells ConsoleProtocol whose body is in hand, so a body that goes bad after its headers ends its read at once."""
    protocol = request.protocol
    if not isinstance(protocol, ConsoleProtocol):  # served by aiohttp's own protocol (aiohttp's test server)
        return await handler(request)
    protocol.body, protocol.answered = request.content, False
    try:
        return await handler(request)
    finally:
        protocol.answered = True


@web.middleware
async def errors_as_json(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.content_type != "application/json" and exc.status >= 400:
            reason = exc.text or exc.reason
            if isinstance(exc, web.HTTPMethodNotAllowed):
                text = json.dumps({"error": f"{request.method} is not allowed on {request.path}"})
                raise web.HTTPMethodNotAllowed(
                    request.method, exc.allowed_methods, text=text, content_type="application/json"
                ) from None
            if exc.status == 404:
                reason = f"nothing at {request.path}"
            raise http_error(exc.status, str(reason)) from None
        raise
    except (asyncio.CancelledError, ConnectionResetError):
        raise
    except Exception:
        log.exception("console request failed", path=request.path)
        return web.json_response({"error": "the console failed on this request: see the floor's log"}, status=500)


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert), str(key))
    return context


async def listen(
    runner: web.AppRunner, host: str, port: int, context: ssl.SSLContext | None, options: dict[str, Any]
) -> asyncio.Server:
    """The console's socket, its connections served by ConsoleProtocol (with `options`, the protocol's arguments),
    whose own error answers carry the console's headers. The socket is the console's rather than a web.TCPSite's: a
    site serves aiohttp's protocol class and no option replaces it. The runner still holds the connections (its
    cleanup ends them; a request whose client went away is cancelled): close the socket before the cleanup."""
    await runner.setup()
    manager, hsts, loop = runner.server, context is not None, asyncio.get_running_loop()
    if manager is None:  # setup() makes it
        raise RuntimeError("the console's aiohttp runner has no server after setup()")
    try:
        return await loop.create_server(
            lambda: ConsoleProtocol(manager, loop=loop, hsts=hsts, **options),
            host,
            port,
            ssl=context,
            reuse_address=True,
        )
    except OSError as err:
        if err.errno != errno.EADDRINUSE:
            raise
        # A second `demo --floor`, or a floor service already running, met only "[Errno 98] error while attempting to
        # bind on address": say whose address it is and where to listen instead.
        raise OSError(
            f"the console's address {host}:{port} is in use (another `tablectl floor` or `tablectl demo --floor`?): "
            "stop that one, or listen elsewhere: --http HOST:PORT for the demo, [console] listen for the service"
        ) from None


Q = TypeVar("Q")


async def next_within(queue: asyncio.Queue[Q], seconds: float, otherwise: Callable[[], Q]) -> Q:
    """The queue's next item, or otherwise() if none comes within `seconds`. asyncio.timeout, not wait_for: Python
    3.11's wait_for swallows a cancel that lands as the item arrives (cpython#86296), and the stream would outlive
    the console's stop."""
    try:
        async with asyncio.timeout(seconds):
            return await queue.get()
    except TimeoutError:
        return otherwise()
