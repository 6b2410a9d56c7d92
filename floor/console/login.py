"""The console's keys and sessions over HTTP: enrolment, the signed log-in challenge, the session cookie and log-out
(docs/console.md). auth.py judges (pure); this side reads the request, keeps the record (records.py) and answers."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import psycopg
import structlog
from aiohttp import web
from pydantic import ValidationError

from controller.core.shown import one_line
from floor import gaps
from floor.config import KEY_ID, ConsoleKey, ConsoleSection
from floor.console.auth import LoginRefused, Sessions
from floor.console.limits import Attempts, Refusals, Run, Ticks
from floor.console.plumbing import COOKIE, check_csrf, http_error, json_body, origin, session_of
from floor.console.records import ArchiveUnavailable, ConsoleRecords, is_pending, pending
from floor.console.verbs import LINK_VERBS, ROLES, VERBS, allowed, link_allowed

log = structlog.get_logger("tablectl.console")


class LoginDesk:
    def __init__(
        self,
        console: ConsoleSection,
        sessions: Sessions,
        records: ConsoleRecords,
        clock: Callable[[], datetime],
        ticks: Ticks = time.monotonic,
    ) -> None:
        self.console = console
        self.sessions = sessions
        self.records = records
        # The console's clock (the floor's: the database's in the service) for what is a time: a challenge's and a
        # session's end (the page shows `expires`, and measures on the floor's clock) and the refusals' evidence in
        # the audit. `ticks` (monotonic) for what is a duration: the rate limit's minute (limits.py says why).
        self.clock = clock
        self.ticks = ticks
        self.on_enrol: Callable[[str, str, str], None] | None = None  # the demo admits a key to its tables here
        self.attempts = Attempts(console.attempts_per_minute)
        self.refusals = Refusals()

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/api/session", self.session_info)
        app.router.add_post("/api/enrol", self.enrol)
        app.router.add_post("/api/login/challenge", self.login_challenge)
        app.router.add_post("/api/login", self.login)
        app.router.add_post("/api/logout", self.logout)

    async def session_info(self, request: web.Request) -> web.Response:
        s = self.sessions.get(request.cookies.get(COOKIE), self.clock())
        verbs = {n: {"roles": sorted(v.roles), "confirm": v.confirm, "rule": v.rule} for n, v in VERBS.items()}
        link_verbs = {
            n: {"roles": sorted(v.roles), "confirm": v.confirm, "rule": v.rule} for n, v in LINK_VERBS.items()
        }
        # The most seqs one resend asks for, read when asked (floor/gaps.py): the page's resend buttons use it.
        most = gaps.MAX_SEQS
        if s is None:
            return web.json_response(
                {"logged_in": False, "verbs": verbs, "link_verbs": link_verbs, "resend_max_seqs": most}
            )
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
                "resend_max_seqs": most,
            }
        )

    async def gate(self, request: web.Request) -> str:
        """The client's address, once it may try enrolling or logging in; 429 with Retry-After while it is over
        [console] attempts_per_minute (its body not read), the refusal added to its run's audit row."""
        client = request.remote or "unknown"
        now = self.clock()
        wait = self.attempts.retry_after(client, self.ticks())
        if wait is None:
            ended = self.refusals.ended(client)
            if ended is not None and ended.count != ended.written_count:
                await self._last_write(ended)
            return client
        run = self.refusals.refused(client, now)
        if run.due(now):
            await self.records.throttled(run, self.attempts.limit)
        raise http_error(
            429,
            f"too many enrolments and refused log-ins from {client}: at most {self.attempts.limit} a minute"
            f" ([console] attempts_per_minute); try again in {wait} s",
            headers={"Retry-After": str(wait)},
        )

    async def _last_write(self, run: Run) -> None:
        """An ended run's last write. Failed (the archive down or stalled, the request cancelled), the run is out of
        `runs` already: it is said now with what the audit lacks, and kept for the stop's write and line."""
        try:
            await self.records.throttled(run, self.attempts.limit)
        except BaseException as err:
            problem = err.problem[:400] if isinstance(err, ArchiveUnavailable) else one_line(err)[:300] or repr(err)
            dropped = self.refusals.still_owed(run)
            log.warning(
                "console: a run of refusals ended and its audit row was not brought up to date",
                **run.evidence(self.attempts.limit), not_in_audit=run.count - run.written_count, audit_row=run.row,
                problem=problem, owed_runs=len(self.refusals.owed), given_up_runs=dropped,
                fix="this line is their record until the stop writes them (its line names any it cannot): keep it"
                " with the audit; check the floor's PostgreSQL",
            )  # fmt: skip
            raise

    async def flush(self) -> None:
        """At stop: each run of refusals written as it stands, the ended ones whose last write failed too."""
        for run in self.refusals.unwritten():
            await self.records.throttled(run, self.attempts.limit)

    async def flush_at_stop(self, bound_s: float) -> None:
        """The refusals' last counts if the archive answers within `bound_s` (a host gone dark holds the stop no
        longer). What it did not take is said in full in one line, then its only record (docs/console.md, "Limits")."""
        try:
            async with asyncio.timeout(bound_s):
                await self.flush()
            return
        except TimeoutError:
            problem = f"the archive did not answer within {bound_s} s"
        except ArchiveUnavailable as err:  # its words name the server and the fix
            problem = err.problem[:400]
        except Exception as err:  # the database may be what is stopping
            problem = one_line(err)[:300]
        runs = self.refusals.unwritten()
        log.warning(
            "console: the refusals' audit rows were not brought up to date at stop",
            problem=problem, waited_s=bound_s, refusals=sum(r.count - r.written_count for r in runs),
            runs=[{**r.evidence(self.attempts.limit), "not_in_audit": r.count - r.written_count, "audit_row": r.row}
                  for r in runs],
            fix="this line is their record (client, count, first and last seen, audit row): keep it with the audit;"
            " check the floor's PostgreSQL",
        )  # fmt: skip

    async def enrol(self, request: web.Request) -> web.Response:
        client = await self.gate(request)
        body = await json_body(request, self.console.request_timeout_s)
        key_id, role, public = body.get("key_id"), body.get("role"), body.get("public_key")
        try:
            key = ConsoleKey.model_validate({"key_id": key_id, "role": role, "public_key": public})
        except ValidationError as err:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors())
            raise http_error(
                400, f"the enrolment is not usable: {problems} (role is one of {', '.join(ROLES)})"
            ) from None
        approve = self.console.demo_approve_all
        most = self.console.max_pending_enrolments
        self.attempts.count(client, self.ticks())  # each may add a row: counted whatever comes of it

        def store(conn: psycopg.Connection[tuple[Any, ...]]) -> str:
            # One enrolment at a time (the count and the insert together): concurrent ones cannot pass the cap.
            conn.execute("LOCK TABLE console_keys IN SHARE ROW EXCLUSIVE MODE")
            row = conn.execute("SELECT public_key FROM console_keys WHERE key_id = %s", (key.key_id,)).fetchone()
            if row is not None:
                return "same" if row[0] == key.public_key else "taken"
            if not approve and pending(conn) >= most:
                return "full"
            conn.execute(
                "INSERT INTO console_keys (key_id, role, public_key, approved_at, approved_by) VALUES"
                " (%s, %s, %s, CASE WHEN %s THEN now() END, CASE WHEN %s THEN 'demo_approve_all' END)"
                " ON CONFLICT DO NOTHING",
                (key.key_id, key.role, key.public_key, approve, approve),
            )
            return "new"

        got = await self.records.run(store)
        if got == "full":
            problem = (
                f"{most} enrolments are already waiting for approval, as many as this floor takes ([console]"
                " max_pending_enrolments): ask an administrator to approve (`tablectl floor --config FLOOR.toml console"
                " approve KEY_ID`) or reject (`... console reject KEY_ID`) the pending ones (`... console keys` lists"
                " them), then enrol again"
            )
            await self.records.audit(request, "enrol", "refused", key_id=key.key_id, role=key.role, reason=problem)
            raise http_error(409, problem)
        if got == "taken":
            await self.records.audit(
                request, "enrol", "refused", key_id=key.key_id, role=key.role, reason="key id taken"
            )
            raise http_error(409, f"key id {key.key_id!r} is enrolled with another key: choose another key id")
        await self.records.audit(
            request, "enrol", "approved" if approve else "pending", key_id=key.key_id, role=key.role
        )
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
        body = await json_body(request, self.console.request_timeout_s)
        key_id = body.get("key_id")
        if not isinstance(key_id, str) or not re.fullmatch(KEY_ID, key_id):
            raise http_error(
                400, "give key_id: the key id this browser enrolled (1 to 64 letters, digits, '_', '.', '@' or '-')"
            )
        try:
            c = self.sessions.challenge(key_id, self.clock())
        except LoginRefused as err:
            raise http_error(409, str(err)) from None
        return web.json_response({"challenge": c, "origin": origin(request)})

    async def login(self, request: web.Request) -> web.Response:
        client = await self.gate(request)
        body = await json_body(request, self.console.request_timeout_s)
        key_id, challenge, signature = body.get("key_id"), body.get("challenge"), body.get("signature")
        if not (isinstance(key_id, str) and isinstance(challenge, str) and isinstance(signature, str)):
            raise http_error(400, "give key_id, challenge and signature, each a string")
        key = await self.records.key(key_id)
        awaiting = (
            key is None
            and re.fullmatch(KEY_ID, key_id) is not None
            and await self.records.run(lambda conn: is_pending(conn, key_id))
        )
        try:
            s = self.sessions.login(key, key_id, challenge, signature, origin(request), self.clock(), bool(awaiting))
        except LoginRefused as err:
            self.attempts.count(client, self.ticks())
            await self.records.audit(request, "login", "refused", key_id=key_id[:64], reason=str(err))
            raise http_error(403, str(err)) from None
        await self.records.audit(request, "login", "accepted", key_id=s.key_id, role=s.role)
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
        await json_body(request, self.console.request_timeout_s)
        s = session_of(self.sessions, request, self.clock())
        check_csrf(request, s)
        self.sessions.logout(s.token)
        await self.records.audit(request, "logout", "done", key_id=s.key_id, role=s.role)
        response = web.json_response({"logged_out": True})
        response.del_cookie(COOKIE, path="/")
        return response
