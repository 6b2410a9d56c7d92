"""A table whose journal is rolled back (restored from an earlier copy) publishes seqs the floor already holds under
other event ids: the floor archives none of them over the originals and raises an integrity alarm for each, kept
with the event as received; `tablectl floor alarms` lists them and exits 1, and the live model counts them.

The table itself finds a rollback from its anchors (docs/recovery.md) and then never reuses a seq; the one case
it cannot see is the residual gap that page documents: the journal restored *together with* its anchor file while
the broker no longer retains the table's anchor. That is the case played here, so the floor's alarm is the last
line of defence it is meant to be."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.broker import Mosquitto, fresh_id
from tests.floor.conftest import FloorProcess, TableProcess, count, floor_toml, table_config, wait_for
from tests.tablectl_runs import tablectl

pytestmark = [pytest.mark.e2e, pytest.mark.floor]


def test_a_rolled_back_table_raises_integrity_alarms_and_keeps_the_originals(
    mosquitto: Mosquitto, floor_dsn: str, tmp_path: Path
) -> None:
    prefix = fresh_id("rollback")
    config = tmp_path / "floor.toml"
    config.write_text(floor_toml(floor_dsn, mosquitto.url, prefix, f"floor-{prefix}"))
    floor = FloorProcess(config, tmp_path)
    floor.start()
    table = TableProcess(
        "rb-1", table_config("rb-1", "demo.toml", prefix, tmp_path), tmp_path / "rb.sqlite", tmp_path, mosquitto.url, 3
    )
    try:
        wait_for(lambda: "subscribed to the tables" in floor.log(), 30, "the floor's subscription")
        table.start(seed=1)
        assert table.proc is not None and table.proc.wait(timeout=120) == 0
        backup = tmp_path / "backup.sqlite"
        with sqlite3.connect(table.journal) as src, sqlite3.connect(backup) as dst:
            src.backup(dst)  # the journal as it was after three rounds
        anchor = Path(f"{table.journal}.anchor")
        anchor_backup = tmp_path / "backup.anchor"
        anchor_backup.write_bytes(anchor.read_bytes())  # and its anchor file, copied with it
        table.start(seed=2)
        assert table.proc.wait(timeout=120) == 0
        archived = len(table.rows())
        wait_for(lambda: count(floor_dsn, "SELECT count(*) FROM events") >= archived, 60, "the first six rounds")
        originals = {r["seq"]: r["event_id"] for r in table.rows()}
        # The rollback, as an operator restoring a copy does it: the copy in place, the live journal's WAL gone
        # (left, it would be replayed onto the copy). The next boot journals seqs the floor already has.
        for stale in (tmp_path / "rb.sqlite-wal", tmp_path / "rb.sqlite-shm"):
            stale.unlink(missing_ok=True)
        backup.replace(table.journal)
        anchor_backup.replace(anchor)
        # The broker lost the retained anchor (a broker restored without its persistence file, say).
        subprocess.run(
            ["mosquitto_pub", "-p", str(mosquitto.port), "-t", f"{prefix}/rb-1/anchor", "-r", "-n"], check=True
        )
        table.start(seed=3)

        def reused() -> list[dict[str, Any]]:
            return [r for r in table.rows() if r["seq"] in originals and originals[r["seq"]] != r["event_id"]]

        assert table.proc.wait(timeout=120) == 0  # the restored journal is whole: the table plays on from it
        assert reused(), "the rolled-back table must have journaled seqs the floor already holds"
        wait_for(
            lambda: count(floor_dsn, "SELECT count(*) FROM integrity_alarms") == len(reused()),
            60,
            f"an alarm for each reused seq; floor log:\n{floor.log()}",
        )
        with psycopg.connect(floor_dsn) as conn:
            alarms = conn.execute("SELECT kind, seq, archived_event_id, received FROM integrity_alarms").fetchall()
            kept: dict[int, str] = dict(conn.execute("SELECT seq, event_id FROM events").fetchall())
        assert {kind for kind, *_ in alarms} == {"seq_reused"}
        by_seq = {seq: (archived_id, received) for _, seq, archived_id, received in alarms}
        assert len(by_seq) == len(reused())
        for r in reused():
            archived_id, received = by_seq[r["seq"]]
            assert archived_id == originals[r["seq"]] == kept[r["seq"]]
            assert received["event_id"] == r["event_id"] and received["payload"] == r["payload"]
        done = tablectl("floor", "--config", config, "alarms")
        assert done.returncode == 1 and "seq_reused table rb-1" in done.stdout
        with psycopg.connect(floor_dsn) as conn:
            row = conn.execute("SELECT live FROM floor_tables WHERE table_id = 'rb-1'").fetchone()
        assert row is not None and row[0]["alarms"] == len(by_seq)
    finally:
        floor.kill()
        if table.proc is not None and table.proc.poll() is None:
            table.proc.kill()
