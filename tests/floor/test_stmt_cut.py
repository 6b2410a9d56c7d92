"""A stop reaches a statement of the older days' work whose server stopped answering mid-statement (its processes
SIGSTOPped: the cancel request is taken by the kernel and never answered either). The stop's cancel fails after
CANCEL_S, and the connection is cut (floor.stmt_stop.cut): the worker's statement ends with OperationalError, so the
thread, which the process's exit waits for, ends. On the old code the stop said it waited for the statement, for ever:
the thread was still in it at the guard's 30 s."""

from __future__ import annotations

import threading

import psycopg
import pytest
from structlog.testing import capture_logs

from floor.pgcluster import PgCluster
from floor.stmt_stop import StatementStop
from tests.floor.pgprocs import resume, stall

pytestmark = pytest.mark.floor


def test_a_stop_cuts_a_statement_its_stalled_server_never_answers() -> None:
    cluster = PgCluster.create(durable=False)
    stalled: list[int] = []
    try:
        cluster.start()
        halt = StatementStop("round summary")
        ended: list[BaseException] = []
        conn = psycopg.connect(cluster.dsn(), autocommit=True)
        sent = threading.Event()

        def work() -> None:
            try:
                if halt.enter(conn):
                    sent.set()
                    # conn's own execute, not halt's, which refuses once stopped: the statement is sent whenever the
                    # stop lands, and the cut comes CANCEL_S after it, so the test does not race the stop.
                    conn.execute("SELECT 1")  # to a server that no longer answers
            except psycopg.OperationalError as err:
                ended.append(err)
            finally:
                halt.leave()

        assert cluster.proc is not None
        stalled = stall(cluster.proc.pid)
        worker = threading.Thread(target=work, name="older-days")
        worker.start()
        assert sent.wait(30)
        with capture_logs() as logs:
            halt.stop()
        worker.join(30)
        assert not worker.is_alive(), "the statement still waited 30 s after the stop"
        assert len(ended) == 1 and "closed" in str(ended[0]), ended
        assert [e["event"] for e in logs] == [
            "round summary: the stop could not cancel its statement; cutting its connection"
        ]
        conn.close()
    finally:
        resume(stalled)
        cluster.remove()
