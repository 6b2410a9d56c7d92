"""free_port() names a port that was free a moment ago; under `dev.py test`'s two xdist workers the other worker's
server can bind it before this worker's PostgreSQL does. PgCluster.start (the pg_cluster fixture's starter, and the
demos') then moves a cluster it numbered itself to a fresh port, a bounded number of times, and otherwise raises a
ClusterError naming the port and the fix.

The race is made deterministic: the test holds a listening socket on a port and hands that port to the cluster."""

from __future__ import annotations

import socket

import psycopg
import pytest

from floor.pgcluster import ClusterError, PgCluster
from floor.ports import PORT_ATTEMPTS, free_port

pytestmark = pytest.mark.floor


def test_a_cluster_whose_port_is_taken_fails_after_bounded_attempts_then_starts_on_a_fresh_one() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = int(held.getsockname()[1])
        handed: list[int] = []

        def always_taken() -> int:
            handed.append(taken)
            return taken

        cluster = PgCluster.create(durable=False, ports=always_taken)
        try:
            with pytest.raises(ClusterError) as failed:
                cluster.start()
            assert len(handed) == PORT_ATTEMPTS  # all picked by start(): the first and PORT_ATTEMPTS - 1 fresh ones
            message = str(failed.value)
            assert f"127.0.0.1:{taken} (and {PORT_ATTEMPTS - 1} fresh ports before it)" in message
            assert "Address already in use" in message and "ss -ltnp" in message
            # The readiness poll waited for the postmaster to say it was ready before connecting: it never knocked on
            # the holder's port (it used to, and a listener that does not answer held each attempt for libpq's
            # 2 s connect timeout, and was sent our startup packet).
            held.setblocking(False)
            with pytest.raises(BlockingIOError):
                held.accept()
            # Handed the taken port once more, then free ones: the start moves on and the server answers there.
            once = iter([taken])
            cluster.ports = lambda: next(once, None) or free_port()
            cluster.port = taken
            cluster.start()
            assert cluster.port != taken
            with psycopg.connect(cluster.dsn(), connect_timeout=5) as conn:
                row = conn.execute("SELECT current_setting('port')").fetchone()
            assert row == (str(cluster.port),)
            # Started once, its port is the clients' now: a restart keeps it.
            started_on = cluster.port
            cluster.stop()
            cluster.start()
            assert cluster.port == started_on
        finally:
            cluster.remove()


def test_a_cluster_handed_the_port_of_another_running_cluster_moves_on_and_answers_as_itself(
    pg_cluster: PgCluster,
) -> None:
    """The other xdist worker's cluster (or another helper's) may bind the port first. That server answers the
    readiness poll at once, before this postmaster has failed to bind and exited: taken for ready, the cluster was
    left on the other's server, and its tests' set-up failed once that one stalled or ended."""
    once = iter([pg_cluster.port])
    cluster = PgCluster.create(durable=False, ports=lambda: next(once, None) or free_port())
    try:
        cluster.start()
        assert cluster.port != pg_cluster.port
        assert cluster.proc is not None and cluster.proc.poll() is None, cluster.log_tail()
        with psycopg.connect(cluster.dsn(), connect_timeout=5) as conn:
            row = conn.execute("SELECT current_setting('data_directory')").fetchone()
        assert row == (str(cluster.data),)
    finally:
        cluster.remove()


def test_the_port_is_picked_at_start_and_one_taken_between_create_and_start_is_survived() -> None:
    """initdb takes seconds: a port picked before it (as create() did) was free then, and another server (the other
    xdist worker's cluster or broker) had all that time to bind it. create() picks none now; start() picks one just
    before the postmaster binds it. Here the test itself binds the first port handed out, after create() and before
    the bind, and start() moves to a fresh one; the server answering is this cluster's (its data directory)."""
    picked: list[int] = []
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)

    def pick() -> int:
        port = free_port()
        picked.append(port)
        if len(picked) == 1:  # another process binds it between the pick and the postmaster's bind
            held.bind(("127.0.0.1", port))
            held.listen()
        return port

    cluster = PgCluster.create(durable=False, ports=pick)
    try:
        assert (picked, cluster.port) == ([], 0)  # nothing picked before initdb
        with pytest.raises(ClusterError, match="no port before its first start"):
            cluster.dsn()
        cluster.start()
        assert len(picked) == 2 and cluster.port == picked[1], picked
        with psycopg.connect(cluster.dsn(), connect_timeout=5) as conn:
            row = conn.execute("SELECT current_setting('data_directory'), current_setting('port')").fetchone()
        assert row == (str(cluster.data), str(picked[1]))
    finally:
        held.close()
        cluster.remove()
