"""The first Ctrl-C of a real `tablectl floor status` whose statement its server stopped answering (the cluster
SIGSTOPped while the statement waits on a lock: neither the statement nor a cancel request is answered) ends the
command within about 2 s (floor/interrupt.py), exit 130, one line. Before, psycopg's own handling waited 5 s for the
cancel request and 5 s more for the statement: some 10 s in which the command said nothing."""

from __future__ import annotations

import inspect
import signal
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from floor.interrupt import PromptConnection
from floor.pgcluster import PgCluster
from floor.schema import migrate
from tests.floor.conftest import floor_toml, wait_for
from tests.floor.pgprocs import resume, stall
from tests.tablectl_runs import TABLECTL

pytestmark = pytest.mark.floor
WAITING = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"


def test_prompt_connection_overrides_psycopgs_wait_as_it_is() -> None:
    """The seam floor/interrupt.py leans on: a psycopg whose Connection.wait changes fails here, naming the fix
    (compare floor/interrupt.py with psycopg's own wait, and pin psycopg to a minor that has it)."""
    theirs = inspect.signature(psycopg.Connection.wait)
    assert inspect.signature(PromptConnection.wait).parameters.keys() == theirs.parameters.keys(), theirs


def test_a_ctrl_c_mid_statement_on_a_stalled_server_ends_the_command_within_seconds(tmp_path: Path) -> None:
    cluster = PgCluster.create(durable=False)
    stalled: list[int] = []
    try:
        cluster.start()
        assert cluster.proc is not None
        dsn = cluster.create_database("ctrl_c")
        with psycopg.connect(dsn) as conn:
            migrate(conn)
        config = tmp_path / "floor.toml"
        config.write_text(floor_toml(dsn, "mqtt://127.0.0.1:1", "ctrlc", "floor-ctrlc"))
        with psycopg.connect(dsn) as holder, psycopg.connect(dsn, autocommit=True) as watcher:
            holder.execute("LOCK TABLE floor_tables, seq_gaps, integrity_alarms, events IN ACCESS EXCLUSIVE MODE")
            proc = subprocess.Popen(
                [*TABLECTL, "floor", "--config", str(config), "status"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            try:
                wait_for(lambda: watcher.execute(WAITING).fetchone() == (1,), 60, "status's statement to wait")
                stalled = stall(cluster.proc.pid)
                started = time.monotonic()
                proc.send_signal(signal.SIGINT)
                out, err = proc.communicate(timeout=30)
                took = time.monotonic() - started
            finally:
                proc.kill()
                resume(stalled)
                stalled = []
                holder.rollback()
        assert proc.returncode == 130, (out, err)
        assert "interrupted (Ctrl-C)" in err and "Traceback" not in err, err
        assert took < 5, f"the Ctrl-C took {took:.1f} s (psycopg's own handling: some 10 s)"
    finally:
        resume(stalled)
        cluster.remove()
