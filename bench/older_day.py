"""An older gaming day of generated events, as the floor's archive holds one: the day's partition and `per_day`
`wager.accepted` events over `tables` tables, 100 ms apart, inserted in ts order as the archive writer appends them.
Shared by bench/ts_index_live.py and bench/ts_index_stop.py (tests/floor/ts_archive.py has its own, smaller days)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import psycopg

from floor.schema import partition_ddl


def insert_older_day(conn: psycopg.Connection[Any], day: date, per_day: int, tables: int) -> None:
    """The day's partition and its events, in the caller's transaction (not committed here)."""
    conn.execute(partition_ddl(day))
    start = datetime(day.year, day.month, day.day, 6, tzinfo=UTC)
    conn.execute(
        "INSERT INTO events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type,"
        " payload, replayed) SELECT %s, 'o' || (i %% %s), i, %s || i, 'b1', %s + i * interval '100 ms', '',"
        " 'r' || (i / 20), 'wager.accepted', '{\"seat\": 1, \"amount\": 500}', false"
        " FROM generate_series(1, %s) i",
        (day, tables, f"{day}-", start, per_day),
    )
