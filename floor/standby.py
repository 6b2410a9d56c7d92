"""Whether the archive's primary waits for a synchronous standby that is not there.

With `synchronous_standby_names` set (systemd/postgresql.md) and no such standby streaming, every commit on the
primary waits for it: the floor service archives nothing (its batch's commit never returns, nothing is acknowledged,
the broker keeps the tables' events), yet `floor status` showed every table's last state as "ok" and `check-config`
said "database reachable". `floor status` and `check-config` ask the primary and say it, with the fix.
"""

from __future__ import annotations

import asyncio

import psycopg
import structlog

from controller.core.shown import shown
from floor.config import DatabaseSection
from floor.db import async_connect
from floor.tasks import stopped_within

Conn = psycopg.Connection[tuple[object, ...]]
log = structlog.get_logger("tablectl.floor")
WATCH_S = 5.0  # how often the service asks; a stall is logged within this of the standby's loss
FIX = (
    "start the standby (systemd/postgresql.md); with no standby left, set synchronous_standby_names = '' on the "
    "primary until a new one streams (systemd/postgresql.md, the promotion's step 4)"
)


QUERY = (
    "SELECT current_setting('synchronous_standby_names'), pg_is_in_recovery(),"
    " (SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'),"
    " (SELECT string_agg(application_name || ' ' || coalesce(sync_state, '?'), ', ') FROM pg_stat_replication),"
    " (SELECT count(*) FROM pg_stat_replication WHERE sync_state IS NULL OR sync_state IN ('sync', 'quorum'))"
)


def standby_missing(conn: Conn) -> str | None:
    """None when commits need no standby or one in the list streams synchronously; else what is wrong and the fix.
    A replica's own connection (after a promotion) is not asked: it has no standby of its own to wait for."""
    return judged(conn.execute(QUERY).fetchone())


def judged(row: tuple[object, ...] | None) -> str | None:
    if row is None:
        return None
    names, replica, waiting, streaming, synchronous = row
    # An unprivileged role sees sync_state as NULL: counted as streaming, so a role that cannot tell says nothing.
    if not str(names).strip() or replica or synchronous != 0:
        return None
    return _said(str(names), streaming, waiting)


def _said(names: str, streaming: object, waiting: object) -> str:
    now = f"{waiting} commit(s) waiting for it now" if waiting else "the next commit will wait for it"
    return (
        f"the archive's synchronous standby is not streaming (synchronous_standby_names = '{shown(names)}'; "
        f"standbys streaming: {shown(streaming) if streaming else 'none'}): every commit waits for it, so the floor "
        f"archives nothing meanwhile ({now}; the broker keeps the tables' events); {FIX}"
    )


def before_writing(conn: Conn, what: str) -> str | None:
    """None when a commit would return; else why `what` writes nothing: its commit would wait for the standby for
    ever, silent, until a Ctrl-C (asked before anything is written, files included)."""
    missing = standby_missing(conn)
    return None if missing is None else f"{what}: nothing was written: {missing}"


async def watch_standby(db: DatabaseSection, stop: asyncio.Event) -> None:
    """The service's task: the archive stalled on a missing standby is logged once at error level with the fix, and
    once more when the standby streams again. Its own connection, read-only: the writer's waits in its commit. A
    database it cannot reach is the writer's to report; this asks again at the next turn."""
    conn: psycopg.AsyncConnection[tuple[object, ...]] | None = None
    said: str | None = None
    delay = 0.0
    try:
        while not await stopped_within(stop, delay):
            delay = WATCH_S
            try:
                conn = conn or await async_connect(db)
                now = judged(await (await conn.execute(QUERY)).fetchone())
            except psycopg.Error:
                if conn is not None:
                    await conn.close()
                conn = None
                continue
            if now is not None and said is None:
                log.error("archive stalled: its synchronous standby is not streaming", problem=now)
            elif now is None and said is not None:
                log.info("synchronous standby streaming again: archiving goes on")
            said = now
    finally:
        if conn is not None:
            await conn.close()
