"""The lease's "a commit waiting N s" counts from the oldest write still waiting. It was one field for every write:
a second write, queued behind a first one held by a lock in the database, set it to its own (later) start, and the
first write's end cleared it while the second still waited. The link then said "database unreachable" (the wrong
cause: the server answers, a commit waits) and, once the first write ended, read healthy while the second had
waited over half a lease already. Real PostgreSQL (the suite's primary and synchronous standby); the writes are the
link's own store calls, held by row locks another session takes, as a commit held by a lost standby would wait."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable

import psycopg

from floor.sdnotify import Notifier
from link.config import parse_link_config
from link.database import LinkDatabase
from link.records import Contribution
from tests.link.conftest import link_toml

LEASE_MS = 1000  # half a lease: 0.5 s
WAITING = re.compile(r"^a commit waiting ([0-9.]+) s, over half the lease \(0\.5 s\)$")


async def _until(predicate: Callable[[], object], what: str) -> object:
    """Poll what the link or the server says (neither notifies a test of a lock wait or a reason changing)."""
    try:
        async with asyncio.timeout(30):
            while not (got := predicate()):  # noqa: ASYNC110 (a lock wait and a reason have no event)
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out after 30 s waiting for {what}") from None
    return got


def _link_waits_on_a_lock(admin: psycopg.Connection[tuple[object, ...]]) -> bool:
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name = 'tablectl-link' AND wait_event_type = 'Lock'"
    ).fetchone()
    return bool(row and row[0])


async def test_the_oldest_write_still_waiting_is_the_one_counted(link_db: str) -> None:
    config = parse_link_config(link_toml(link_db, "mqtt://127.0.0.1:1", "t-oldest", lease_ms=LEASE_MS))
    db = LinkDatabase(config, Notifier(None))
    await db.call(lambda s: None)  # connected, migrated, the meters seeded
    state_lock = psycopg.connect(link_db)
    level_lock = psycopg.connect(link_db)
    watch = psycopg.connect(link_db, autocommit=True)
    try:
        state_lock.execute("SELECT 1 FROM link_state FOR UPDATE")
        level_lock.execute("SELECT 1 FROM link_level FOR UPDATE")
        # The first write waits on the state row; the link's one thread with it.
        first = asyncio.ensure_future(db.call(lambda s: s.set_status("closed", "test", "c1"), write=True))
        await _until(lambda: _link_waits_on_a_lock(watch), "the first write waiting on the state row")
        await _until(lambda: WAITING.match(db.unhealthy_why() or ""), "the first write waiting over half a lease")
        second_at = time.monotonic()
        row = Contribution("ms-01", "r-1", 2, "progressive", 500)
        second = asyncio.ensure_future(db.call(lambda s: s.contribute([row]), write=True))
        await asyncio.sleep(0)  # the second call's first step: queued behind the first
        why = db.unhealthy_why()
        # The old code: "database unreachable: last answered 0.5 s ago" (the second write's start counted, 0 s).
        assert why is not None and WAITING.match(why), why

        state_lock.commit()  # the first write commits; the second takes the state row, then waits on the levels
        await first
        await _until(lambda: _link_waits_on_a_lock(watch), "the second write waiting on the levels")
        why = str(await _until(db.unhealthy_why, "the second write waiting over half a lease"))
        waited = time.monotonic() - second_at
        # The old code read healthy here (the first write's end cleared the field, and it had just answered), then
        # "database unreachable" half a lease after the first write's end: never the commit that waits.
        found = WAITING.match(why)
        assert found is not None, why
        assert float(found[1]) <= waited + 0.05, (why, waited)
        assert not second.done()
        level_lock.commit()
        assert (await second).new == 1
        assert db.unhealthy_why() is None  # nothing waits, and the server just answered
    finally:
        state_lock.close()
        level_lock.close()
        watch.close()
        db.close()
