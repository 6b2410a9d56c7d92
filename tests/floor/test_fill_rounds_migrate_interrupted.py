"""Ctrl-C while `tablectl floor fill-rounds` brings the archive's schema up to date (its first step) says one line of
what it left and exits 130, as a Ctrl-C in its summary or index steps does (tests/floor/test_summary_stop.py); before,
the migration ran outside that step's handling and a Ctrl-C there printed a traceback. Held at a known point, not by
timing: another session holds the migrations' advisory lock (floor/schema.py `migrate`) in an open transaction, so
fill-rounds waits inside its migration transaction. A real cluster and a real process; a rerun then migrates."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tests.floor.conftest import wait_for
from tests.floor.ts_archive import fill_config, fill_rounds, fill_rounds_started
from tests.interrupt import interrupted

pytestmark = pytest.mark.floor
MIGRATE_LOCK = 16016016  # floor/schema.py migrate()'s pg_advisory_xact_lock key


def _waiting_on_migration(dsn: str) -> bool:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = %s AND NOT granted",
            (MIGRATE_LOCK,),
        ).fetchone()
    return row is not None and int(str(row[0])) > 0


def test_ctrl_c_while_fill_rounds_migrates_says_one_line_and_a_rerun_migrates(floor_dsn: str, tmp_path: Path) -> None:
    config = fill_config(floor_dsn, tmp_path)
    with psycopg.connect(floor_dsn) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))  # held until this block's transaction ends

        def waiting() -> None:
            wait_for(lambda: _waiting_on_migration(floor_dsn), 60, "fill-rounds waiting in its migration")

        done = interrupted(fill_rounds_started(config), waiting)
    err = done.stderr
    assert done.returncode == 130, (done.returncode, err)
    assert "Traceback" not in err, err
    assert err.strip().splitlines() == [
        "tablectl floor fill-rounds: interrupted (Ctrl-C) while bringing the archive's schema up to date: its "
        "migrations are one transaction, rolled back, so the schema is as it was. Run `tablectl floor --config "
        "FLOOR.toml fill-rounds` again: it goes on from there."
    ], err
    with psycopg.connect(floor_dsn) as conn:
        assert conn.execute("SELECT to_regclass('floor_schema')").fetchone() == (None,), "nothing of it was kept"
    rerun = fill_rounds(config)
    assert rerun.returncode == 0, rerun.stderr
    with psycopg.connect(floor_dsn) as conn:
        assert conn.execute("SELECT to_regclass('floor_schema') IS NOT NULL").fetchone() == (True,)
