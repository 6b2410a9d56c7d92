"""What `tablectl floor` prints from outside text is escaped (controller/cli/shown.py): a refused message's topic and
reason, a table's fields, a round's events, a key id a browser enrolled. Each carries an ESC sequence that clears the
screen, a CR that overwrites the line, a BEL, a newline forging a line and a bidi override; through the real command
line against a real PostgreSQL they come out as `\\x1b[2J`, `\\r`, `\\x07`, `\\n`, `\\u202e`, and `--json` stays
valid JSON that reads back to the text as stored. Before, they reached the terminal as received.

The rows are written here as the service writes them (a publisher's bytes reach them through the broker; the CLI
reads only the database), so that every field a terminal could be attacked through holds the hostile text at once.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import psycopg
import pytest
from psycopg.types.json import Jsonb

from floor.live import TableLive
from floor.schema import migrate, partition_ddl
from tests.tablectl_runs import here

pytestmark = pytest.mark.floor
EVIL = "\x1b[2J\rOK\x07\nforged line \u202edesrever"
SHOWN = "\\x1b[2J\\rOK\\x07\\nforged line \\u202edesrever"
DAY = date(2026, 11, 21)


def _seed(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        migrate(conn)
        conn.execute(
            "INSERT INTO rejected_messages (topic, payload, reason, size, sha256, bytes)"
            " VALUES (%s, 'x', %s, 1, sha256('x'), 1)",
            (f"floor/t1{EVIL}/event", f"not JSON: {EVIL}"),
        )
        live = TableLive(f"t{EVIL}", state=EVIL, phase=EVIL, round_id=f"r{EVIL}", tilts={EVIL: "now"})
        conn.execute(
            "INSERT INTO floor_tables (table_id, live) VALUES (%s, %s)", (live.table_id, Jsonb(live.to_json()))
        )
        conn.execute(
            "INSERT INTO console_keys (key_id, role, public_key) VALUES (%s, 'supervisor', 'pk')", (f"k{EVIL}",)
        )
        conn.execute(partition_ddl(DAY))
        ts = datetime(2026, 11, 21, 12, tzinfo=UTC)
        conn.execute("INSERT INTO event_keys VALUES ('t1', 1, 'e1', 'b1', '\\x00', %s)", (DAY,))
        conn.execute(
            "INSERT INTO events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type, rule,"
            " payload, replayed) VALUES (%s, 't1', 1, 'e1', 'b1', %s, %s, 'r1', %s, %s, '{}', false)",
            (DAY, ts, ts.isoformat(), f"round.{EVIL}", f"655a{EVIL}"),
        )


def floor_said(config: Path, *argv: str) -> str:
    run = here("floor", "--config", config, *argv)
    assert run.returncode in (0, 1), run.stderr
    return run.stdout


@pytest.fixture
def config(floor_dsn: str, tmp_path: Path) -> Path:
    _seed(floor_dsn)
    path = tmp_path / "floor.toml"
    path.write_text(f'[database]\ndsn = "{floor_dsn}"\n[mqtt]\nprefix = "floor"\n')
    return path


def clean(out: str) -> None:
    """Nothing a terminal acts on, and the lines the command wrote only (no forged one)."""
    assert not any(c in out for c in "\x1b\r\x07\u202e"), repr(out)
    assert "\nforged line" not in out


def test_floor_status_shows_the_refused_topic_reason_and_the_tables_fields_escaped(config: Path) -> None:
    out = floor_said(config, "status")
    clean(out)
    assert f"floor/t1{SHOWN}/event: not JSON: {SHOWN}" in out
    assert f"t{SHOWN}" in out and f"tilt {SHOWN}" in out and f"r{SHOWN}" in out
    # --json: valid JSON, escaped as JSON escapes, read back to the text as stored.
    raw = floor_said(config, "status", "--json")
    clean(raw)
    assert json.loads(raw)[0]["table_id"] == f"t{EVIL}"


def test_a_recalled_round_and_the_enrolled_keys_are_shown_escaped(config: Path) -> None:
    out = floor_said(config, "round", "r1")
    clean(out)
    assert f"round.{SHOWN} [655a{SHOWN}]" in out
    assert json.loads(floor_said(config, "round", "r1", "--json"))["lines"][0]["type"] == f"round.{EVIL}"
    keys = floor_said(config, "console", "keys")
    clean(keys)
    assert f"k{SHOWN}" in keys
