"""An archive as a floor before the round summary (schema migration 6) left it, two gaming days of two tables, and
a way to hold the summary of its second day at a known point: the tests of a stop (tests/floor/test_summary_stop.py:
a service's SIGTERM, `fill-rounds`' Ctrl-C) share them.

Table t2 has a round with events in both days (`t2-x`). Once the first day is summarised, the second day's summary
of t2 ends with the statement marking the round's rows as spanning (floor/rounds.py SPANS), which updates the first
day's row too: a session holding that row (`SELECT ... FOR UPDATE`, left open, as a long transaction would) holds
the statement, after its day's rows were merged in and before they commit, for as long as the test likes. t1's day,
summarised before t2's (tables in order), touches no row of t2 and is committed.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from floor.config import DatabaseSection
from floor.db import connect
from floor.rounds import fill_pending, pending
from floor.schema import migrate, partition_ddl
from tests.floor.conftest import wait_for

D1, D2 = date(2026, 11, 20), date(2026, 11, 21)
SPANNING = "t2-x"
# (gaming day, table, round, first ts, last ts, first seq, last seq, ends, spans)
Row = tuple[date, str, str, datetime, datetime, int, int, list[datetime], bool]
Event = tuple[date, str, int, datetime, str, str]  # gaming day, table, seq, ts, round, type


def events(per_table: int = 300) -> list[Event]:
    """Each table's rounds of five events (the fifth its end) through both days, seqs counting across them, and t2's
    round `t2-x` dealt late on the first day and completed on the second."""
    out: list[Event] = []
    for table in ("t1", "t2"):
        seq = 0
        for day in (D1, D2):
            at = datetime(day.year, day.month, day.day, 7, tzinfo=UTC)
            for i in range(per_table):
                seq += 1
                kind = "round.completed" if i % 5 == 4 else "wager.accepted"
                out.append((day, table, seq, at + timedelta(seconds=10 * i), f"{table}-{day:%d}-r{i // 5}", kind))
    x = datetime(D1.year, D1.month, D1.day, 23, tzinfo=UTC)
    out += [
        (D1, "t2", 10_001, x, SPANNING, "wager.accepted"),
        (D2, "t2", 10_002, x + timedelta(hours=8), SPANNING, "round.completed"),
    ]
    return out


def old_archive(dsn: str, evs: list[Event]) -> None:
    """The events in their partitions at schema 6, then migrated (both days pending) and the first day summarised."""
    with psycopg.connect(dsn) as conn:
        migrate(conn, upto=6)
        for day in (D1, D2):
            conn.execute(partition_ddl(day))
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type,"
                " payload, replayed) VALUES (%s, %s, %s, %s, 'b1', %s, '', %s, %s, '{}', false)",
                [(d, t, s, f"{t}-{s}", ts, r, k) for d, t, s, ts, r, k in evs],
            )
    with connect(DatabaseSection(dsn=dsn)) as conn:
        migrate(conn)
        said: list[int] = []
        fill_pending(conn, lambda n, *_: said.append(n), lambda: len(said) == 1)  # the first day only
        assert pending(conn) == [D2]


def expected(evs: list[Event], days: tuple[date, ...] = (D1, D2), tables: tuple[str, ...] = ("t1", "t2")) -> list[Row]:
    """The summary's rows once it holds `days` of `tables`, computed from the events (not by the summary's SQL)."""
    by: dict[tuple[date, str, str], list[Event]] = {}
    for e in evs:
        if e[0] in days and e[1] in tables:
            by.setdefault((e[0], e[1], e[4]), []).append(e)
    days_of: dict[tuple[str, str], int] = {}  # a round marked spanning once the summary holds two days of it
    for _day, table, round_id in by:
        days_of[(table, round_id)] = days_of.get((table, round_id), 0) + 1
    return [
        (
            day,
            table,
            round_id,
            min(e[3] for e in rows),
            max(e[3] for e in rows),
            min(e[2] for e in rows),
            max(e[2] for e in rows),
            sorted(e[3] for e in rows if e[5] == "round.completed"),
            days_of[(table, round_id)] > 1,
        )
        for (day, table, round_id), rows in sorted(by.items())
    ]


def summary(conn: psycopg.Connection[tuple[Any, ...]]) -> list[Row]:
    rows = conn.execute(
        "SELECT gaming_day, table_id, round_id, first_ts, last_ts, first_seq, last_seq, ends, spans FROM round_days"
        " ORDER BY 1, 2, 3"
    ).fetchall()
    return [
        (d, t, r, a.astimezone(UTC), b.astimezone(UTC), s0, s1, [x.astimezone(UTC) for x in e], sp)
        for d, t, r, a, b, s0, s1, e, sp in rows
    ]


def hold_spanning(holder: psycopg.Connection[tuple[Any, ...]]) -> None:
    """The first day's row of the spanning round locked in `holder`'s transaction, left open."""
    got = holder.execute(
        "SELECT 1 FROM round_days WHERE gaming_day = %s AND table_id = 't2' AND round_id = %s FOR UPDATE",
        (D1, SPANNING),
    ).fetchall()
    assert got == [(1,)]


def spans_waiting(dsn: str) -> int | None:
    """The backend whose summary statement (SPANS) waits on the held row, if one does."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND query LIKE '%UPDATE round_days d SET spans%'"
        ).fetchone()
        return int(str(row[0])) if row else None


def wait_held(dsn: str, who: str) -> None:
    wait_for(lambda: spans_waiting(dsn) is not None, 60, f"{who} summarising the second day, held on the row")


def logged(logs: Path, boot: int) -> list[dict[str, Any]]:
    text = (logs / f"floor-{boot}.log").read_text(errors="replace")
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]
