"""The console's HTTP side: aiohttp, inside the `tablectl floor` process, fed by the archive after each commit.

Pages and scripts are files shipped in this package (floor/console/static/): no build step, nothing fetched from
elsewhere, a strict content security policy. Updates go to each browser as server-sent events within one archive
batch of the table's event. Actions are signed in the browser and relayed untouched to the table
(floor/console/relay.py); the tables alone judge them. Every log-in and action, and every refusal of one, is
archived in `console_audit`. docs/console.md has the threat model.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import psycopg
import structlog
from aiohttp import web
from psycopg.types.json import Jsonb
from pydantic import ValidationError

from floor.config import ConsoleKey, FloorConfig
from floor.console.auth import KeyEntry, LoginRefused, Session, Sessions
from floor.console.relay import relay_command
from floor.console.verbs import LINK_VERBS, ROLES, VERBS, ConsoleVerb, allowed, link_allowed
from floor.console.views import FloorView, link_alerts, log_line, note_shuffle, table_alerts
from floor.db import connect
from floor.links import LinkLive
from floor.live import TableLive
from floor.messages import Incoming, LinkIncoming
from floor.recall import last_rounds, recall_round

log = structlog.get_logger("tablectl.console")

COOKIE = "tablectl_console"
MAX_BODY = 32 * 1024  # an envelope is a few hundred bytes; an enrolment less
STREAM_QUEUE = 2000  # updates queued for one browser before it is dropped as too slow (it reconnects)
HEARTBEAT_S = 15.0
# What changes with the clock alone, not with a message: left out when deciding whether a tile changed (the page
# counts the time in a phase itself, from phase_since).
VOLATILE = frozenset({"in_phase_s"})
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
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
STATIC_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _now() -> datetime:
    return datetime.now(UTC)


def _error(status: int, message: str) -> web.HTTPException:
    classes: dict[int, type[web.HTTPException]] = {
        400: web.HTTPBadRequest,
        401: web.HTTPUnauthorized,
        403: web.HTTPForbidden,
        404: web.HTTPNotFound,
        409: web.HTTPConflict,
        413: web.HTTPRequestEntityTooLarge,
        415: web.HTTPUnsupportedMediaType,
        502: web.HTTPBadGateway,
        504: web.HTTPGatewayTimeout,
    }
    cls = classes.get(status, web.HTTPBadRequest)
    body = json.dumps({"error": message})
    if cls is web.HTTPRequestEntityTooLarge:
        return web.HTTPRequestEntityTooLarge(MAX_BODY, 0, text=body, content_type="application/json")
    return cls(text=body, content_type="application/json")


class ConsoleServer:
    def __init__(self, config: FloorConfig, clock: Callable[[], datetime] = _now) -> None:
        self.config = config
        self.console = config.console
        self.clock = clock
        pits = {t: pit for pit, tables in self.console.pits.items() for t in tables}
        self.view = FloorView(pits=pits, grace_s=config.gaps.grace_s)
        self.sessions = Sessions(self.console.session_minutes)
        self.streams: set[asyncio.Queue[tuple[str, str] | None]] = set()
        self.runner: web.AppRunner | None = None
        self.static = _static_files()
        self.url = ""
        self.on_enrol: Callable[[str, str, str], None] | None = None  # the demo admits a key to its tables here
        # What every browser was last sent (as JSON text) of each tile, alert group and link panel: an update
        # carries only what differs. Kept while no browser listens too, so a page that connects later (and gets the
        # whole floor first) is in step with the others.
        self.sent_tiles: dict[str, str] = {}
        self.sent_alerts: dict[str, str] = {}
        self.sent_links: dict[str, str] = {}

    # -- fed by the floor service -------------------------------------------------------------------------------

    def load(self, live: dict[str, TableLive], conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        """At start: every table's live model, its latest birth and its last log lines from the archive."""
        self.view.live.update(live)
        for table_id, payload in conn.execute(
            "SELECT DISTINCT ON (table_id) table_id, payload FROM births ORDER BY table_id, ts DESC, received_at DESC"
        ).fetchall():
            x = self.view.table(str(table_id))
            x.birth = dict(payload)
            x.dealing_method = str(x.birth.get("game", {}).get("dealing_method"))
        for table_id in live:
            rows = conn.execute(
                "SELECT table_id, seq, ts_text, round_id, type, rule, payload FROM events WHERE table_id = %s "
                "ORDER BY seq DESC LIMIT 200",
                (table_id,),
            ).fetchall()
            x = self.view.table(table_id)
            for tid, seq, ts, rid, type_, rule, payload in reversed(rows):
                e = {"table_id": tid, "seq": seq, "ts": ts, "round_id": rid, "type": type_, "rule": rule}
                x.lines.append(log_line({**e, "payload": payload}))
                if type_ == "no_more_bets":
                    x.players = len(payload.get("players", []))
                elif type_ == "round.completed":
                    x.completed_at.append(ts)
                if "dealing_method" in payload:
                    x.dealing_method = str(payload["dealing_method"])
                note_shuffle(x, str(type_), dict(payload))

    def archived(
        self,
        messages: Sequence[Incoming | LinkIncoming],
        live: dict[str, TableLive],
        links: dict[str, LinkLive] | None = None,
    ) -> None:
        """After each committed batch: fold the new messages in and send every browser what changed."""
        changed: set[str] = set()
        changed_links: set[str] = set()
        lines = []
        for m in messages:
            if isinstance(m, LinkIncoming):
                link = (links or {}).get(m.link_id)
                if link is not None:
                    changed |= {t for t in self.view.observe_link(m, link) if t in self.view.live}
                    changed_links.add(m.link_id)
                continue
            last = self.view.table(m.table_id).lines
            if m.kind == "event" and last and int(m.content["seq"]) <= int(last[-1]["seq"]):
                continue  # a replay of what is shown already
            line = self.view.observe(m, live.get(m.table_id) or TableLive(m.table_id))
            changed.add(m.table_id)
            if line is not None:
                lines.append(line)
        if not changed and not changed_links:
            return
        update: dict[str, Any] = {**self.delta(changed, changed_links, self.clock()), "lines": lines}
        if self.streams and (update["tiles"] or update["alerts"] or update["links"] or lines):
            self._broadcast("update", json.dumps(update))

    def refresh(self, tables: set[str]) -> None:
        """Send the browsers these tables' tiles and alerts again where time alone changed them (a gap gone stale,
        floor/gaps.py), with no message archived."""
        update: dict[str, Any] = {**self.delta(tables & set(self.view.live), set(), self.clock()), "lines": []}
        if self.streams and (update["tiles"] or update["alerts"]):
            self._broadcast("update", json.dumps(update))

    def delta(self, tables: set[str], links: set[str], now: datetime) -> dict[str, Any]:
        """The tiles, alert groups and link panels among these that differ from what the browsers were sent last
        (and note them as sent). An alert group is sent whole: the page replaces that table's or link's alerts."""
        tiles: list[dict[str, Any]] = []
        alerts: dict[str, list[dict[str, Any]]] = {}
        panels: list[dict[str, Any]] = []

        def differs(sent: dict[str, str], key: str, value: object) -> bool:
            text = json.dumps(value, sort_keys=True, default=str)
            if sent.get(key) == text:
                return False
            sent[key] = text
            return True

        for t in sorted(tables):
            tile = self.view.tile(t, now)
            if differs(self.sent_tiles, t, {k: v for k, v in tile.items() if k not in VOLATILE}):
                tiles.append(tile)
            found = table_alerts(tile)
            if differs(self.sent_alerts, f"table:{t}", found):
                alerts[f"table:{t}"] = found
        for k in sorted(links):
            link = self.view.links[k]
            panel = link.panel()
            if differs(self.sent_links, k, panel):
                panels.append(panel)
            found = link_alerts(link)
            if differs(self.sent_alerts, f"link:{k}", found):
                alerts[f"link:{k}"] = found
        return {"tiles": tiles, "alerts": alerts, "links": panels}

    def _broadcast(self, name: str, data: str) -> None:
        for q in list(self.streams):
            try:
                q.put_nowait((name, data))
            except asyncio.QueueFull:
                self.streams.discard(q)
                with contextlib.suppress(asyncio.QueueFull):
                    q.put_nowait(None)

    # -- the server ----------------------------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY, middlewares=[self._headers, self._errors])
        app.router.add_get("/", self.index)
        app.router.add_get("/static/{name}", self.static_file)
        app.router.add_get("/api/session", self.session_info)
        app.router.add_post("/api/enrol", self.enrol)
        app.router.add_post("/api/login/challenge", self.login_challenge)
        app.router.add_post("/api/login", self.login)
        app.router.add_post("/api/logout", self.logout)
        app.router.add_get("/api/floor", self.floor)
        app.router.add_get("/api/tables/{table_id}", self.table)
        app.router.add_get("/api/rounds/{round_id}", self.round)
        app.router.add_get("/api/stream", self.stream)
        app.router.add_post("/api/tables/{table_id}/commands/{verb}", self.command)
        app.router.add_post("/api/links/{link_id}/commands/{verb}", self.link_command)
        return app

    async def start(self) -> str:
        c = self.console
        context = None
        if c.tls_cert is not None and c.tls_key is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(str(c.tls_cert), str(c.tls_key))
        self.runner = web.AppRunner(self.app(), access_log=None, handler_cancellation=True)
        await self.runner.setup()
        site = web.TCPSite(self.runner, c.host, c.port, ssl_context=context)
        await site.start()
        port = c.port
        server = site._server
        if port == 0 and isinstance(server, asyncio.Server) and server.sockets:
            port = int(server.sockets[0].getsockname()[1])
        host = f"[{c.host}]" if ":" in c.host else c.host
        self.url = f"{'https' if context else 'http'}://{host}:{port}/"
        log.info("console serving", url=self.url, tls=context is not None)
        return self.url

    async def stop(self) -> None:
        for q in list(self.streams):
            with contextlib.suppress(asyncio.QueueFull):
                q.put_nowait(None)
        if self.runner is not None:
            await self.runner.cleanup()

    @web.middleware
    async def _headers(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            exc.headers.update(SECURITY_HEADERS)
            raise
        response.headers.update(SECURITY_HEADERS)
        if request.path.startswith("/api/"):
            response.headers["Cache-Control"] = "no-store"
        if self.console.tls_cert is not None:
            response.headers["Strict-Transport-Security"] = "max-age=31536000"
        return response

    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
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
                raise _error(exc.status, str(reason)) from None
            raise
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception:
            log.exception("console request failed", path=request.path)
            return web.json_response({"error": "the console failed on this request: see the floor's log"}, status=500)

    # -- helpers -------------------------------------------------------------------------------------------------

    def _origin(self, request: web.Request) -> str:
        return f"{request.scheme}://{request.host}"

    async def _json_body(self, request: web.Request) -> dict[str, Any]:
        """A POST's JSON object, after the checks that make a cross-site request fail (docs/console.md, CSRF)."""
        if request.content_type != "application/json":
            raise _error(415, "send the body as application/json")
        origin = request.headers.get("Origin")
        if origin != self._origin(request):
            raise _error(403, f"the request's Origin {origin!r} is not this console's ({self._origin(request)})")
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise _error(413, f"the body is larger than {MAX_BODY} bytes") from None
        try:
            obj = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise _error(400, f"the body is not JSON: {err}") from None
        if not isinstance(obj, dict):
            raise _error(400, "the body must be a JSON object")
        return obj

    def _session(self, request: web.Request) -> Session:
        s = self.sessions.get(request.cookies.get(COOKIE), self.clock())
        if s is None:
            raise _error(401, "not logged in, or the session expired: log in with your key")
        return s

    def _csrf(self, request: web.Request, s: Session) -> None:
        if request.headers.get("X-CSRF-Token") != s.csrf:
            raise _error(403, "missing or wrong X-CSRF-Token: reload the console")

    async def _db(self, fn: Callable[[psycopg.Connection[tuple[Any, ...]]], Any]) -> Any:
        def run() -> Any:
            with connect(self.config.database) as conn:
                return fn(conn)

        return await asyncio.to_thread(run)

    async def _audit(
        self,
        request: web.Request,
        action: str,
        outcome: str,
        *,
        key_id: str | None = None,
        role: str | None = None,
        reason: str | None = None,
        table_id: str | None = None,
        verb: str | None = None,
        command_id: str | None = None,
        envelope: str | None = None,
        reply: dict[str, Any] | None = None,
    ) -> None:
        remote = request.remote

        def write(conn: psycopg.Connection[tuple[Any, ...]]) -> None:
            conn.execute(
                "INSERT INTO console_audit (action, key_id, role, table_id, verb, command_id, outcome, reason,"
                " envelope, reply, remote) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    action,
                    key_id,
                    role,
                    table_id,
                    verb,
                    command_id,
                    outcome,
                    reason,
                    envelope,
                    Jsonb(reply) if reply is not None else None,
                    remote,
                ),
            )

        await self._db(write)
        log.info("console audit", action=action, outcome=outcome, key_id=key_id, verb=verb, table_id=table_id)

    async def _key(self, key_id: str) -> KeyEntry | None:
        for k in self.console.supervisors:
            if k.key_id == key_id:
                return KeyEntry(k.key_id, k.role, k.public_key)

        def find(conn: psycopg.Connection[tuple[Any, ...]]) -> KeyEntry | None:
            row = conn.execute(
                "SELECT key_id, role, public_key FROM console_keys WHERE key_id = %s AND approved_at IS NOT NULL",
                (key_id,),
            ).fetchone()
            return KeyEntry(str(row[0]), str(row[1]), str(row[2])) if row else None

        found: KeyEntry | None = await self._db(find)
        return found

    # -- pages ---------------------------------------------------------------------------------------------------

    async def index(self, request: web.Request) -> web.Response:
        return self._file("index.html")

    async def static_file(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in self.static or name == "index.html":
            raise _error(404, f"no file {name!r} in the console")
        return self._file(name)

    def _file(self, name: str) -> web.Response:
        body = self.static[name]
        ctype = STATIC_TYPES[Path(name).suffix]
        return web.Response(body=body, content_type=ctype, charset="utf-8", headers={"Cache-Control": "no-cache"})

    # -- keys and sessions ---------------------------------------------------------------------------------------

    async def session_info(self, request: web.Request) -> web.Response:
        s = self.sessions.get(request.cookies.get(COOKIE), self.clock())
        verbs = {n: {"roles": sorted(v.roles), "confirm": v.confirm, "rule": v.rule} for n, v in VERBS.items()}
        link_verbs = {
            n: {"roles": sorted(v.roles), "confirm": v.confirm, "rule": v.rule} for n, v in LINK_VERBS.items()
        }
        if s is None:
            return web.json_response({"logged_in": False, "verbs": verbs, "link_verbs": link_verbs})
        return web.json_response(
            {
                "logged_in": True,
                "key_id": s.key_id,
                "role": s.role,
                "csrf": s.csrf,
                "expires": s.expires.isoformat(),
                "allowed": allowed(s.role),
                "link_allowed": link_allowed(s.role),
                "verbs": verbs,
                "link_verbs": link_verbs,
            }
        )

    async def enrol(self, request: web.Request) -> web.Response:
        body = await self._json_body(request)
        key_id, role, public = body.get("key_id"), body.get("role"), body.get("public_key")
        try:
            key = ConsoleKey.model_validate({"key_id": key_id, "role": role, "public_key": public})
        except ValidationError as err:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors())
            raise _error(400, f"the enrolment is not usable: {problems} (role is one of {', '.join(ROLES)})") from None
        approve = self.console.demo_approve_all

        def store(conn: psycopg.Connection[tuple[Any, ...]]) -> str:
            row = conn.execute("SELECT public_key FROM console_keys WHERE key_id = %s", (key.key_id,)).fetchone()
            if row is not None:
                return "same" if row[0] == key.public_key else "taken"
            conn.execute(
                "INSERT INTO console_keys (key_id, role, public_key, approved_at, approved_by) VALUES"
                " (%s, %s, %s, CASE WHEN %s THEN now() END, CASE WHEN %s THEN 'demo_approve_all' END)"
                " ON CONFLICT DO NOTHING",
                (key.key_id, key.role, key.public_key, approve, approve),
            )
            return "new"

        got = await self._db(store)
        if got == "taken":
            await self._audit(request, "enrol", "refused", key_id=key.key_id, role=key.role, reason="key id taken")
            raise _error(409, f"key id {key.key_id!r} is enrolled with another key: choose another key id")
        await self._audit(request, "enrol", "approved" if approve else "pending", key_id=key.key_id, role=key.role)
        entry = f'[[supervisors]]\nkey_id = "{key.key_id}"\nrole = "{key.role}"\npublic_key = "{key.public_key}"\n'
        if self.on_enrol is not None and approve:
            self.on_enrol(key.key_id, key.role, key.public_key)
        return web.json_response(
            {
                "entry": entry,
                "approved": approve,
                "approve_command": f"tablectl floor --config FLOOR.toml console approve {key.key_id}",
            }
        )

    async def login_challenge(self, request: web.Request) -> web.Response:
        body = await self._json_body(request)
        key_id = body.get("key_id")
        if not isinstance(key_id, str) or not key_id:
            raise _error(400, "give key_id: the key id this browser enrolled")
        try:
            c = self.sessions.challenge(key_id, self.clock())
        except LoginRefused as err:
            raise _error(409, str(err)) from None
        return web.json_response({"challenge": c, "origin": self._origin(request)})

    async def login(self, request: web.Request) -> web.Response:
        body = await self._json_body(request)
        key_id, challenge, signature = body.get("key_id"), body.get("challenge"), body.get("signature")
        if not all(isinstance(v, str) for v in (key_id, challenge, signature)):
            raise _error(400, "give key_id, challenge and signature, each a string")
        assert isinstance(key_id, str) and isinstance(challenge, str) and isinstance(signature, str)
        key = await self._key(key_id)
        try:
            s = self.sessions.login(key, key_id, challenge, signature, self._origin(request), self.clock())
        except LoginRefused as err:
            await self._audit(request, "login", "refused", key_id=key_id[:64], reason=str(err))
            raise _error(403, str(err)) from None
        await self._audit(request, "login", "accepted", key_id=s.key_id, role=s.role)
        response = web.json_response({"key_id": s.key_id, "role": s.role, "expires": s.expires.isoformat()})
        response.set_cookie(
            COOKIE,
            s.token,
            httponly=True,
            samesite="Strict",
            secure=self.console.tls_cert is not None,
            path="/",
            max_age=self.console.session_minutes * 60,
        )
        return response

    async def logout(self, request: web.Request) -> web.Response:
        await self._json_body(request)
        s = self._session(request)
        self._csrf(request, s)
        self.sessions.logout(s.token)
        await self._audit(request, "logout", "done", key_id=s.key_id, role=s.role)
        response = web.json_response({"logged_out": True})
        response.del_cookie(COOKIE, path="/")
        return response

    # -- the floor -----------------------------------------------------------------------------------------------

    async def floor(self, request: web.Request) -> web.Response:
        self._session(request)
        return web.json_response(self.view.floor(self.clock()))

    async def table(self, request: web.Request) -> web.Response:
        self._session(request)
        table_id = request.match_info["table_id"]
        if table_id not in self.view.live:
            raise _error(404, f"no table {table_id!r} on this floor")
        detail = self.view.detail(table_id, self.clock())
        detail["rounds"] = await self._db(lambda c: [s.to_json() for s in last_rounds(c, table_id, 5)])
        return web.json_response(detail)

    async def round(self, request: web.Request) -> web.Response:
        self._session(request)
        round_id = request.match_info["round_id"]
        story = await self._db(lambda c: recall_round(c, round_id))
        if story is None:
            raise _error(404, f"round {round_id!r} is not in the archive")
        return web.json_response(story.to_json())

    async def stream(self, request: web.Request) -> web.StreamResponse:
        s = self._session(request)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        await response.prepare(request)
        q: asyncio.Queue[tuple[str, str] | None] = asyncio.Queue(STREAM_QUEUE)
        self.streams.add(q)
        try:
            await response.write(_sse("floor", json.dumps(self.view.floor(self.clock()))))
            while True:
                try:
                    item = await asyncio.wait_for(q.get(), HEARTBEAT_S)
                except TimeoutError:
                    item = ("heartbeat", "{}")
                if item is None or self.sessions.get(s.token, self.clock()) is None:
                    await response.write(_sse("bye", json.dumps({"reason": "session ended"})))
                    break
                await response.write(_sse(*item))
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.streams.discard(q)
        return response

    # -- actions -------------------------------------------------------------------------------------------------

    async def command(self, request: web.Request) -> web.Response:
        """Relay a signed envelope to its table untouched, after checking it is this session's to send."""
        return await self._relay(request, "table", request.match_info["table_id"])

    async def link_command(self, request: web.Request) -> web.Response:
        """Relay a signed envelope to a link controller: the same envelope, addressed to the link's id
        (link/commands.py); the link judges it as a table would."""
        return await self._relay(request, "link", request.match_info["link_id"])

    async def _relay(self, request: web.Request, target: str, target_id: str) -> web.Response:
        if request.content_type != "application/json":
            raise _error(415, "send the signed envelope as application/json")
        if request.headers.get("Origin") != self._origin(request):
            raise _error(403, f"the request's Origin is not this console's ({self._origin(request)})")
        s = self._session(request)
        self._csrf(request, s)
        verb = request.match_info["verb"]
        verbs: dict[str, ConsoleVerb] = VERBS if target == "table" else LINK_VERBS
        may = allowed(s.role) if target == "table" else link_allowed(s.role)
        known = self.view.live if target == "table" else self.view.links
        raw = await request.read()
        try:
            envelope = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise _error(400, f"the envelope is not JSON: {err}") from None
        if not isinstance(envelope, dict):
            raise _error(400, "the envelope must be a JSON object")
        command_id = str(envelope.get("command_id"))[:64]
        problem = None
        if verb not in verbs:
            problem = f"there is no {target} verb {verb!r}; the verbs are {', '.join(verbs)}"
        elif verb not in may:
            problem = f"a {s.role} may not send {verb}; it needs one of: {', '.join(sorted(verbs[verb].roles))}"
        elif envelope.get("key_id") != s.key_id:
            problem = f"the envelope is signed as {envelope.get('key_id')!r}, but this session is {s.key_id!r}"
        elif envelope.get("table_id") != target_id or envelope.get("verb") != verb:
            problem = f"the envelope's table_id and verb must be those of the address it is sent to ({target} id)"
        elif target_id not in known:
            problem = f"no {target} {target_id!r} on this floor"
        text = raw.decode("utf-8", "replace")
        audited = target_id[:64] if target == "table" else f"link:{target_id[:59]}"
        if problem is not None:
            await self._audit(
                request, "command", "refused", key_id=s.key_id, role=s.role, table_id=audited, verb=verb[:64],
                command_id=command_id, reason=problem, envelope=text,
            )  # fmt: skip
            raise _error(403 if "may not" in problem or "session" in problem else 400, problem)
        base = None if target == "table" else f"{self.config.mqtt.prefix}/link/{target_id}/cmd"
        reply = await relay_command(
            self.config, target_id, verb, raw, envelope, self.console.command_timeout_s, base=base
        )
        if "outcome" not in reply:  # a link answers {accepted, code, reason} (link/commands.py)
            reply = {**reply, "outcome": "applied" if reply.get("accepted") else "rejected"}
        outcome = str(reply.get("outcome", "no_reply"))
        await self._audit(
            request, "command", outcome, key_id=s.key_id, role=s.role, table_id=audited, verb=verb,
            command_id=command_id, reason=reply.get("reason"), envelope=text, reply=reply,
        )  # fmt: skip
        return web.json_response(reply, status=200 if outcome != "no_reply" else 504)


