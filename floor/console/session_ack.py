"""The lost broker session's alert (floor/console/floor_alerts.py) kept in the archive and acknowledged by a
supervisor (docs/console.md, "The floor's own broker").

The loss and its end are `console_audit` rows (action `session_lost`, outcome `alerted` or `ended`, `reply.since` the
loss on the floor's clock), written by the service's task `floor-console-session` within a second of each (`keep`),
so a floor restarted while the alert shows shows it again. A supervisor who has seen it (and called the tables'
attendants) acknowledges it: a logged-in supervisor's POST with the CSRF token, naming the loss it acknowledges; its
row (action `acknowledge`) says who and when, and only once it is written does every console show "acknowledged by
X at T". A gap that opens after the acknowledgement raises the alert again, unacknowledged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

import structlog
from aiohttp import web
from psycopg.types.json import Jsonb

from controller.core.shown import one_line
from floor.console.auth import Session
from floor.console.floor_alerts import SessionAck, acknowledged, gaps_since
from floor.console.plumbing import check_csrf, check_post, http_error, read_json
from floor.console.records import ArchiveUnavailable, Conn, ConsoleRecords
from floor.console.views import FloorView, stamp
from floor.tasks import stopped_within

log = structlog.get_logger("tablectl.console")
ACK_PATH = "/api/floor/session/acknowledge"
KEEP_EVERY_S = 1.0  # how soon a loss or its end is written (a restart within it shows the alert as before)
ROLE = "supervisor"
BODY = 'send {"since": "<the alert\'s since>"}, as the console\'s Acknowledge button does'


class SessionDesk:
    def __init__(
        self,
        view: FloorView,
        records: ConsoleRecords,
        session: Callable[[web.Request], Session],
        clock: Callable[[], datetime],
        refresh: Callable[[], None],
        within: float,
    ) -> None:
        self.view = view
        self.records = records
        self.session = session
        self.clock = clock
        self.refresh = refresh  # every page sent the alert again
        self.within = within  # [console] request_timeout_s, for the body
        self.unkept: str | None = None  # a loss not yet written as alerted
        self.failing = False  # the last write failed (said once)

    def routes(self, app: web.Application) -> None:
        app.router.add_post(ACK_PATH, self.acknowledge)

    def lost(self, since: str) -> None:
        """A new loss shown (ConsoleServer.session_lost): written by the next keep()."""
        self.unkept = since

    async def run(self, stopping: asyncio.Event) -> None:
        """The service's task `floor-console-session`: keep() about once a second until the stop. A task of its own,
        so an archive that stalls mid-write holds this one alone (the console's stop cuts its statement), not the gap
        watch; it returns at the stop."""
        while not stopping.is_set():
            await self.keep()
            await stopped_within(stopping, KEEP_EVERY_S)

    async def keep(self) -> None:
        """The loss and its end written, each once, the older loss's first: a restart restores the latest row's. A write
        the archive does not take is said (once until one is written again) and tried again at the next call;
        meanwhile a restart would not show the alert."""
        ended, self.view.session_ended = self.view.session_ended, None
        due = sorted(
            [(since, 0, "alerted") for since in (self.unkept,) if since]
            + [(since, 1, "ended") for since in (ended,) if since]
        )
        for since, _, outcome in due:
            try:
                await self.records.run(partial(write_loss, outcome=outcome, since=since))
            except Exception as err:  # the archive down (ArchiveUnavailable), or refusing the row: said, not fatal
                if not self.failing:
                    problem = err.problem if isinstance(err, ArchiveUnavailable) else one_line(err)
                    log.warning("console: the lost session's alert not kept in the archive yet; trying each second",
                                outcome=outcome, since=since, problem=problem[:400])  # fmt: skip
                self.failing = True
                if ended is not None and self.view.session_ended is None:
                    self.view.session_ended = ended  # the end is owed still (a new end meanwhile is the later loss's)
                return
            self.failing = False
            if outcome == "alerted" and self.unkept == since:
                self.unkept = None

    async def acknowledge(self, request: web.Request) -> web.Response:
        check_post(request)
        s = self.session(request)
        check_csrf(request, s)
        _, body = await read_json(request, self.within)
        problem, status = self._problem(s, body)
        if problem is not None:
            await self.records.audit(
                request, "acknowledge", "refused", key_id=s.key_id, role=s.role, verb="session_lost",
                reason=problem, reply={"body": body},
            )  # fmt: skip
            raise http_error(status, problem)
        lost = str(body["since"])
        ack = SessionAck(lost, s.key_id, stamp(self.clock()))
        tables = gaps_since(lost, self.view.live)
        await self.records.audit(
            request, "acknowledge", "acknowledged", key_id=s.key_id, role=s.role, verb="session_lost",
            reason=f"the broker session lost at {lost} acknowledged; gaps since at: {', '.join(tables)}"[:1000],
            reply={"since": lost, "at": ack.at, "tables": tables},
        )  # fmt: skip
        self.view.session_ack = ack  # shown once its row is written: a reload or a restart shows it too
        log.info("console: the lost session's alert acknowledged", key_id=s.key_id, since=lost, tables=tables)
        self.refresh()
        return web.json_response({"acknowledged": {"since": lost, "by": ack.by, "at": ack.at}})

    def _problem(self, s: Session, body: dict[str, Any]) -> tuple[str | None, int]:
        """Why this acknowledgement is refused (and its status), or None."""
        if s.role != ROLE:
            return f"acknowledging the lost session is a supervisor's; this session is a {s.role}", 403
        since = body.get("since")
        if not isinstance(since, str) or not since:
            return f"the body names no alert to acknowledge: {BODY}", 400
        lost = self.view.session_lost if self.view.session_alerts(self.clock()) else None
        if lost is None:
            return "no lost-session alert is showing (it ended meanwhile): nothing to acknowledge", 409
        if since != lost:
            return f"the alert since {since[:40]} is not the one showing (since {lost}): reload the console", 409
        seen = acknowledged(lost, self.view.live, self.view.session_ack)
        if seen is not None:
            return f"the alert is acknowledged already, by {seen.by} at {seen.at}", 409
        return None, 200


def write_loss(conn: Conn, outcome: str, since: str) -> None:
    reason = (
        f"the broker kept no session for the floor at {since}: lost-session alert shown"
        if outcome == "alerted"
        else f"the lost-session alert of {since} ended: its gaps closed and [gaps] grace_s passed"
    )
    conn.execute(
        "INSERT INTO console_audit (action, outcome, reason, reply) VALUES ('session_lost', %s, %s, %s)",
        (outcome, reason, Jsonb({"since": since})),
    )


def load_session(view: FloorView, conn: Conn) -> None:
    """At start: the last loss, if its alert had not ended, and its standing acknowledgement."""
    row = conn.execute(
        "SELECT outcome, reply->>'since' FROM console_audit WHERE action = 'session_lost' ORDER BY id DESC LIMIT 1"
    ).fetchone()
    if row is None or row[0] != "alerted" or not row[1]:
        return
    view.session_lost = str(row[1])
    ack = conn.execute(
        "SELECT key_id, reply->>'at' FROM console_audit WHERE action = 'acknowledge' AND outcome = 'acknowledged'"
        " AND reply->>'since' = %s ORDER BY id DESC LIMIT 1",
        (view.session_lost,),
    ).fetchone()
    if ack is not None and ack[0] and ack[1]:
        view.session_ack = SessionAck(view.session_lost, str(ack[0]), str(ack[1]))
