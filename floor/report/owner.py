"""Which period owns a round's events (docs/floor.md, "Which day owns a round"): an event of a round counts where
its round ended (`round.completed` or `round.voided`) when that is within a gaming day of the event's own day; any
other event where its own ts lies. controller/store/totals.py applies the same rule to a table's journal.

Most events lie in the period with their round's end; only rounds cut by the period's edges differ. So the exceptions
are found once per report, in two small temp tables, and every figure's query reads the period by its ts as before,
with a hashed look-up of those few: `moved_in` (events outside the period whose round ended inside it) and
`moved_out` (events inside whose round ended outside). The neighbouring days are read only as far as moved-in events
reach (`Claims`), so a report reads the same partitions as before unless a round crosses its edge.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import psycopg

from floor.days import Period

Conn = psycopg.Connection[tuple[Any, ...]]

_ENDS = """CREATE TEMP TABLE round_ends AS
SELECT table_id, round_id, min(ts) AS ended, min(gaming_day) AS day FROM events
WHERE type IN ('round.completed', 'round.voided') AND round_id IS NOT NULL AND ts >= %s AND ts < %s
  AND gaming_day BETWEEN %s AND %s
GROUP BY 1, 2"""

# Events outside the period (within a day of its edges) whose round ended in it, a day or less from their own day.
_IN = """CREATE TEMP TABLE moved_in AS
SELECT e.table_id, e.round_id, e.gaming_day, min(e.ts) AS first_ts, max(e.ts) AS last_ts
FROM events e JOIN round_ends r ON r.table_id = e.table_id AND r.round_id = e.round_id
WHERE r.ended >= %(start)s AND r.ended < %(end)s AND e.gaming_day BETWEEN %(before)s AND %(after)s
  AND (e.ts < %(start)s OR e.ts >= %(end)s) AND e.gaming_day BETWEEN r.day - 1 AND r.day + 1
GROUP BY 1, 2, 3"""

# Events inside the period whose round ended outside it, a day or less from their own day.
_OUT = """CREATE TEMP TABLE moved_out AS
SELECT DISTINCT e.table_id, e.round_id, e.gaming_day
FROM events e JOIN round_ends r ON r.table_id = e.table_id AND r.round_id = e.round_id
WHERE (r.ended < %(start)s OR r.ended >= %(end)s) AND e.gaming_day BETWEEN %(first)s AND %(last)s
  AND e.ts >= %(start)s AND e.ts < %(end)s AND e.gaming_day BETWEEN r.day - 1 AND r.day + 1"""


@dataclass(frozen=True, slots=True)
class Claims:
    """How far the period's events reach once the rounds across its edges are counted where they ended."""

    lo: datetime
    hi: datetime  # inclusive: the last moved-in event's ts, or the period's end (which the CASE excludes)
    first_day: date
    last_day: date


def prepare(conn: Conn, period: Period) -> Claims:
    for t in ("moved_in", "moved_out", "round_ends"):
        conn.execute(f"DROP TABLE IF EXISTS {t}".encode())
    one, two = timedelta(days=1), timedelta(days=2)
    conn.execute(_ENDS.encode(), [period.start - two, period.end + two, period.first_day - two, period.last_day + two])
    conn.execute(b"ANALYZE round_ends")
    args = {
        "start": period.start,
        "end": period.end,
        "first": period.first_day,
        "last": period.last_day,
        "before": period.first_day - one,
        "after": period.last_day + one,
    }
    conn.execute(_IN.encode(), args)
    conn.execute(_OUT.encode(), args)
    conn.execute(b"ANALYZE moved_in")
    conn.execute(b"ANALYZE moved_out")
    row = conn.execute(b"SELECT min(first_ts), max(last_ts), min(gaming_day), max(gaming_day) FROM moved_in").fetchone()
    lo, hi, d0, d1 = row if row is not None else (None, None, None, None)
    return Claims(
        min(period.start, lo) if lo is not None else period.start,
        max(period.end, hi) if hi is not None else period.end,
        min(period.first_day, d0) if d0 is not None else period.first_day,
        max(period.last_day, d1) if d1 is not None else period.last_day,
    )


def condition(alias: str, period: Period, claims: Claims) -> tuple[str, list[Any]]:
    """The period's events on `alias`, as SQL and its parameters (after `prepare` on the same connection)."""
    a = alias
    key = f"({a}.table_id, coalesce({a}.round_id, ''), {a}.gaming_day)"
    sql = (
        f"{a}.gaming_day BETWEEN %s AND %s AND {a}.ts >= %s AND {a}.ts <= %s AND CASE"
        f" WHEN {a}.ts >= %s AND {a}.ts < %s THEN {key} NOT IN (SELECT table_id, round_id, gaming_day FROM moved_out)"
        f" ELSE {key} IN (SELECT table_id, round_id, gaming_day FROM moved_in) END"
    )
    return sql, [claims.first_day, claims.last_day, claims.lo, claims.hi, period.start, period.end]
