"""A client's run of throttled log-ins ends (its minute passed) while the archive has stopped answering: the run is
dropped from memory as its last write is tried, and that write fails. Before, nothing said the refusals the audit
lacked: the run was gone from the desk, so the stop's line (which names the runs it could not write) did not name it
either. Now the failure is said at the time with the run's evidence, and the run is kept for the stop's last write
and its warning line.

Real parts: the console served in this process on a loopback socket, a PostgreSQL cluster of the test's own whose
processes are SIGSTOPped (tests/floor/pgprocs.stall: it takes connections and answers nothing), the test's clock."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from floor.pgcluster import PgCluster
from tests.broker import Mosquitto
from tests.floor.console_served import Served, serve
from tests.floor.pgprocs import resume, stall

pytestmark = pytest.mark.floor
STOP_LINE = "console: the refusals' audit rows were not brought up to date at stop"
LOST_LINE = "console: a run of refusals ended and its audit row was not brought up to date"


@pytest.fixture
def own_cluster() -> Iterator[PgCluster]:
    cluster = PgCluster.create(durable=False)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture
async def served(own_cluster: PgCluster, tmp_path: Path, mosquitto: Mosquitto) -> AsyncIterator[Served]:
    dsn = own_cluster.create_database("floor_lost_run", connect_timeout_s=2)
    async for s in serve(dsn, tmp_path, mosquitto.url, "attempts_per_minute = 2"):
        yield s


async def test_a_run_whose_last_write_fails_when_it_ends_is_said_and_kept_for_the_stop(
    own_cluster: PgCluster, served: Served
) -> None:
    stalled: list[int] = []
    try:
        for _ in range(2):
            assert (await served.bad_login())[0] == 403
        start = served.clock.now
        for _ in range(3):  # the first refusal writes the run's row; the next two, within a second, are owed
            assert (await served.bad_login())[0] == 429
        ((row, written),) = served.audit("SELECT id, reply->>'count' FROM console_audit WHERE action = 'throttle'")
        assert written == "1"

        assert own_cluster.proc is not None
        stalled = stall(own_cluster.proc.pid)
        served.clock.now = start + timedelta(seconds=61)  # the client may try again: its run ends, written last
        with capture_logs() as logs:
            status, body = await served.bad_login()
            assert status == 503, body
            await served.server.stop()
        said = [e for e in logs if e["log_level"] in ("warning", "error")]
        assert [e["event"] for e in said] == [LOST_LINE, STOP_LINE], said
        lost, stop = said
        assert (lost["client"], lost["count"], lost["not_in_audit"], lost["audit_row"]) == ("127.0.0.1", 3, 2, row)
        assert "could not be reached" in lost["problem"], lost
        assert stop["refusals"] == 2, stop
        assert [(r["client"], r["count"], r["not_in_audit"], r["audit_row"]) for r in stop["runs"]] == [
            ("127.0.0.1", 3, 2, row)
        ], stop
    finally:
        resume(stalled)  # before the fixture's stop and the cluster's removal
