"""A command's Ctrl-C in the middle of a statement, ended within about 2 * INTERRUPT_CANCEL_S (docs/floor.md,
"Operations").

psycopg answers a KeyboardInterrupt during a statement by sending the server a cancel request and waiting for the
statement to end, 5 s for each: a server that answers neither (SIGSTOPped, a host gone dark mid-statement) held the
first Ctrl-C of `tablectl floor status`, `report`, `fill-rounds` for about 10 s, saying nothing. A server that is up
takes the cancel in milliseconds, so a shorter bound costs nothing there; past it the connection is closed, as
psycopg does after its own 5 s. This overrides `Connection.wait`, which psycopg does not document as an extension
point: tests/floor/test_ctrl_c.py holds its signature and behaviour, so a psycopg that changes it fails there.

No documented way gives the same bound (looked up for psycopg 3.3.9, the version installed here): its own handling in
`Connection.wait` (on KeyboardInterrupt and, since 3.3, SystemExit: psycopg/psycopg#231, #1406; the re-wait bounded
at all since #1371) calls `_try_cancel(timeout=5.0)` and re-waits `timeout=5.0`, both fixed in the code, with no
parameter, connection attribute or setting for them. `Connection.cancel_safe(timeout=...)` is documented (3.2), and is
what this override calls with the shorter bound; a statement_timeout would bound the statement, not a Ctrl-C.
"""

from __future__ import annotations

from typing import Any, TypeVar

import psycopg
from psycopg import errors, pq, waiting
from psycopg.abc import PQGen

RV = TypeVar("RV")
# The cancel request's round trip, then the cancelled statement's end, each bounded by this (milliseconds when the
# server is up). psycopg's own are 5 s each.
INTERRUPT_CANCEL_S = 1.0


class PromptConnection(psycopg.Connection[tuple[Any, ...]]):
    """floor.db.connect's connection: psycopg's, with a Ctrl-C mid-statement bounded as above. Only the main thread
    gets a KeyboardInterrupt, so the console's and the services' worker threads never take this path."""

    def wait(self, gen: PQGen[RV], interval: float = 0.1, timeout: float | None = None) -> RV:
        try:
            return waiting.wait(gen, self.pgconn.socket, interval=interval, timeout=timeout)
        except KeyboardInterrupt:
            if self.pgconn.transaction_status == pq.TransactionStatus.ACTIVE:
                self._cancel_within(gen, interval)
            raise

    def _cancel_within(self, gen: PQGen[Any], interval: float) -> None:
        """The statement in flight cancelled, its end awaited, each within INTERRUPT_CANCEL_S; else the connection
        closed (its state unknown: nothing may run on it again). A second Ctrl-C meanwhile closes it at once."""
        try:
            self.cancel_safe(timeout=INTERRUPT_CANCEL_S)
            waiting.wait(gen, self.pgconn.socket, interval=interval, timeout=INTERRUPT_CANCEL_S)
        except errors.QueryCanceled:
            pass  # the statement ended by the cancel: the connection is usable (a transaction's block rolls back)
        except Exception:  # no answer in time (CancellationTimeout, the wait's timeout), or the connection failed
            self.pgconn.finish()
        except BaseException:  # a second Ctrl-C
            self.pgconn.finish()
            raise
