"""The day's export as an operator meets it on their first day, through the real CLI on a real PostgreSQL: a signed
export is not overwritten unasked; a day that has not begun is not exported empty, and one still going on is exported
with a warning; retention does not drop a day whose signed export holds fewer events than the archive does (events
that arrived after it: a table replaying after an outage, an export made before the day ended)."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from floor.config import DatabaseSection
from floor.db import connect
from floor.schema import migrate, partition_ddl
from tests.tablectl_runs import here

pytestmark = pytest.mark.floor
OLD = date(2020, 1, 1)  # past a 1-day retention whatever today is


def _event(conn: psycopg.Connection[tuple[object, ...]], seq: int, day: date) -> None:
    ts = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
    conn.execute("INSERT INTO event_keys VALUES ('t1', %s, %s, 'b1', '\\x00', %s)", (seq, f"e{seq}", day))
    conn.execute(
        "INSERT INTO events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type,"
        " rule, payload, replayed) VALUES (%s, 't1', %s, %s, 'b1', %s, %s, NULL, 'x.y', NULL, %s, false)",
        (day, seq, f"e{seq}", ts, ts.isoformat(), json.dumps({"n": seq})),
    )


def _seed(dsn: str) -> None:
    with connect(DatabaseSection(dsn=dsn)) as conn:
        migrate(conn)
        with conn.transaction():
            conn.execute(partition_ddl(OLD))
            for seq in (1, 2):
                _event(conn, seq, OLD)


def _signed_export(tmp: Path, dsn: str) -> tuple[Path, Path]:
    """The config (ann's key trusted, a 1-day term) and OLD's export, signed by ann and recorded."""
    key = tmp / "ann.pem"
    made = here("command", "keygen", "--out", key)
    found = re.search(r"^public key: (\S+)$", made.stdout, re.M)
    assert made.returncode == 0 and found is not None, made.stderr
    config = tmp / "floor.toml"
    config.write_text(
        f'name = "f1"\n[database]\ndsn = "{dsn}"\n[retention]\ndays = 1\n'
        f'[export]\ndirectory = "{tmp / "out"}"\ntrusted_keys = ["{found.group(1)}"]\n'
    )
    done = here("report", "--config", config, "export", "--day", str(OLD), "--key", key)
    assert done.returncode == 0, done.stderr
    return config, tmp / "out" / f"f1-{OLD}.csv"


def _signer(dsn: str) -> object:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT signer_public_key FROM exports WHERE gaming_day = %s", (OLD,)).fetchone()
    return None if row is None else row[0]


def test_a_signed_export_is_replaced_only_when_asked(tmp_path: Path, floor_dsn: str) -> None:
    """`report export --day D` a second time overwrote the signed file, deleted its .sig and cleared its signer,
    saying only "not signed yet": the day's signed record was gone without a word."""
    _seed(floor_dsn)
    config, exported = _signed_export(tmp_path, floor_dsn)
    before, sig = exported.read_bytes(), exported.with_name(exported.name + ".sig").read_bytes()
    signer = _signer(floor_dsn)
    assert signer is not None

    again = here("report", "--config", config, "export", "--day", str(OLD))
    assert again.returncode == 2, again.stdout + again.stderr
    assert "is signed by" in again.stderr and "--replace" in again.stderr, again.stderr
    assert exported.read_bytes() == before and exported.with_name(exported.name + ".sig").read_bytes() == sig
    assert _signer(floor_dsn) == signer

    replaced = here("report", "--config", config, "export", "--day", str(OLD), "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert "replaced the signed export" in replaced.stderr and "not signed yet" in replaced.stdout
    assert _signer(floor_dsn) is None


def test_retention_keeps_a_day_whose_signed_export_misses_later_events(tmp_path: Path, floor_dsn: str) -> None:
    """A day exported and signed, then an event of that day archived (a table replaying after an outage): retention
    counted the export as the day's record and dropped the whole day, the late event with it."""
    _seed(floor_dsn)
    config, _ = _signed_export(tmp_path, floor_dsn)
    with psycopg.connect(floor_dsn) as conn, conn.transaction():
        _event(conn, 3, OLD)
    plan = here("floor", "--config", config, "retention")
    assert plan.returncode == 0, plan.stderr
    assert f"its export holds 2 event(s), the archive 3 of gaming day {OLD}" in plan.stdout, plan.stdout
    applied = here("floor", "--config", config, "retention", "--apply")
    assert applied.returncode == 0, applied.stderr
    with psycopg.connect(floor_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM events WHERE gaming_day = %s", (OLD,)).fetchone() == (3,)


def test_a_day_not_begun_is_refused_and_one_going_on_is_exported_with_a_warning(tmp_path: Path, floor_dsn: str) -> None:
    """`export --day` of tomorrow wrote and recorded an empty file; of today, a file of the events so far, as if
    the day were whole, ready to be signed."""
    _seed(floor_dsn)
    config = tmp_path / "floor.toml"
    config.write_text(f'name = "f1"\n[database]\ndsn = "{floor_dsn}"\n[export]\ndirectory = "{tmp_path / "out"}"\n')
    today = datetime.now(UTC).date()  # the config's gaming day: UTC from 06:00
    if datetime.now(UTC).hour < 6:
        today -= timedelta(days=1)
    later = here("report", "--config", config, "export", "--day", str(today + timedelta(days=2)))
    assert later.returncode == 2, later.stdout + later.stderr
    assert "has not begun" in later.stderr and not (tmp_path / "out").exists(), later.stderr
    now = here("report", "--config", config, "export", "--day", str(today))
    assert now.returncode == 0, now.stderr
    assert f"gaming day {today} is not over" in now.stderr and "export it again" in now.stderr, now.stderr


def test_verify_and_record_of_a_file_not_there_name_the_file(tmp_path: Path, floor_dsn: str) -> None:
    """`report verify` of a mistyped path said "the signature does not exist; sign the export again": a signer
    would sign again what was never missing, when the path was wrong."""
    _seed(floor_dsn)
    config, exported = _signed_export(tmp_path, floor_dsn)
    wrong = exported.with_name("f1-2020-01-10.csv")
    for argv in (("report", "verify", wrong, "--config", config), ("report", "--config", config, "record", wrong)):
        done = here(*argv)
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"{wrong}: cannot read it (No such file or directory)" in done.stderr, done.stderr
        assert "signature" not in done.stderr, done.stderr
