"""The per-round summary the reports read instead of the events of the neighbouring days (docs/floor.md, "Which
day owns a round"): one row per round and gaming day it has events in (`round_days`), with its first and last
event's ts and seq that day and the ts of every end (`round.completed`, `round.voided`) journaled that day.

It is kept by the database itself, in the transaction that archives the events: a statement trigger on `events`
folds each statement's new rows in (schema migration 7), so every writer (the archive's batches, a test's or a
bench's INSERT) keeps it, and only rows new to `events` reach it (a duplicate or a replay never passes
`event_keys`). Each column is merged as a set (least, greatest, union), so the order events arrive in (out of
order, a table back hours late, a day filled again below) never changes the result. Retention drops a day's rows
with its partition (floor/retention.py).

Days archived before migration 7 are listed in `round_days_pending` and summarised by `fill_pending`, a table's day
a transaction (resumable: a day is struck off once all its tables are; idempotent: the merge is). A
report whose window holds a pending day refuses, naming the command that fills it, rather than miss its rounds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import date
from functools import partial
from typing import Any

import psycopg
import structlog

from floor.config import DatabaseSection
from floor.db import connect, conninfo
from floor.reach import answered
from floor.stmt_stop import StatementStop, Stopped, run_stoppable

Conn = psycopg.Connection[tuple[Any, ...]]
log = structlog.get_logger("tablectl.floor")
ENDS = ("round.completed", "round.voided")
STOPPED = "round summary stopped; the next start summarises the day"
NOT_LISTED = "the day's tables were being listed; the day is still pending: the next start summarises it"

# The aggregate of some rows of events (`{source}`: the trigger's transition table, or a day's partition), merged
# into what is summarised already. Every column is a lattice join, so merging the same rows twice changes nothing.
UPSERT = """
INSERT INTO round_days AS d (gaming_day, table_id, round_id, first_ts, last_ts, first_seq, last_seq, ends)
SELECT gaming_day, table_id, round_id, min(ts), max(ts), min(seq), max(seq),
       coalesce(array_agg(DISTINCT ts ORDER BY ts) FILTER (WHERE type IN ('round.completed', 'round.voided')),
                '{{}}')
FROM {source} WHERE round_id IS NOT NULL{where}
GROUP BY gaming_day, table_id, round_id
ON CONFLICT (table_id, round_id, gaming_day) DO UPDATE SET
    first_ts = least(d.first_ts, excluded.first_ts), last_ts = greatest(d.last_ts, excluded.last_ts),
    first_seq = least(d.first_seq, excluded.first_seq), last_seq = greatest(d.last_seq, excluded.last_seq),
    ends = CASE WHEN cardinality(excluded.ends) = 0 THEN d.ends
                ELSE ARRAY(SELECT DISTINCT x FROM unnest(d.ends || excluded.ends) x ORDER BY x) END
"""

# A round with events in two gaming days or more: the only kind (with a day's round cut by a shift's edge) whose
# events may count outside their own ts, so the reports look only at these. Once set it stays (a day dropped by
# retention leaves it on the others: a round looked at for nothing, never one missed).
SPANS = """
UPDATE round_days d SET spans = true
FROM (SELECT DISTINCT table_id, round_id FROM {source} WHERE round_id IS NOT NULL{where}) n
WHERE d.table_id = n.table_id AND d.round_id = n.round_id AND NOT d.spans
  AND EXISTS (SELECT 1 FROM round_days o WHERE o.table_id = d.table_id AND o.round_id = d.round_id
              AND o.gaming_day <> d.gaming_day)
"""
# Writers of the summary take turns (the service's batches, a fill): a round's two days written at once by two
# transactions would each miss the other's row and leave `spans` unset. Reports read on undisturbed.
LOCK = "LOCK TABLE round_days IN SHARE ROW EXCLUSIVE MODE"
# A day's statements over millions of rows cost enough for PostgreSQL's JIT, whose LLVM compile (some 0.2 s, with
# inlining and optimisation) a cancel cannot interrupt: a stop then waited for it. Interpreted, the statement takes
# as long (4,000,000 events: 4.16 s against 4.14 s compiled) and ends within milliseconds of a cancel at any point.
NO_JIT = "SET LOCAL jit = off"
TABLES = "SELECT DISTINCT table_id FROM events WHERE gaming_day = %s ORDER BY 1"

MIGRATION = (
    """
CREATE TABLE round_days (
    gaming_day date        NOT NULL,
    table_id   text        NOT NULL,
    round_id   text        NOT NULL,
    first_ts   timestamptz NOT NULL,
    last_ts    timestamptz NOT NULL,
    first_seq  bigint      NOT NULL,
    last_seq   bigint      NOT NULL,
    ends       timestamptz[] NOT NULL DEFAULT '{}',
    spans      boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (table_id, round_id, gaming_day)
);
CREATE INDEX round_days_day ON round_days (gaming_day);
CREATE INDEX round_days_spans ON round_days (gaming_day) WHERE spans;
CREATE TABLE round_days_pending (gaming_day date PRIMARY KEY);
INSERT INTO round_days_pending (gaming_day)
SELECT to_date(substr(c.relname, 8), 'YYYYMMDD') FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'events';
CREATE FUNCTION round_days_add() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
"""
    + LOCK
    + ";\n"
    + UPSERT.format(source="new_events", where="")
    + ";\n"
    + SPANS.format(source="new_events", where="")
    + """;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER events_round_days AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION round_days_add();
CREATE FUNCTION round_days_clear() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    DELETE FROM round_days;
    DELETE FROM round_days_pending;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER events_round_days_truncate AFTER TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION round_days_clear();
