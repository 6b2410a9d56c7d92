"""What the console keeps in the archive's PostgreSQL: the enrolled keys (console_keys) and the record of every
enrolment, log-in, action and approval, refused or not (console_audit). `tablectl floor console keys|approve` use
the same functions. Blocking psycopg calls: the server runs them in a thread (ConsoleRecords.run), which connects once
the server has answered an asynchronous connect raced against the console's stop (floor/reach.py), and whose
statement the stop cuts (floor/stmt_stop.py): a database host gone dark, before or mid-statement, holds no stop."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import psycopg
import structlog
from aiohttp import web
from psycopg.types.json import Jsonb

from controller.core.shown import one_line
from floor.config import KEY_ID, ConsoleKey, DatabaseSection
from floor.console.auth import KeyEntry
from floor.console.limits import Run
from floor.console.plumbing import storable, storable_json
from floor.console.verbs import ROLES
from floor.db import connect, conninfo
from floor.reach import answered
from floor.stmt_stop import cut

log = structlog.get_logger("tablectl.console")


STOPPING = "the floor is stopping: ask again once `tablectl floor` runs again"
ARCHIVE_FIX = "check that the floor's PostgreSQL is up and reachable (the floor's log says), then ask again"


class ArchiveUnavailable(web.HTTPServiceUnavailable):
    """A request the archive could not answer (the database unreachable, or the console stopping): a 503 naming the
    problem and the fix, as the console's JSON errors do (floor/console/plumbing.py)."""

    def __init__(self, problem: str) -> None:
        super().__init__(text=json.dumps({"error": problem}), content_type="application/json")
        self.problem = problem


Conn = psycopg.Connection[tuple[Any, ...]]


class ConsoleRecords:
    """The console's reads and writes of the archive, each on a connection of its own in a worker thread, so the
    event loop keeps serving browsers while PostgreSQL answers."""

    def __init__(self, database: DatabaseSection, supervisors: Sequence[ConsoleKey]) -> None:
        self.database = database
        self.supervisors = supervisors
        self.stopping = asyncio.Event()
        self._lock = threading.Lock()  # the threads' connections, and whether the stop has cut them
        self._halted = False
        self._open: set[Conn] = set()

    async def run(self, fn: Callable[[Conn], Any]) -> Any:
        """`fn(conn)` in a worker thread, once the server answered; ArchiveUnavailable (a 503) when it cannot be
        reached or the console stops first (its statement then cut)."""
        if self.stopping.is_set():
            raise ArchiveUnavailable(STOPPING)
        try:
            # A synchronous connect to a host gone dark waits for connect_timeout, and the process's exit for it.
            if not await answered(conninfo(self.database), self.stopping):
                raise ArchiveUnavailable(STOPPING)
            return await asyncio.to_thread(self._in_thread, fn)
        except psycopg.OperationalError as err:
            if self.stopping.is_set():
                raise ArchiveUnavailable(STOPPING) from None
            problem = f"the floor's archive could not be reached ({one_line(err)[:300]})"
            raise ArchiveUnavailable(f"{problem}: {ARCHIVE_FIX}") from None

    def _in_thread(self, fn: Callable[[Conn], Any]) -> Any:
        with connect(self.database) as conn:
            with self._lock:
                if self._halted:  # stopped while this thread connected: nothing is started
                    raise psycopg.OperationalError(STOPPING)
                self._open.add(conn)
            try:
                return fn(conn)
            finally:
                with self._lock:
                    self._open.discard(conn)

    def stop(self) -> None:
        """The console's stop: no request connects again, and a statement in flight (a host gone dark mid-statement
        answers neither it nor a cancel) ends with its connection cut, so no worker thread holds the exit."""
        self.stopping.set()
        with self._lock:
            self._halted = True
            for conn in self._open:
                cut(conn)

    async def audit(
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
        # What a client sent goes in as text PostgreSQL takes (a NUL or a lone surrogate from JSON or a path's %00
        # made the INSERT fail and the request a 500): the record keeps the refusal instead.
        key_id, reason, table_id, verb, command_id, envelope = (
            None if v is None else storable(v) for v in (key_id, reason, table_id, verb, command_id, envelope)
        )
        outcome = storable(outcome)  # a table's reply names it
        try:
            kept = None if reply is None else storable_json(reply)
        except RecursionError:  # a reply nested past what Python walks: its gist, not a failed INSERT
            kept = {"not_kept": "the reply nests too deep to keep", "outcome": outcome}

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
                    Jsonb(kept) if kept is not None else None,
                    remote,
                ),
            )

        await self.run(write)
        log.info("console audit", action=action, outcome=outcome, key_id=key_id, verb=verb, table_id=table_id)

    async def throttled(self, run: Run, limit: int) -> None:
        """A client's run of refusals past [console] attempts_per_minute as one audit row (action `throttle`), written
        at its first refusal and brought up to date (count, first and last seen) as it goes on: a flood leaves one
        row, not one a request, and loses nothing an examiner asks (who, how often, from when to when)."""
        evidence = run.evidence(limit)
        reason = storable(
            f"{run.count} enrolments or log-ins from {run.client} refused unjudged between {run.first.isoformat()}"
            f" and {run.last.isoformat()}: more than {limit} a minute ([console] attempts_per_minute)"
        )
        client, row = storable(run.client), run.row

        def write(conn: psycopg.Connection[tuple[Any, ...]]) -> int:
            if row is None:
                got = conn.execute(
                    "INSERT INTO console_audit (action, outcome, reason, reply, remote)"
                    " VALUES ('throttle', 'refused', %s, %s, %s) RETURNING id",
                    (reason, Jsonb(evidence), client),
                ).fetchone()
                if got is None:  # INSERT ... RETURNING returns its row
                    raise RuntimeError("console_audit: the throttle row's INSERT returned no id")
                return int(got[0])
            conn.execute(
                "UPDATE console_audit SET reason = %s, reply = %s WHERE id = %s", (reason, Jsonb(evidence), row)
            )
            return row

        before = run.written_count, run.written
        run.written_count, run.written = run.count, run.last  # noted first: a request meanwhile does not write too
        try:
            run.row = await self.run(write)
        except BaseException:  # not written (the archive gone, the stop's bound): still owed, and said at stop
            run.written_count, run.written = before
            raise
        log.info("console audit", action="throttle", outcome="refused", remote=run.client, count=run.count)

    async def key(self, key_id: str) -> KeyEntry | None:
        """The key that may log in as `key_id`: FLOOR.toml's [[console.supervisors]] first, then an approved
        enrolment. None for an id no key can have (enrolment and FLOOR.toml hold every key id to KEY_ID), asked
        nothing of PostgreSQL: a NUL or a lone surrogate in one made the query fail."""
        if not re.fullmatch(KEY_ID, key_id):
            return None
        for k in self.supervisors:
            if k.key_id == key_id:
                return KeyEntry(k.key_id, k.role, k.public_key)

        def find(conn: psycopg.Connection[tuple[Any, ...]]) -> KeyEntry | None:
            row = conn.execute(
                "SELECT key_id, role, public_key FROM console_keys WHERE key_id = %s AND approved_at IS NOT NULL",
                (key_id,),
            ).fetchone()
            return KeyEntry(str(row[0]), str(row[1]), str(row[2])) if row else None

        found: KeyEntry | None = await self.run(find)
        return found


