"""The signed CSV export of a gaming day verifies with `tablectl report verify`, and fails on any changed byte or
another key; retention drops a day past its term only once it was exported, partition, keys and retained messages."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, date, datetime
from pathlib import Path

import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from floor.config import DatabaseSection, parse_floor_config
from floor.db import connect
from floor.export import public_b64
from floor.retention import apply_retention, plan_retention
from floor.schema import migrate, partition_ddl, partitions
from tests.floor.conftest import TABLECTL, count

pytestmark = pytest.mark.floor
OLD, NEW = date(2020, 1, 1), date(2020, 1, 2)


def _seed(dsn: str) -> None:
    with connect(DatabaseSection(dsn=dsn)) as conn:
        migrate(conn)
        with conn.transaction():
            for seq, day in ((1, OLD), (2, OLD), (3, NEW)):
                conn.execute(partition_ddl(day))
                ts = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
                conn.execute("INSERT INTO event_keys VALUES ('t1', %s, %s, 'b1', '\\x00', %s)", (seq, f"e{seq}", day))
                conn.execute(
                    "INSERT INTO events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type,"
                    " rule, payload, replayed) VALUES (%s, 't1', %s, %s, 'b1', %s, %s, NULL, 'x.y', NULL, %s, false)",
                    (day, seq, f"e{seq}", ts, ts.isoformat(), json.dumps({"n": seq})),
                )


def _key(path: Path) -> str:
    key = Ed25519PrivateKey.generate()
    path.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    return public_b64(key.public_key())


def test_a_signed_export_verifies_and_a_changed_byte_or_another_key_fails(tmp_path: Path, floor_dsn: str) -> None:
    _seed(floor_dsn)
    public = _key(tmp_path / "export.pem")
    config = tmp_path / "floor.toml"
    config.write_text(
        f'name = "f1"\n[database]\ndsn = "{floor_dsn}"\n'
        f'[export]\ndirectory = "{tmp_path / "out"}"\nsigning_key = "{tmp_path / "export.pem"}"\n'
    )
    done = subprocess.run(
        [*TABLECTL, "report", "--config", str(config), "export", "--day", str(OLD)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    exported = tmp_path / "out" / f"f1-{OLD}.csv"
    lines = exported.read_text().splitlines()
    assert lines[0] == "table_id,seq,event_id,boot_id,ts,round_id,type,rule,payload" and len(lines) == 3

    def verify(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*TABLECTL, "report", "verify", str(exported), *extra], capture_output=True, text=True)

    good = verify("--public-key", public)
    assert good.returncode == 0 and "signature good" in good.stdout
    assert verify("--config", str(config)).returncode == 0
    other = verify("--public-key", _key(tmp_path / "other.pem"))
    assert other.returncode == 1 and "not by the trusted key" in other.stderr
    original = exported.read_text()
    exported.write_text(original.replace('""n"":1', '""n"":7'))  # CSV doubles the quotes inside the payload
    assert exported.read_text() != original
    changed = verify("--public-key", public)
    assert changed.returncode == 1 and "changed after it was signed" in changed.stderr
    assert count(floor_dsn, "SELECT count(*) FROM exports WHERE gaming_day = %s", OLD) == 1


def test_retention_drops_only_days_past_term_that_were_exported(floor_dsn: str) -> None:
    _seed(floor_dsn)
    config = parse_floor_config(f'[database]\ndsn = "{floor_dsn}"\n[retention]\ndays = 1\n')
    now = datetime(2020, 1, 3, 12, tzinfo=UTC)  # gaming day 2020-01-03: a 1-day term keeps 01-02 and on
    with psycopg.connect(floor_dsn) as conn:
        plan = plan_retention(conn, config, now)
        assert (plan.cutoff, plan.drop, plan.kept_unexported) == (NEW, [], [OLD])
        conn.execute("INSERT INTO exports (gaming_day, path, sha256, events) VALUES (%s, 'x', 'y', 2)", (OLD,))
        conn.commit()
        plan = plan_retention(conn, config, now)
        assert (plan.drop, plan.kept_unexported) == ([OLD], [])
        assert apply_retention(conn, plan) == [f"dropped gaming day {OLD}"]
        assert partitions(conn) == [NEW]
    assert count(floor_dsn, "SELECT count(*) FROM event_keys") == 1
    assert count(floor_dsn, "SELECT count(*) FROM events") == 1