"""
)


class SummaryPending(RuntimeError):
    """A report's window holds gaming days archived before the round summary and not summarised yet."""


def pending(conn: Conn, first: date | None = None, last: date | None = None) -> list[date]:
    """The gaming days not summarised yet (between first and last when given), oldest first."""
    row = conn.execute("SELECT to_regclass('round_days_pending') IS NOT NULL").fetchone()
    if row is None or not row[0]:
        raise SummaryPending(
            "the archive's schema predates the per-round summary (migration 7): start the floor service, which "
            "migrates it, or run `tablectl floor --config FLOOR.toml fill-rounds`"
        )
    rows = conn.execute(
        "SELECT gaming_day FROM round_days_pending WHERE gaming_day BETWEEN %s AND %s ORDER BY 1",
        (first or date.min, last or date.max),
    ).fetchall()
    return [r[0] for r in rows]


def fill_pending(
    conn: Conn,
    progress: Callable[[int, int, date, int], None] | None = None,
    stopping: Callable[[], bool] = lambda: False,
    stop: StatementStop | None = None,
) -> int:
    """Summarise every pending day, a table of it a transaction (under the writers' lock, held that short: the
    service's batches wait for one table's day at most), struck off once all its tables are; a stop at any point
    loses nothing done, and a day begun again is summarised the same. `progress(done, total, day, rounds)` after
    each day; `stopping()` is asked before each table. `stop`, a service's: its stop cancels the table's statement
    in flight (its transaction rolled back, what the day was left with said in the log) and the call returns then.
    Returns the days done."""
    days = pending(conn)
    conn.commit()
    for n, day in enumerate(days, 1):
        tables = _day_tables(conn, day, stop)
        if tables is None:
            log.info(STOPPED, gaming_day=str(day), left=NOT_LISTED)
            return n - 1
        rounds = 0
        for k, table_id in enumerate(tables):
            if stopping() or (stop is not None and stop.stopped.is_set()):
                return n - 1
            done = _fill_table(conn, day, table_id, stop)
            if done is None:
                log.info(STOPPED, gaming_day=str(day), table_id=table_id, left=_stopped_left(conn, k, len(tables)))
                return n - 1
            rounds += done
        if stopping() or (stop is not None and stop.stopped.is_set()):
            return n - 1
        with conn.transaction():
            conn.execute("DELETE FROM round_days_pending WHERE gaming_day = %s", (day,))
        if progress is not None:
            progress(n, len(days), day, rounds)
    return len(days)


def _day_tables(conn: Conn, day: date, stop: StatementStop | None) -> list[str] | None:
    """The day's tables, or None when `stop` stopped the scan (a big day's: a stop must not wait for it either)."""
    if stop is not None and not stop.enter(conn):
        return None
    run = conn.execute if stop is None else partial(stop.execute, conn)
    try:
        with conn.transaction():
            run(NO_JIT.encode())
            return [str(r[0]) for r in run(TABLES.encode(), (day,))]
    except Stopped:
        return None
    except psycopg.Error:
        if stop is not None and stop.stopped.is_set():
            return None
        raise
    finally:
        if stop is not None:
            stop.leave()


def _fill_table(conn: Conn, day: date, table_id: str, stop: StatementStop | None) -> int | None:
    """One table's day summarised in one transaction: the round-days merged, or None when `stop` stopped it (its
    transaction rolled back: nothing of it counted)."""
    if stop is not None and not stop.enter(conn):
        return None
    run = conn.execute if stop is None else partial(stop.execute, conn)
    where = " AND gaming_day = %s AND table_id = %s"
    try:
        with conn.transaction():  # rolled back by any error, Stopped included
            run(NO_JIT.encode())
            run(LOCK.encode())
            cur = run(UPSERT.format(source="events", where=where).encode(), (day, table_id))
            run(SPANS.format(source="round_days", where=where).encode(), (day, table_id))
            return max(cur.rowcount, 0)
    except Stopped:
        return None
    except psycopg.Error:
        if stop is not None and stop.stopped.is_set():
            return None  # its own cancel, or the server going away meanwhile: either way rolled back
        raise
    finally:
        if stop is not None:
            stop.leave()


def _stopped_left(conn: Conn, kept: int, tables: int) -> str:
    """What a stopped summary left of its day, for the log (the stop's words: a start, not a run, goes on)."""
    rolled = "its table's summary of the day rolled back"
    if conn.broken:
        rolled = "its table's summary of the day not committed (the connection was lost: the server rolls it back)"
    return (
        f"{rolled}; {kept} of the day's {tables} table(s) summarised before it, kept (merged the same again); the day "
        "is still pending: the next start summarises it"
    )


async def fill_beside(db: DatabaseSection, stop: asyncio.Event) -> None:
    """The service's task: the pending days summarised beside the archiving (a report over one refuses until then),
    each said in the log. A stop cancels the table's statement in flight (its transaction rolled back, said in the
    log with what the day was left with); the next start goes on from there."""
    halt = StatementStop("round summary")

    def said(done: int, total: int, day: date, rounds: int) -> None:
        log.info("round summary filled", gaming_day=str(day), rounds=rounds, done=done, of=total)

    def fill() -> bool:
        with connect(db) as conn:
            # Asked here, in the thread: run_stoppable's end marks `halt` stopped whatever the work did.
            return fill_pending(conn, said, stop=halt) > 0 and not halt.stopped.is_set()

    # The thread's connect is one no stop reaches (a host gone dark holds it until connect_timeout, and the process's
    # exit waits for the thread): it is opened once the server answered an asynchronous connect raced against the stop.
    if not await answered(conninfo(db), stop):
        return
    if await run_stoppable(fill, stop, halt):
        log.info("round summary complete")
