"""The private PostgreSQL helper the tests, benches and demos use: a synchronous standby made with pg_basebackup
holds every committed row, and promoted after the primary's kill -9 it takes writes (issue 15 builds on this)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from floor.pgcluster import ClusterError, PgCluster
from tests.floor.pgprocs import resume, stall

pytestmark = pytest.mark.floor


def test_a_synchronous_standby_keeps_what_the_primary_committed_and_can_be_promoted() -> None:
    primary = PgCluster.create(durable=False)
    standby: PgCluster | None = None
    try:
        primary.start()
        standby = primary.add_standby("standby1", synchronous=True)
        with psycopg.connect(primary.dsn(), autocommit=True) as conn:
            state = conn.execute("SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'")
            assert state.fetchone() == ("sync",)
            conn.execute("CREATE TABLE t (n int)")
            conn.execute("INSERT INTO t SELECT generate_series(1, 100)")
        primary.kill()
        standby.promote()
        with psycopg.connect(standby.dsn(), autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM t").fetchone() == (100,)
            conn.execute("INSERT INTO t VALUES (101)")
    finally:
        if standby is not None:
            standby.remove()
        primary.remove()


def test_a_database_the_cluster_cannot_make_says_whether_its_server_is_stopped_or_gone() -> None:
    """The floor fixtures' `floor_dsn` makes each test's database: a set-up error there on a loaded machine said only
    psycopg's "connection timeout expired", not whether this worker's server was stopped (a SIGSTOP another test
    left), gone, or running and slow."""
    cluster = PgCluster.create(durable=False)
    try:
        cluster.start()
        assert cluster.proc is not None
        stalled = stall(cluster.proc.pid)
        try:
            with pytest.raises(ClusterError) as failed:
                cluster.create_database("floor_stalled")
        finally:
            resume(stalled)
        assert f"port {cluster.port}" in str(failed.value) and "stopped (SIGSTOP)" in str(failed.value)
        cluster.kill()
        with pytest.raises(ClusterError) as failed:
            cluster.create_database("floor_gone")
        assert f"postgres (pid {cluster.proc.pid}) exited with -9" in str(failed.value)
    finally:
        cluster.remove()


@pytest.mark.parametrize(
    ("given", "said"), [({}, "5"), ({"connect_timeout_s": 60}, "60"), ({"connect_timeout_s": None}, None)]
)
def test_a_dsn_carries_one_connect_timeout_the_one_asked_for_or_none(
    given: dict[str, int | None], said: str | None
) -> None:
    """A test or bench that wants another bound than the fixture's 5 s asks for it: before, three tests edited the DSN's
    text and a bench appended a second connect_timeout (libpq takes the last: it read 5, and meant 60)."""
    cluster = PgCluster(base=Path("/nonexistent"), port=5999)
    dsn = cluster.dsn("floor_x", **given)
    assert dsn.count("connect_timeout") == (0 if said is None else 1), dsn
    assert conninfo_to_dict(dsn).get("connect_timeout") == said
    assert conninfo_to_dict(dsn)["dbname"] == "floor_x" and conninfo_to_dict(dsn)["port"] == "5999"
