"""`tablectl floor round`: an archived payload is outside text (it came over MQTT). Amounts are read as a JSON integer
or ASCII digits only; a field that is anything else is named (seq, type, field, value) and left out, and the rest of
the round is recalled. Before, int() read "\\u0661\\u0662" as 12 cents, raised on "lots" (the recall ended in a
traceback) and dict() took any wagers. A real PostgreSQL cluster (tests/floor/conftest.py), rows as the archive
holds them."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from floor.config import DatabaseSection
from floor.db import connect
from floor.recall import last_rounds, recall_round, render_round
from floor.schema import migrate, partition_ddl
from tests.floor.conftest import floor_toml
from tests.tablectl_runs import here

DAY = date(2026, 11, 21)
ROUND = "t1-r000007"

# (type, payload) in seq order: a round whose archive holds good and bad fields side by side.
EVENTS: list[tuple[str, Any]] = [
    ("round.started", {"round": 7}),
    (
        "no_more_bets",
        {
            "players": [1, 2, 3],
            "wagers": {
                "1": {"ante": 500, "progressive": "100"},  # a JSON int and ASCII digits: both good
                "2": {"ante": "\u0665\u0660\u0660"},  # Arabic-Indic 500: int() read it
                "3": "ante 500",  # not an object of spots
            },
        },
    ),
    ("meter.incremented", {"level": "mega", "meter_before_cents": 100, "meter_after_cents": "\u0661\u0662"}),
    ("meter.incremented", {"level": "major", "meter_before_cents": 100, "meter_after_cents": "lots"}),
    ("meter.incremented", {"level": "minor", "meter_before_cents": 100, "meter_after_cents": "1200"}),
    ("meter.incremented", {"level": "grand", "meter_before_cents": 100, "meter_after_cents": 12.5}),
    ("seat.settled", {"seat": 1, "wagers": [1, 2]}),  # not a list of wager objects: summarize raised
    ("tilt.raised", ["not", "an", "object"]),
    ("round.completed", {"collected": 500, "paid": 0, "table_result": True}),
]


def _seed(dsn: str) -> None:
    with connect(DatabaseSection(dsn=dsn)) as conn:
        migrate(conn)
        with conn.transaction():
            conn.execute(partition_ddl(DAY))
            for seq, (type_, payload) in enumerate(EVENTS, start=1):
                ts = datetime(2026, 11, 21, 12, 0, seq, tzinfo=UTC)
                conn.execute(
                    "INSERT INTO events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type,"
                    " rule, payload, replayed) VALUES (%s, 't1', %s, %s, 'b1', %s, %s, %s, %s, NULL, %s, false)",
                    (DAY, seq, f"e{seq}", ts, ts.isoformat(), ROUND, type_, json.dumps(payload)),
                )


def test_bad_fields_are_named_and_left_out_and_the_rest_is_recalled(floor_dsn: str) -> None:
    _seed(floor_dsn)
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        story = recall_round(conn, ROUND)
        assert [s.round_id for s in last_rounds(conn, "t1", 5)] == [ROUND]
    assert story is not None
    assert story.outcome == "completed" and len(story.lines) == len(EVENTS)
    assert story.wagers == {"1": {"ante": 500, "progressive": 100}, "2": {}}
    assert story.meters == {"minor": 1200}  # "\u0661\u0662" is not 12 cents; "lots" and 12.5 are no amounts
    assert story.table_result is None  # a bool is not an amount
    assert story.problems == [
        "seq 2 no_more_bets: wagers[2][ante] '\u0665\u0660\u0660' is not a whole number of cents (a JSON integer or "
        "ASCII digits); left out",
        "seq 2 no_more_bets: wagers[3] 'ante 500' is not an object of spot to cents; left out",
        "seq 3 meter.incremented: meter_after_cents '\u0661\u0662' is not a whole number of cents (a JSON integer or "
        "ASCII digits); left out",
        "seq 4 meter.incremented: meter_after_cents 'lots' is not a whole number of cents (a JSON integer or ASCII "
        "digits); left out",
        "seq 6 meter.incremented: meter_after_cents 12.5 is not a whole number of cents (a JSON integer or ASCII "
        "digits); left out",
        "seq 7 seat.settled: payload {'seat': 1, 'wagers': [1, 2]} is not what a seat.settled holds (TypeError: "
        "'int' object is not subscriptable); left out",
        "seq 8 tilt.raised: payload ['not', 'an', 'object'] is not a JSON object; left out",
        "seq 9 round.completed: table_result True is not a whole number of cents (a JSON integer or ASCII digits); "
        "left out",
    ]
    text = render_round(story)
    assert "archived fields not as they should be: 8" in text and "seat 1: ante $5.00, progressive $1.00" in text
    assert "meters after the round: minor $12.00" in text


def test_tablectl_floor_round_says_which_row_and_field_is_bad(floor_dsn: str, tmp_path: Path) -> None:
    _seed(floor_dsn)
    config = tmp_path / "floor.toml"
    config.write_text(floor_toml(floor_dsn, "mqtt://127.0.0.1:1", "casino", "floor-test"))
    done = here("floor", "--config", config, "round", ROUND)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "seq 4 meter.incremented: meter_after_cents 'lots' is not a whole number of cents" in done.stdout
    as_json = here("floor", "--config", config, "round", ROUND, "--json")
    assert as_json.returncode == 0 and len(json.loads(as_json.stdout)["problems"]) == 8
