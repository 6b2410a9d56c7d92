"""The private PostgreSQL helper the tests, benches and demos use: a synchronous standby made with pg_basebackup
holds every committed row, and promoted after the primary's kill -9 it takes writes (issue 15 builds on this)."""

from __future__ import annotations

import psycopg
import pytest

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
