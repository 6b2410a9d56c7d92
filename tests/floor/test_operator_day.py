"""A floor operator's first day, run as they run it (the real CLI, its main() as the console script calls it, a real
PostgreSQL): each test is a mistake found following README.md and docs/floor.md from a fresh clone, and asserts that
the message names the problem and the fix, and the exit status, instead of a traceback called "a bug" or an empty
report that exits 0."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from floor.config import DatabaseSection
from floor.db import connect
from floor.pgcluster import PgCluster
from floor.schema import migrate
from tests.floor.conftest import floor_toml
from tests.floor.pgroles import wrong_password
from tests.link.conftest import link_toml
from tests.tablectl_runs import here

pytestmark = pytest.mark.floor
DAY = "2026-11-27"


def test_a_dsn_with_a_typo_is_named_with_its_fix(tmp_path: Path) -> None:
    """`hostt=` in [database] dsn: check-config called the config valid, then every verb ended with "unexpected
    ProgrammingError ... (a bug: please report it)", the floor's and the link's alike."""
    dsn = "hostt=127.0.0.1 dbname=floor"
    floor = tmp_path / "floor.toml"
    floor.write_text(floor_toml(dsn, "mqtt://127.0.0.1:1", "t", "floor-t"))
    link = tmp_path / "link.toml"
    link.write_text(link_toml(dsn, "mqtt://127.0.0.1:1", "t"))
    for argv in (
        ("floor", "--config", str(floor), "check-config", "--offline"),
        ("floor", "--config", str(floor), "status"),
        ("report", "--config", str(floor), "--day", DAY),
        ("link", "--config", str(link), "check-config", "--offline"),
        ("link", "--config", str(link), "report"),
    ):
        done = here(*argv)
        assert done.returncode == 2, (argv, done.stdout, done.stderr)
        assert "a bug" not in done.stderr and "is valid" not in done.stdout, (argv, done.stderr)
        assert "database.dsn" in done.stderr and 'invalid connection option "hostt"' in done.stderr, argv
        assert "host=db1,db2" in done.stderr, argv  # the fix: what a dsn looks like


def _archive_with(dsn: str, tables: dict[str, str]) -> None:
    """A migrated archive knowing `tables` (id -> chapter) as the service leaves it: a birth and a live row each."""
    with connect(DatabaseSection(dsn=dsn)) as conn:
        migrate(conn)
        conn.commit()
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table_id, chapter in tables.items():
            conn.execute(
                "INSERT INTO births (table_id, boot_id, ts, gaming_day, digest, payload) VALUES"
                " (%s, 'b1', now(), %s, %s, jsonb_build_object('game', jsonb_build_object('chapter', %s::text,"
                " 'name', 'a game')))",
                (table_id, DAY, table_id.encode(), chapter),
            )
            conn.execute("INSERT INTO floor_tables (table_id) VALUES (%s)", (table_id,))


def test_a_table_or_game_not_in_the_archive_is_refused_naming_those_that_are(tmp_path: Path, floor_dsn: str) -> None:
    """`report --table ms-tabel-01` (a typo) printed a whole report of "(none in this period)" and exited 0, as if
    the table had played nothing that day; `floor rounds` said "no rounds" and exited 0 too."""
    _archive_with(floor_dsn, {"ms-1": "655a", "lir-1": "643a"})
    config = tmp_path / "floor.toml"
    config.write_text(floor_toml(floor_dsn, "mqtt://127.0.0.1:1", "t", "floor-t"))
    done = here("report", "--config", config, "--day", DAY, "--table", "ms-l")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert "no table 'ms-l' in the archive" in done.stderr and "lir-1, ms-1" in done.stderr, done.stderr
    done = here("report", "--config", config, "--day", DAY, "--game", "655")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert "no table of game '655' in the archive" in done.stderr and "643a, 655a" in done.stderr, done.stderr
    done = here("floor", "--config", config, "rounds", "ms-l")
    assert done.returncode == 2, done.stderr
    assert "no table 'ms-l' in the archive" in done.stderr and "lir-1, ms-1" in done.stderr, done.stderr
    # A table the archive knows, with nothing in the period: the report is empty, as it should be.
    done = here("report", "--config", config, "--day", DAY, "--table", "ms-1", "--format", "json")
    assert done.returncode == 0 and '"rounds": []' in done.stdout, done.stderr
    done = here("floor", "--config", config, "rounds", "ms-1")
    assert done.returncode == 0 and "no rounds of that table in the archive" in done.stdout, done.stderr


def test_a_wrong_password_is_named_with_the_password_file(
    tmp_path: Path, pg_cluster: PgCluster, floor_dsn: str
) -> None:
    """A wrong password in [database] password_file: the advice was "check [database] dsn (and the server)", and with
    the example's two-host dsn libpq's words put the standby's "session is read-only" before the password failure:
    the one file to fix was never named."""
    wrong = wrong_password(pg_cluster, floor_dsn, tmp_path)
    user, secret = wrong.user, wrong.secret
    config = tmp_path / "floor.toml"
    config.write_text(wrong.database_section(floor_toml(wrong.dsn, "mqtt://127.0.0.1:1", "t", "floor-t")))
    for argv, status in (
        (("floor", "--config", str(config), "check-config"), 1),
        (("floor", "--config", str(config), "status"), 2),
        (("report", "--config", str(config), "--day", DAY), 2),
    ):
        done = here(*argv)
        said = done.stdout + done.stderr
        assert done.returncode == status, (argv, said)
        assert f"PostgreSQL refused the password of user {user}: put that user's password in {secret}" in said, said
    secret.write_text("right\n")
    assert here("floor", "--config", config, "check-config").returncode == 0


def test_a_report_out_in_a_missing_directory_is_refused_before_the_report_is_made(tmp_path: Path) -> None:
    """`--out reports/day.html` before `reports/` existed: the whole report was made first (a month's takes minutes),
    then the write failed with a bare "No such file or directory", exit 1."""
    config = tmp_path / "floor.toml"
    config.write_text(floor_toml("host=127.0.0.1 port=1 dbname=floor", "mqtt://127.0.0.1:1", "t", "floor-t"))
    out = tmp_path / "reports" / "day.html"
    done = here("report", "--config", config, "--day", DAY, "--format", "html", "--out", out)
    assert done.returncode == 2, done.stderr
    assert "cannot reach the archive" not in done.stderr, done.stderr  # refused before the database is asked
    assert f"--out {out}: the directory {out.parent} does not exist: create it" in done.stderr, done.stderr
    done = here("report", "--config", config, "--day", DAY, "--out", tmp_path)
    assert done.returncode == 2 and f"--out {tmp_path}: is a directory: give a file name" in done.stderr, done.stderr
