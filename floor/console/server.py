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
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg
import structlog
from aiohttp import web

from floor.config import FloorConfig
from floor.console.auth import Session, Sessions
from floor.console.deltas import Sent
from floor.console.limits import Streams, Ticks
from floor.console.loading import load_view
from floor.console.login import LoginDesk
from floor.console.plumbing import (
    MAX_BODY,
    check_csrf,
    check_post,
    errors_as_json,
    http_error,
    listen,
    next_within,
    read_json,
    security_headers,
    session_of,
    sse_frame,
    static_files,
    static_response,
    storable_json,
    tls_context,
    watch_body,
)
from floor.console.protocol_log import ProtocolLog
from floor.console.records import ConsoleRecords
from floor.console.relay import relay_command
from floor.console.reports import ReportDesk
from floor.console.session_ack import SessionDesk
from floor.console.verbs import LINK_VERBS, VERBS, ConsoleVerb, allowed, link_allowed
from floor.console.views import FloorView, stamp
from floor.links import LinkLive
from floor.live import TableLive
from floor.messages import Incoming, LinkIncoming, Rejected
from floor.recall import last_rounds, recall_round

log = structlog.get_logger("tablectl.console")
STREAM_QUEUE = 2000  # updates queued for one browser before it is dropped as too slow (it reconnects)
HEARTBEAT_S = 15.0
FLUSH_S = 2.0  # at stop, for the refusals' audit rows (login.flush)


