"""The link's one database connection, on its one worker thread (docs/linked-progressives.md, "The books in
PostgreSQL"): every call runs there, one at a time, so the store's transactions never interleave, and a table is
answered only after the commit returned. A lost server raises DatabaseDown and is reconnected at the next call
through the multi-host DSN, which follows the writable primary after a promotion; meanwhile the link is not
healthy, so no lease is granted and nothing is acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

import psycopg
import structlog
from psycopg.conninfo import make_conninfo

from floor.db import connect_bound
from floor.reach import answered
from floor.sdnotify import Notifier
from floor.stmt_stop import cut
from link.config import LinkConfig, secret
from link.records import State
from link.schema import migrate
from link.store import LinkStore

log = structlog.get_logger("tablectl.link")
T = TypeVar("T")
# A call on the thread at the stop is waited for this long (a commit takes milliseconds), then its connection cut.
CUT_AFTER_S = 5.0


class DatabaseDown(Exception):
    pass


def conninfo(config: LinkConfig) -> str:
    password = secret(config.database.password_file, "database.password_file")
    extra: dict[str, str | int] = {"password": password} if password is not None else {}
    extra.update(connect_bound(config.database))  # [database] connect_timeout_s, as the floor's
    return make_conninfo(config.database.dsn, application_name="tablectl-link", options="-c TimeZone=UTC", **extra)


class LinkDatabase:
    """The store on its thread, with what the service last read of it (the state, the display) and how recently
    the server answered: the leases depend on it."""

    def __init__(self, config: LinkConfig, notifier: Notifier, stopping: asyncio.Event | None = None) -> None:
        self.config = config
        self.notifier = notifier
        self.stopping = stopping or asyncio.Event()  # the service's stop: it ends a reconnect that hangs
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="link-db")
        self.store: LinkStore | None = None
        self.state: State | None = None
        self.display: dict[str, int] = {}
        self.ok_at = 0.0
        # When each write still waiting began, by its own token: the oldest is what the lease counts (one field for
        # all, a later write's start hid an earlier one's wait, and the earlier one's end cleared the later one's).
        self.writes_waiting: dict[object, float] = {}
        self.running_since: float | None = None  # when the call now on the thread began (set on the thread)
        self.conn: psycopg.Connection[tuple[object, ...]] | None = None  # the thread's latest, for the stop's cut
        self.reconnecting: asyncio.Task[None] | None = None  # the one reconnect under way, shared by its callers

    def _connect(self) -> LinkStore:
        if self.store is not None:
            with contextlib.suppress(psycopg.Error):
                self.store.conn.close()
        self.store = None
        self.conn = conn = psycopg.connect(conninfo(self.config), autocommit=True)
        migrate(conn)
        store = LinkStore(conn)
        if store.initialise(self.config):
            log.info("a new link: meters seeded from the config", link_id=self.config.link.id)
        self.store = store
        self.refresh()
        return store

    def refresh(self) -> None:
        """Read the state and the display again; on the database thread (pass it to `call`)."""
        if self.store is None:  # called through `call`, which connects first
            raise DatabaseDown("not connected to the link's database")
        self.state = self.store.state()
        self.display = self.store.display()

    async def call(self, fn: Callable[[LinkStore], T], *, write: bool = False) -> T:
        """Run fn(store) on the database thread; DatabaseDown (and a reconnect under way) if the server is lost."""
        loop = asyncio.get_running_loop()

        def call() -> T:
            self.running_since = time.monotonic()
            try:
                if (store := self.store) is None:  # a call queued behind a reconnect that failed
                    raise DatabaseDown("not connected to the link's database")
                out = fn(store)
            finally:
                self.running_since = None
            self.ok_at = time.monotonic()
            return out

        token = object()
        if write:
            self.writes_waiting[token] = time.monotonic()
        try:
            if self.store is None:
                await self._reconnected()
            return await loop.run_in_executor(self.executor, call)
        except psycopg.OperationalError as err:
            self.ok_at = 0.0
            if self.store is not None:
                with contextlib.suppress(psycopg.Error):
                    self.store.conn.close()
            self.store = None
            log.error("PostgreSQL lost; reconnecting", error=str(err).strip()[:300])
            self.notifier.send(STATUS=f"PostgreSQL unreachable: {str(err).strip()[:200]}")
            raise DatabaseDown(str(err)) from None
        finally:
            self.writes_waiting.pop(token, None)

    async def _reconnected(self) -> None:
        """One reconnect at a time: the calls of an outage (the probe's, each table's request, a probe's call again
        after its timeout while the connect still ran) share the one under way, where each asked for a connection of
        its own at once. Shielded: a caller's cancel (the probe's timeout) leaves it to the others."""
        if self.reconnecting is None or self.reconnecting.done():
            self.reconnecting = asyncio.create_task(self._reconnect(), name="link-db-reconnect")
            # Retrieved here too: a reconnect whose callers were all cancelled has its failure read, not warned of.
            self.reconnecting.add_done_callback(lambda t: t.cancelled() or t.exception())
        await asyncio.shield(self.reconnecting)

    async def _reconnect(self) -> None:
        # Asked first, asynchronously, so that a stop ends it: to a host gone dark the thread's connect would wait
        # for connect_timeout (for ever without one), and the link's exit with it (floor/reach.py).
        if not await answered(conninfo(self.config), self.stopping):
            raise DatabaseDown("stopped before the database answered")
        await asyncio.get_running_loop().run_in_executor(self.executor, self._connect_timed)

    def _connect_timed(self) -> None:
        """`_connect` timed as a call is: a migration stuck on a stalled server is said by the probe (running_for)."""
        self.running_since = time.monotonic()
        try:
            self._connect()
        finally:
            self.running_since = None

    def healthy(self) -> bool:
        return self.unhealthy_why() is None

    def unhealthy_why(self) -> str | None:
        """Why no lease may be granted now, with the figures (None: the database answers and commits in time)."""
        now = time.monotonic()
        half = self.config.link.lease_ms / 2000
        started = min(self.writes_waiting.values(), default=None)
        if started is not None and now - started > half:
            # A commit waiting (a standby gone): the link is not operating.
            return f"a commit waiting {now - started:.1f} s, over half the lease ({half:.1f} s)"
        if now - self.ok_at >= half:
            if self.ok_at == 0.0:
                return "database unreachable"
            return (
                f"database unreachable: last answered {now - self.ok_at:.1f} s ago, over half the lease ({half:.1f} s)"
            )
        return None

    def running_for(self) -> float:
        """How long the call on the database thread has run, 0 when none runs (the probe says a stuck one)."""
        since = self.running_since
        return 0.0 if since is None else time.monotonic() - since

    def status(self) -> str:
        return self.state.status if self.state else "closed"

    def close(self) -> None:
        """At the service's stop, once no task awaits a call any more. A call still on the thread (a commit) is waited
        for, CUT_AFTER_S at most; past that the server has stopped answering mid-statement (SIGSTOPped, a host gone
        dark), which no cancel reaches: its connection is cut (floor/stmt_stop.py), or the thread, and the process's
        exit with it, would wait for ever. Cut, its transaction is rolled back, as a kill would leave it."""
        if not wait([self.executor.submit(lambda: None)], timeout=CUT_AFTER_S).done and self.conn is not None:
            log.warning("a database call still ran at the stop; cutting its connection", waited_s=CUT_AFTER_S)
            cut(self.conn)
        self.executor.shutdown(wait=True)
        if self.store is not None:
            self.store.conn.close()