def _sse(name: str, data: str) -> bytes:
    return f"event: {name}\ndata: {data}\n\n".encode()


def _static_files() -> dict[str, bytes]:
    root = resources.files("floor.console") / "static"
    out = {}
    for entry in root.iterdir():
        if entry.is_file() and Path(entry.name).suffix in STATIC_TYPES:
            out[entry.name] = entry.read_bytes()
    return out


def approve_key(conn: psycopg.Connection[tuple[Any, ...]], key_id: str, role: str | None, by: str) -> str:
    """`tablectl floor console approve`: the enrolled key may log in (with `role`, if given, instead of the one
    asked for). Returns what was done, to print."""
    row = conn.execute("SELECT role, approved_at FROM console_keys WHERE key_id = %s", (key_id,)).fetchone()
    if row is None:
        raise LookupError(f"no key {key_id!r} was enrolled: enrol it in the console first")
    if role is not None and role not in ROLES:
        raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
    final = role or str(row[0])
    conn.execute(
        "UPDATE console_keys SET role = %s, approved_at = now(), approved_by = %s WHERE key_id = %s",
        (final, by, key_id),
    )
    conn.execute(
        "INSERT INTO console_audit (action, key_id, role, outcome, reason) VALUES ('approve', %s, %s, 'approved', %s)",
        (key_id, final, f"by {by}"),
    )
    conn.commit()
    return f"key {key_id} approved as {final}"


def enrolled(conn: psycopg.Connection[tuple[Any, ...]]) -> Iterable[tuple[Any, ...]]:
    return conn.execute(
        "SELECT key_id, role, public_key, enrolled_at, approved_at, approved_by FROM console_keys ORDER BY key_id"
    ).fetchall()
