"""A service's stop reaching a statement its worker thread is in: the older days' round summary (floor/rounds.py)
and their ts index build (floor/ts_index.py) both run one long statement at a time on a connection of their own,
in a thread, and a big day's statement takes minutes: waited for, systemd's TimeoutStopSec ends the stop with a
SIGKILL. `StatementStop` cancels it instead, and `run_stoppable` runs such a worker beside the service's stop event.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
import structlog

Conn = psycopg.Connection[tuple[Any, ...]]
log = structlog.get_logger("tablectl.floor")
T = TypeVar("T")

# A stop's cancel request waits this long at most for the server to take it (a local request takes milliseconds).
CANCEL_S = 5.0


def cut(conn: Conn) -> None:
    """Shut down `conn`'s socket from any thread, so a statement a thread waits in ends with OperationalError ("server
    closed the connection unexpectedly"): the way out when the server takes no cancel either (SIGSTOPped, a host gone
    dark mid-statement), whose wait no stop reaches otherwise. Shut down, not closed: the thread's libpq still owns
    the descriptor, and a number closed under it could be reused by another connection."""
    with contextlib.suppress(OSError, psycopg.Error):
        dup = socket.socket(fileno=os.dup(conn.pgconn.socket))
        with dup:
            dup.shutdown(socket.SHUT_RDWR)


class Stopped(Exception):
    """Raised by `StatementStop.execute` instead of sending a statement once stopped."""


class StatementStop:
    """`stop()`, from any thread, cancels the statement a worker is in between its `enter(conn)` and `leave()`; work
    not entered yet is not started. `what` names the work in the log ("events ts index", "round summary")."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.stopped = threading.Event()
        self._lock = threading.Lock()  # a cancel is sent only while the work's statements run, never after
        self._conn: Conn | None = None

    def enter(self, conn: Conn) -> bool:
        """Before a unit of work's statements: False once stopped (the unit is not started)."""
        with self._lock:
            if self.stopped.is_set():
                return False
            self._conn = conn
            return True

    def execute(self, conn: Conn, sql: bytes, params: tuple[object, ...] | None = None) -> psycopg.Cursor[Any]:
        """`conn.execute`, unless stopped (raises Stopped): a cancel sent between two of a unit's statements reaches
        neither (the server ignores one while idle), so the next, maybe the long one, asks first."""
        if self.stopped.is_set():
            raise Stopped(self.what)
        return conn.execute(sql, params)

    def leave(self) -> None:
        with self._lock:
            self._conn = None

    def stop(self) -> None:
        """Blocks for the cancel request's round trip, at most CANCEL_S (psycopg's cancel_safe: with libpq 17 or
        later a cancel request encrypted as the connection is, else libpq's older one)."""
        if self.stopped.is_set():
            return
        with self._lock:
            self.stopped.set()
            if self._conn is None:
                return
            try:
                self._conn.cancel_safe(timeout=CANCEL_S)
            except psycopg.Error as err:
                # A server that takes no cancel (SIGSTOPped, gone dark) would hold the statement, and the process's
                # exit, for ever: its connection is cut instead, and what the work left is said as for a lost one.
                log.warning(
                    f"{self.what}: the stop could not cancel its statement; cutting its connection", error=str(err)
                )
                cut(self._conn)


async def run_stoppable(work: Callable[[], T], stop: asyncio.Event, halt: StatementStop) -> T:
    """`work()` in a thread (its statements entered in `halt`), its statement in flight cancelled when `stop` is set;
    returns what it returns once it has returned (a cancelled statement's work returns at once)."""
    working = asyncio.ensure_future(asyncio.to_thread(work))
    watching = asyncio.ensure_future(stop.wait())
    try:
        done, _ = await asyncio.wait({working, watching}, return_when=asyncio.FIRST_COMPLETED)
        if working not in done:
            await asyncio.to_thread(halt.stop)  # a wait ends now, a statement is cancelled
        return await working
    finally:
        # Cancelled too (the service closing its tasks): the thread is neither left waiting nor left in its statement,
        # which the process's exit would wait for. A no-op once stopped above.
        halt.stop()
        watching.cancel()