class ConsoleServer:
    def __init__(
        self,
        config: FloorConfig,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        ticks: Ticks = time.monotonic,
    ) -> None:
        self.config = config
        self.console = config.console
        self.clock = clock
        pits = {t: pit for pit, tables in self.console.pits.items() for t in tables}
        self.view = FloorView(pits=pits, grace_s=config.gaps.grace_s)
        self.sessions = Sessions(self.console.session_minutes)
        self.streams: set[asyncio.Queue[tuple[str, str] | None]] = set()
        self.stream_limits = Streams(self.console.streams_per_session, self.console.max_streams)
        self.runner: web.AppRunner | None = None
        self.listener: asyncio.Server | None = None
        self.static = static_files()
        self.url = ""
        self.records = ConsoleRecords(config.database, self.console.supervisors)
        # Read through self: the service puts the console on the database's clock after building it (floor/dbclock.py).
        self.login = LoginDesk(self.console, self.sessions, self.records, lambda: self.clock(), ticks)
        self.reports = ReportDesk(
            config, self.records, self._session, lambda: {t: v.chapter for t, v in self.view.live.items()}
        )
        self.sent = Sent()  # what every browser was last sent: an update carries only what differs
        self.lost_desk = SessionDesk(
            self.view, self.records, self._session, lambda: self.clock(), lambda: self.refresh(set()),
            self.console.request_timeout_s,
        )  # fmt: skip

    # -- fed by the floor service -------------------------------------------------------------------------------

    def load(self, live: dict[str, TableLive], conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        """At start: the live models, and from the archive what the tiles need (floor/console/loading.py)."""
        load_view(self.view, live, conn)

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
            changed.add(m.table_id)  # a replay draws no line again, but may have filled a gap: the tile changed
            last = self.view.table(m.table_id).lines
            if m.kind == "event" and last and int(m.content["seq"]) <= int(last[-1]["seq"]):
                # A replay of what is shown already: no line, but the batch's model (a new copy: floor/archive.py)
                # has its gap filled. Kept out, a resend that filled a gap left its tile and alerts showing it.
                if m.table_id in live:
                    self.view.live[m.table_id] = live[m.table_id]
                continue
            line = self.view.observe(m, live.get(m.table_id) or TableLive(m.table_id))
            if line is not None:
                lines.append(line)
        if not changed and not changed_links:
            return
        now = self.clock()
        update: dict[str, Any] = {**self.delta(changed, changed_links, now), "lines": lines, "now": stamp(now)}
        log.debug("console update", tiles=[t["table_id"] for t in update["tiles"]], streams=len(self.streams))
        if self.streams and (update["tiles"] or update["alerts"] or update["links"] or lines):
            self._broadcast("update", json.dumps(update))

    def refused(self, count: int, last: Rejected | None) -> None:
        """After a committed batch that refused `count` messages: the floor's count and the latest, to every page."""
        now = stamp(self.clock())
        shown = self.view.note_refused(count, *((last.topic, last.reason, now) if last else (None, None, None)))
        self._broadcast(
            "update", json.dumps({"tiles": [], "alerts": {}, "links": [], "lines": [], "refused": shown, "now": now})
        )

    def broker(self, problem: str | None) -> None:
        """The floor lost its broker (`problem`) or has it again (None): every page told at once."""
        lost, now = self.view.broker_lost, stamp(self.clock())
        self.view.broker_lost = None if problem is None else {"since": (lost or {}).get("since", now), "error": problem}
        if lost != self.view.broker_lost:
            self._broadcast("update", json.dumps({"tiles": [], "lines": [], "broker_lost": self.view.broker_lost}))

    def session_lost(self) -> None:
        """The broker kept no session for the floor (floor/intake.py): every page gets the alert naming the tables
        whose gaps opened since, at once and as more gaps open."""
        self.view.session_lost = stamp(self.clock())
        self.lost_desk.lost(self.view.session_lost)  # kept in the archive by the service's next keep()
        self.refresh(set())

    def refresh(self, tables: set[str]) -> None:
        """Send these tables' tiles and alerts again where time alone changed them (a gap gone stale: floor/gaps.py)."""
        now = self.clock()
        update = {**self.delta(tables & set(self.view.live), set(), now), "lines": [], "now": stamp(now)}
        if self.streams and (update["tiles"] or update["alerts"]):
            self._broadcast("update", json.dumps(update))

    def delta(self, tables: set[str], links: set[str], now: datetime) -> dict[str, Any]:
        return self.sent.delta(self.view, tables, links, now)

    def _broadcast(self, name: str, data: str) -> None:
        for q in list(self.streams):
            try:
                q.put_nowait((name, data))
            except asyncio.QueueFull:
                # Too far behind: what it has not taken is dropped now, not kept while its writer waits on the
                # socket, and it is told to go (the page reconnects and gets the whole floor).
                self.streams.discard(q)
                while not q.empty():
                    q.get_nowait()
                q.put_nowait(None)

    # -- the server ----------------------------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY, middlewares=[watch_body, errors_as_json])
        app.on_response_prepare.append(security_headers(self.console.tls_cert is not None))
        app.router.add_get("/", self.index)
        app.router.add_get("/static/{name}", self.static_file)
        self.login.routes(app)
        self.reports.routes(app)
        self.lost_desk.routes(app)
        app.router.add_get("/api/floor", self.floor)
        app.router.add_get("/api/tables/{table_id}", self.table)
        app.router.add_get("/api/rounds/{round_id}", self.round)
        app.router.add_get("/api/stream", self.stream)
        app.router.add_post("/api/tables/{table_id}/commands/{verb}", self.command)
        app.router.add_post("/api/links/{link_id}/commands/{verb}", self.link_command)
        return app

    def handler_options(self) -> dict[str, Any]:
        """How aiohttp's protocol serves each connection of the console: a connection that has not sent a whole
        request's headers within request_timeout_s is closed (aiohttp's keep-alive timer runs from the connection's
        start), and a request it cannot parse is logged as the client's fault (ProtocolLog)."""
        return {"access_log": None, "keepalive_timeout": self.console.request_timeout_s, "logger": ProtocolLog()}

    def server_options(self) -> dict[str, Any]:
        """How aiohttp serves the console (start(); tests serve the app with the same): handler_options(), and a
        request whose client went away is cancelled."""
        return self.handler_options() | {"handler_cancellation": True}

    async def start(self) -> str:
        c = self.console
        context = tls_context(c.tls_cert, c.tls_key) if c.tls_cert is not None and c.tls_key is not None else None
        self.runner = web.AppRunner(self.app(), **self.server_options())
        self.listener = await listen(self.runner, c.host, c.port, context, self.handler_options())
        port = int(self.listener.sockets[0].getsockname()[1]) if self.listener.sockets else c.port
        host = f"[{c.host}]" if ":" in c.host else c.host
        self.url = f"{'https' if context else 'http'}://{host}:{port}/"
        log.info("console serving", url=self.url, tls=context is not None)
        return self.url

    async def stop(self) -> None:
        await self.login.flush_at_stop(FLUSH_S)
        self.records.stop()  # the requests' connections in flight cut, none opened after
        for q in list(self.streams):
            with contextlib.suppress(asyncio.QueueFull):
                q.put_nowait(None)
        if self.listener is not None:
            self.listener.close()  # no new connections; the runner's cleanup ends the open ones
        if self.runner is not None:
            await self.runner.cleanup()
        if self.listener is not None:
            await self.listener.wait_closed()
            self.listener = None

    @property
    def on_enrol(self) -> Callable[[str, str, str], None] | None:
        """Called with each key enrolled while demo_approve_all admits it (the demo adds it to its tables)."""
        return self.login.on_enrol

    @on_enrol.setter
    def on_enrol(self, admit: Callable[[str, str, str], None] | None) -> None:
        self.login.on_enrol = admit

    def _session(self, request: web.Request) -> Session:
        return session_of(self.sessions, request, self.clock())

    # -- pages ---------------------------------------------------------------------------------------------------

    async def index(self, request: web.Request) -> web.Response:
        return static_response(self.static, "index.html")

    async def static_file(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in self.static or name == "index.html":
            raise http_error(404, f"no file {name!r} in the console")
        return static_response(self.static, name)

    # -- the floor -----------------------------------------------------------------------------------------------

    async def floor(self, request: web.Request) -> web.Response:
        self._session(request)
        return web.json_response(self.view.floor(self.clock()))

    async def table(self, request: web.Request) -> web.Response:
        self._session(request)
        table_id = request.match_info["table_id"]
        if table_id not in self.view.live:
            raise http_error(404, f"no table {table_id!r} on this floor")
        detail = self.view.detail(table_id, self.clock())
        log.debug("table view served", table_id=table_id, devices=len(detail["tile"]["devices"]))
        detail["rounds"] = await self.records.run(lambda c: [s.to_json() for s in last_rounds(c, table_id, 5)])
        return web.json_response(detail)

    async def round(self, request: web.Request) -> web.Response:
        self._session(request)
        round_id = request.match_info["round_id"]
        # %00 in the path: PostgreSQL's text holds no NUL, so no archived round has one (and the query would fail).
        story = None if "\x00" in round_id else await self.records.run(lambda c: recall_round(c, round_id))
        if story is None:
            raise http_error(404, f"round {round_id!r} is not in the archive")
        return web.json_response(story.to_json())

    async def stream(self, request: web.Request) -> web.StreamResponse:
        s = self._session(request)
        with self.stream_limits.held(s.token, retry_after=int(HEARTBEAT_S)):
            return await self._stream(request, s)

    async def _stream(self, request: web.Request, s: Session) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        try:
            await response.prepare(request)
        except ConnectionResetError:  # aiohttp's ClientConnectionResetError: the transport closed under the headers
            self._gone(request, s, "prepare")
            return response  # aiohttp's finish_response() finds the connection gone too, and logs nothing
        q: asyncio.Queue[tuple[str, str] | None] = asyncio.Queue(STREAM_QUEUE)
        self.streams.add(q)
        within = self.console.request_timeout_s

        async def send(frame: bytes) -> None:
            # A browser that stops reading fills its socket's buffers: past request_timeout_s the stream is dropped
            # (its EventSource reconnects to the whole floor), so it holds one socket's buffers, not an endless queue.
            async with asyncio.timeout(within):
                await response.write(frame)

        try:
            await send(sse_frame("floor", json.dumps(self.view.floor(self.clock()))))
            while True:
                item = await next_within(
                    q, HEARTBEAT_S, lambda: ("heartbeat", json.dumps({"now": stamp(self.clock())}))
                )
                if item is None or self.sessions.get(s.token, self.clock()) is None:
                    await send(sse_frame("bye", json.dumps({"reason": "session ended or the browser fell behind"})))
                    break
                await send(sse_frame(*item))
        except TimeoutError:
            log.info("console stream dropped: the browser did not read it", key_id=s.key_id, within_s=within)
            if request.transport is not None:
                request.transport.abort()
        except ConnectionResetError:
            self._gone(request, s, "write")
        except asyncio.CancelledError:
            pass  # the connection was lost and aiohttp cancelled the handler (handler_cancellation)
        finally:
            self.streams.discard(q)
        return response

    @staticmethod
    def _gone(request: web.Request, s: Session, at: str) -> None:  # a page closed or reloaded: not the floor's fault
        log.info("console stream closed: the browser went away", key_id=s.key_id, client=request.remote, at=at)

    # -- actions -------------------------------------------------------------------------------------------------

    async def command(self, request: web.Request) -> web.Response:
        """Relay a signed envelope to its table untouched, after checking it is this session's to send."""
        return await self._relay(request, "table", request.match_info["table_id"])

    async def link_command(self, request: web.Request) -> web.Response:
        """Relay a signed envelope, addressed to the link's id, to the link, which judges it (link/commands.py)."""
        return await self._relay(request, "link", request.match_info["link_id"])

    async def _relay(self, request: web.Request, target: str, target_id: str) -> web.Response:
        check_post(request)
        s = self._session(request)
        check_csrf(request, s)
        verb = request.match_info["verb"]
        verbs: dict[str, ConsoleVerb] = VERBS if target == "table" else LINK_VERBS
        may = allowed(s.role) if target == "table" else link_allowed(s.role)
        known = self.view.live if target == "table" else self.view.links
        raw, envelope = await read_json(
            request, self.console.request_timeout_s
        )  # read once the session may send: a stranger's body is not parsed
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
            await self.records.audit(
                request, "command", "refused", key_id=s.key_id, role=s.role, table_id=audited, verb=verb[:64],
                command_id=command_id, reason=problem, envelope=text,
            )  # fmt: skip
            raise http_error(403 if "may not" in problem or "session" in problem else 400, problem)
        base = None if target == "table" else f"{self.config.mqtt.prefix}/link/{target_id}/cmd"
        reply = await relay_command(
            self.config, target_id, verb, raw, envelope, self.console.command_timeout_s, base=base
        )
        if "outcome" not in reply:  # a link answers {accepted, code, reason} (link/commands.py)
            reply = {**reply, "outcome": "applied" if reply.get("accepted") else "rejected"}
        outcome = str(reply.get("outcome", "no_reply"))
        reason = reply.get("reason")
        await self.records.audit(
            request, "command", outcome, key_id=s.key_id, role=s.role, table_id=audited, verb=verb,
            command_id=command_id, reason=None if reason is None else str(reason), envelope=text, reply=reply,
        )  # fmt: skip
        # As recorded: escaped, and no NaN (the page's JSON.parse refuses one).
        return web.json_response(storable_json(reply), status=200 if outcome != "no_reply" else 504)
