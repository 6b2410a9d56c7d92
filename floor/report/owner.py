"""Which period owns a round's events (docs/floor.md, "Which day owns a round"): an event of a round counts where
its round ended (`round.completed` or `round.voided`) when that is within a gaming day of the event's own day; any
other event where its own ts lies. controller/store/totals.py applies the same rule to a table's journal.

Most events lie in the period with their round's end; only rounds cut by the period's edges differ. So the exceptions
are found once per report, in two small temp tables, and every figure's query reads the period by its ts as before,
with a hashed look-up of those few: `moved_in` (a round's events of one gaming day, some outside the period, whose
round ended inside it) and `moved_out` (a round's events of one gaming day, some inside, whose round ended outside).
Both come from the per-round summary kept at ingest (floor/rounds.py: one row per round and gaming day), so finding
them reads no events at all; the neighbouring days' events are read only as far as moved-in ones reach (`Claims`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import psycopg

from floor.days import Period
from floor.rounds import SummaryPending, pending

Conn = psycopg.Connection[tuple[Any, ...]]

# The only rounds whose events may count away from their own ts: those with events in two gaming days or more
# (`spans`), and those with a day's events across the period's start or end (a round cut by a shift's edge, or by a
# day's when a row's gaming day is not its ts's: [gaming_day] changed since it was archived), a day or less away.
_EDGE = """CREATE TEMP TABLE edge_rounds AS
SELECT table_id, round_id FROM round_days WHERE spans AND gaming_day BETWEEN %(before)s AND %(after)s
UNION
SELECT table_id, round_id FROM round_days WHERE gaming_day BETWEEN %(before)s AND %(after)s
  AND ((first_ts < %(start)s AND last_ts >= %(start)s) OR (first_ts < %(end)s AND last_ts >= %(end)s))"""

# Each of those rounds' first end within two days of the period (the gaming days of that window too), and its day.
_ENDS = """CREATE TEMP TABLE round_ends AS
SELECT d.table_id, d.round_id, min(x) AS ended, min(d.gaming_day) AS day
FROM edge_rounds c JOIN round_days d ON d.table_id = c.table_id AND d.round_id = c.round_id, unnest(d.ends) x
WHERE cardinality(d.ends) > 0 AND x >= %s AND x < %s AND d.gaming_day BETWEEN %s AND %s
GROUP BY 1, 2"""

# A round's day of events, some of them outside the period (within a day of its edges), whose round ended in it, a
# day or less from that day. Events of that day inside the period count there anyway: the look-up is for the others.
_IN = """CREATE TEMP TABLE moved_in AS
SELECT d.table_id, d.round_id, d.gaming_day, d.first_ts, d.last_ts
FROM round_days d JOIN round_ends r ON r.table_id = d.table_id AND r.round_id = d.round_id
WHERE r.ended >= %(start)s AND r.ended < %(end)s AND d.gaming_day BETWEEN %(before)s AND %(after)s
  AND (d.first_ts < %(start)s OR d.last_ts >= %(end)s) AND d.gaming_day BETWEEN r.day - 1 AND r.day + 1"""

# A round's day of events, some of them inside the period, whose round ended outside it, a day or less from that day.
_OUT = """CREATE TEMP TABLE moved_out AS
SELECT d.table_id, d.round_id, d.gaming_day
FROM round_days d JOIN round_ends r ON r.table_id = d.table_id AND r.round_id = d.round_id
WHERE (r.ended < %(start)s OR r.ended >= %(end)s) AND d.gaming_day BETWEEN %(first)s AND %(last)s
  AND d.first_ts < %(end)s AND d.last_ts >= %(start)s AND d.gaming_day BETWEEN r.day - 1 AND r.day + 1"""


@dataclass(frozen=True, slots=True)
class Claims:
    """How far the period's events reach once the rounds across its edges are counted where they ended."""

    lo: datetime
    hi: datetime  # inclusive: the last moved-in event's ts, or the period's end (which the CASE excludes)
    first_day: date
    last_day: date


def prepare(conn: Conn, period: Period) -> Claims:
    one, two = timedelta(days=1), timedelta(days=2)
    missing = pending(conn, period.first_day - two, period.last_day + two)
    if missing:
        days = ", ".join(str(d) for d in missing)
        raise SummaryPending(
            f"the round summary of gaming day(s) {days} is not filled yet (archived before this version): "
            "run `tablectl floor --config FLOOR.toml fill-rounds` (the service also fills it at start), then again"
        )
    for t in ("moved_in", "moved_out", "round_ends", "edge_rounds"):
        conn.execute(f"DROP TABLE IF EXISTS {t}".encode())
    args = {
        "start": period.start,
        "end": period.end,
        "first": period.first_day,
        "last": period.last_day,
        "before": period.first_day - one,
        "after": period.last_day + one,
    }
    conn.execute(_EDGE.encode(), args)
    conn.execute(b"ANALYZE edge_rounds")
    conn.execute(_ENDS.encode(), [period.start - two, period.end + two, period.first_day - two, period.last_day + two])
    conn.execute(b"ANALYZE round_ends")
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
