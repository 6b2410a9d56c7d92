"""`tablectl floor round` shows every amount in dollars, as docs/floor.md says; `--json` keeps integer cents.

Before, the readable line of an event the recall has no summary of of its own showed only fields named `*_cents` in
dollars: `betting.opened` read `ante_min=500, ante_max=10000`, a street wager `amount=1000`, a terminal's
`balance=...` in raw cents. The rounds here are real: `tablectl demo`'s tables (a progressive Mississippi Stud table
and a Let It Ride table with wagering terminals) play on real ptys into a real SQLite journal, and their rows are put
in a real PostgreSQL archive (tests/floor/conftest.py) as the floor's ingest keeps them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import TableConfig, demo_config, load_config
from controller.core.money import fmt
from controller.people.demo import play
from floor.config import DatabaseSection
from floor.db import connect
from floor.recall import MONEY_FIELDS, is_money, recall_round, render_round
from floor.schema import migrate, partition_ddl
from tests.floor.conftest import floor_toml
from tests.tablectl_runs import here

pytestmark = [pytest.mark.floor, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
NO_BROKER = "mqtt://127.0.0.1:1"
Row = tuple[Any, ...]  # table, seq, event id, boot, ts, round, type, rule, payload (read)


def _journal(config: TableConfig, path: Path, seed: int) -> list[Row]:
    """Three rounds of the demo's table; its round rows as (table, seq, event id, boot, ts, round, rule, payload)."""
    played = asyncio.run(asyncio.wait_for(play(config, rounds=3, broker=NO_BROKER, seed=seed, journal_path=path), 120))
    assert played == 3
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT table_id, seq, event_id, boot_id, ts, round_id, type, rule, payload FROM events"
            " WHERE round_id IS NOT NULL ORDER BY seq"
        ).fetchall()
    return [(*row[:8], json.loads(row[8])) for row in rows]


def _archive(dsn: str, rows: list[Row]) -> None:
    with connect(DatabaseSection(dsn=dsn)) as conn:
        migrate(conn)
        days = {dt.datetime.fromisoformat(r[4]).date() for r in rows}
        with conn.transaction():
            for day in sorted(days):
                conn.execute(partition_ddl(day))
            for table, seq, event_id, boot, ts, round_id, type_, rule, payload in rows:
                conn.execute(
                    "INSERT INTO events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type,"
                    " rule, payload, replayed) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, false)",
                    (
                        dt.datetime.fromisoformat(ts).date(),
                        table,
                        seq,
                        event_id,
                        boot,
                        dt.datetime.fromisoformat(ts),
                        ts,
                        round_id,
                        type_,
                        rule,
                        json.dumps(payload),
                    ),
                )


# `key=<digits>` of a money field: an amount shown in raw cents.
RAW_CENTS = re.compile(r"\b(" + "|".join(sorted(MONEY_FIELDS)) + r"|\w+_cents)=-?[0-9]")


def test_every_amount_a_round_recall_prints_is_in_dollars(floor_dsn: str, tmp_path: Path) -> None:
    rows = _journal(demo_config(), tmp_path / "ms.sqlite", 3)
    rows += _journal(load_config(ROOT / "configs" / "let-it-ride.toml"), tmp_path / "lir.sqlite", 5)
    _archive(floor_dsn, rows)
    round_ids = sorted({r[5] for r in rows})
    shown: set[str] = set()
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        for round_id in round_ids:
            story = recall_round(conn, round_id)
            assert story is not None and story.problems == []
            text = render_round(story)
            assert RAW_CENTS.search(text) is None, RAW_CENTS.search(text)
            by_seq = {line.seq: line.text for line in story.lines}
            for _t, seq, _e, _b, _ts, rid, _type, _rule, p in rows:
                if rid != round_id:
                    continue
                for key, value in p.items():
                    if is_money(key) and isinstance(value, int) and f"{key}=" in by_seq[seq]:
                        assert f"{key}={fmt(value)}" in by_seq[seq], (key, value, by_seq[seq])
                        shown.add(key)
    # The fields the old recall showed in cents, met in these real rounds: the table's limits, a street wager's or a
    # terminal's amount, an account's balance.
    assert {"ante_min", "ante_max", "amount", "balance"} <= shown, shown


def test_tablectl_floor_round_prints_dollars_and_its_json_keeps_cents(floor_dsn: str, tmp_path: Path) -> None:
    rows = _journal(demo_config(), tmp_path / "ms.sqlite", 3)
    _archive(floor_dsn, rows)
    round_id = rows[0][5]
    opened = next(p for *_, type_, _rule, p in rows if type_ == "betting.opened")
    config = tmp_path / "floor.toml"
    config.write_text(floor_toml(floor_dsn, NO_BROKER, "tablectl", "floor-recall-test"))
    text = here("floor", "--config", config, "round", round_id)
    assert text.returncode == 0, text.stderr
    line = next(x for x in text.stdout.splitlines() if " betting.opened " in x)
    assert f"ante_min={fmt(opened['ante_min'])}" in line and f"ante_max={fmt(opened['ante_max'])}" in line, line
    assert RAW_CENTS.search(text.stdout) is None
    as_json = here("floor", "--config", config, "round", round_id, "--json")
    assert as_json.returncode == 0, as_json.stderr
    story = json.loads(as_json.stdout)
    completed = next(p for *_, type_, _rule, p in rows if type_ == "round.completed")
    assert story["table_result"] == completed["table_result"] and isinstance(story["table_result"], int)
    settled = [s for s in story["settlements"] if "paid" in s]
    assert settled and all(isinstance(s["paid"], int) for s in settled)
