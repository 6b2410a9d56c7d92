"""What the console keeps in the archive's PostgreSQL: the enrolled keys (console_keys) and the record of every
enrolment, log-in, action and approval, refused or not (console_audit). `tablectl floor console keys|approve` use
the same functions. Blocking psycopg calls: the server runs them in a thread (ConsoleRecords.run)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import psycopg
import structlog
from aiohttp import web
from psycopg.types.json import Jsonb

from floor.config import KEY_ID, ConsoleKey, DatabaseSection
from floor.console.auth import KeyEntry
from floor.console.plumbing import storable
from floor.console.verbs import ROLES
from floor.db import connect

log = structlog.get_logger("tablectl.console")


class ConsoleRecords:
    """The console's reads and writes of the archive, each on a connection of its own in a worker thread, so the
    event loop keeps serving browsers while PostgreSQL answers."""

    def __init__(self, database: DatabaseSection, supervisors: Sequence[ConsoleKey]) -> None:
        self.database = database
        self.supervisors = supervisors

    async def run(self, fn: Callable[[psycopg.Connection[tuple[Any, ...]]], Any]) -> Any:
        def run() -> Any:
            with connect(self.database) as conn:
                return fn(conn)

        return await asyncio.to_thread(run)

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

        await self.run(write)
        log.info("console audit", action=action, outcome=outcome, key_id=key_id, verb=verb, table_id=table_id)

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