def is_pending(conn: psycopg.Connection[tuple[Any, ...]], key_id: str) -> bool:
    """Whether an enrolment of `key_id` awaits an administrator's approval."""
    row = conn.execute("SELECT 1 FROM console_keys WHERE key_id = %s AND approved_at IS NULL", (key_id,)).fetchone()
    return row is not None


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


def reject_key(conn: psycopg.Connection[tuple[Any, ...]], key_id: str, by: str) -> str:
    """`tablectl floor console reject`: a pending enrolment is removed (it never logged in); its key id is free again.
    An approved key is not touched here: it may be in tables' configs (docs/console.md, "Threat model")."""
    row = conn.execute("SELECT role, approved_at FROM console_keys WHERE key_id = %s", (key_id,)).fetchone()
    if row is None:
        raise LookupError(f"no key {key_id!r} is enrolled: `tablectl floor console keys` lists them")
    if row[1] is not None:
        raise ValueError(f"key {key_id!r} is approved, not pending: remove it from the tables' configs to revoke it")
    conn.execute("DELETE FROM console_keys WHERE key_id = %s AND approved_at IS NULL", (key_id,))
    conn.execute(
        "INSERT INTO console_audit (action, key_id, role, outcome, reason) VALUES ('reject', %s, %s, 'rejected', %s)",
        (key_id, str(row[0]), f"by {by}"),
    )
    conn.commit()
    return f"enrolment of {key_id} rejected"


def pending(conn: psycopg.Connection[tuple[Any, ...]]) -> int:
    row = conn.execute("SELECT count(*) FROM console_keys WHERE approved_at IS NULL").fetchone()
    return int(row[0]) if row else 0


def enrolled(conn: psycopg.Connection[tuple[Any, ...]]) -> Iterable[tuple[Any, ...]]:
    return conn.execute(
        "SELECT key_id, role, public_key, enrolled_at, approved_at, approved_by FROM console_keys ORDER BY key_id"
    ).fetchall()
