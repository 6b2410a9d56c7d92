"""What the console reads from the archive at start (floor/console/server.py, `load`): each table's latest birth and
last log lines, and the floor's refused messages (how many, and the latest); after that the service feeds it."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import psycopg

from floor.config import DatabaseSection
from floor.console.session_ack import load_session
from floor.console.table_extra import LOG_LINES, log_line, note_closing, note_event
from floor.console.views import FloorView, stamp
from floor.days import parse_ts
from floor.db import connect, conninfo
from floor.journals import journal_span
from floor.live import TableLive
from floor.marks import MARK_EVENTS, note_marks, note_this_round
from floor.reach import answered
from floor.status import refused_latest


async def load_unless_stopped(
    view: FloorView, live: dict[str, TableLive], db: DatabaseSection, stopping: asyncio.Event
) -> bool:
    """`load_view` run in a thread on a connection of its own; False once `stopping` was set first. The thread's connect
    is one no stop reaches (a host gone dark since the writer connected holds it until connect_timeout, and the
    process's exit waits for the thread), so it is opened once an asynchronous connect raced against the stop has
    been answered (floor/reach.py)."""
    if not await answered(conninfo(db), stopping):
        return False

    def run() -> None:
        with connect(db) as conn:
            load_view(view, live, conn)

    await asyncio.to_thread(run)
    return True


def load_view(view: FloorView, live: dict[str, TableLive], conn: psycopg.Connection[tuple[Any, ...]]) -> None:
    view.live.update(live)
    for table_id, payload in conn.execute(
        "SELECT DISTINCT ON (table_id) table_id, payload FROM births ORDER BY table_id, ts DESC, received_at DESC"
    ).fetchall():
        x = view.table(str(table_id))
        x.birth = dict(payload)
        x.dealing_method = str(x.birth.get("game", {}).get("dealing_method"))
    load_session(view, conn)
    if (refused := refused_latest(conn)) is not None:
        view.note_refused(*refused[:3], stamp(refused[3]))
    for table_id, table in live.items():
        start = journal_start(conn, table)
        load_said(view, table_id, conn, start)
        rows = last_lines(conn, table_id, start)
        x = view.table(table_id)
        for tid, seq, ts, rid, type_, rule, payload in reversed(rows):
            e = {"table_id": tid, "seq": seq, "ts": ts, "round_id": rid, "type": type_, "rule": rule}
            x.lines.append(log_line({**e, "payload": payload}))
            note_event(x, str(type_), str(ts), payload, None if rid is None else str(rid))
        load_round_in_play(view, table, conn, start)


# The table's last lines, of the journal in use alone (floor/journals.py: from the start of the journal its last event
# is of; a replaced PC's fresh journal counts seq from 1 again, so by seq alone the old journal's events came into the
# live log and the tile's last round). Newest first through event_keys' primary key (table_id, seq), each event then
# found by its key in its day's partition (events' primary key: gaming_day, event_id): `events` has no index on seq,
# and `ORDER BY seq` on it sorted every event the table ever archived, at each console start (Part 74: 330 ms a table
# at 262k events). An older journal's events, skipped by their ts, are read only where its seqs are above the new
# journal's archived ones, which the archive refuses (seq_reused) while the old keys last.
LAST_LINES = (
    "SELECT e.table_id, e.seq, e.ts_text, e.round_id, e.type, e.rule, e.payload FROM event_keys k"
    " JOIN events e ON e.gaming_day = k.gaming_day AND e.event_id = k.event_id"
    " WHERE k.table_id = %(t)s AND e.ts >= coalesce(%(start)s, '-infinity'::timestamptz)"
    " ORDER BY k.seq DESC LIMIT %(n)s"
)


def last_lines(conn: psycopg.Connection[tuple[Any, ...]], table_id: str, start: datetime | None) -> list[Any]:
    """The table's last LOG_LINES events since `start`, newest first. Without parallel workers: the planner, costing a
    probe into every day's partition for each key (it prunes them only as it runs), chose two workers, whose start
    took 44 ms of the 55 on a loaded floor PC for a read of 1.5 ms (docs/performance-history.md). SET LOCAL in a
    transaction of its own (a savepoint in the caller's: the setting then lasts to its end, for reads as small)."""
    with conn.transaction():
        conn.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        return conn.execute(LAST_LINES, {"t": table_id, "start": start, "n": LOG_LINES}).fetchall()


def journal_start(conn: psycopg.Connection[tuple[Any, ...]], live: TableLive) -> datetime | None:
    """When the journal the table's last event is of began; None for a table with one journal (read whole) or no
    event yet."""
    if live.last_event_at is None:
        return None
    return journal_span(conn, live.table_id, parse_ts(live.last_event_at))[0]


# The table's last word on its dealing method (null: none usable) and on its shuffle, however long ago: its last 200
# lines may not reach back to them (a table waiting on no_method goes on saying other things). Each the newest of the
# table's events by ts (events_table_ts): a method is said at least at each opening, a shuffle at each round. Each in
# the journal in use (since `start`): a replaced PC's fresh journal says nothing of the old one's devices.
IN_JOURNAL = "ts >= coalesce(%s, '-infinity'::timestamptz)"
LAST_SAID = (
    "type IN ('table.opened', 'device.out_of_order', 'device.back_in_service')",
    "(type = 'shuffle.started' OR (type IN ('device.out_of_order', 'device.back_in_service') "
    "AND payload->>'device' = 'shuffler'))",
)


def load_said(
    view: FloorView, table_id: str, conn: psycopg.Connection[tuple[Any, ...]], start: datetime | None
) -> None:
    found = []
    for which in LAST_SAID:
        row = conn.execute(
            f"SELECT ts, seq, type, ts_text, payload FROM events WHERE table_id = %s AND {which} "
            f"AND {IN_JOURNAL} ORDER BY ts DESC, seq DESC LIMIT 1",
            (table_id, start),
        ).fetchone()
        if row is not None:
            found.append(row)
    # Oldest first: the shuffler's out-of-order names a method too, which a later word on the method overrides.
    for _, _, type_, ts, payload in sorted(found, key=lambda r: (r[0], r[1])):
        note_event(view.table(table_id), str(type_), str(ts), payload)
    load_marks(view, table_id, conn, start)


def load_marks(
    view: FloorView, table_id: str, conn: psycopg.Connection[tuple[Any, ...]], start: datetime | None
) -> None:
    """Every device the table has marked now: its last `table.opened` names those still marked, and each mark and
    return since then changes them (the newest alone, as load_said reads, forgot the shuffler once the shoe was
    marked after it)."""
    opened = conn.execute(
        f"SELECT ts, seq FROM events WHERE table_id = %s AND type = 'table.opened' AND {IN_JOURNAL} "
        "ORDER BY ts DESC, seq DESC LIMIT 1",
        (table_id, start),
    ).fetchone()
    # No opening in the journal in use (a fresh journal's, refused as a seq reused): its marks since it began.
    since = (start or "-infinity", -1) if opened is None else (opened[0], opened[1])
    rows = conn.execute(
        f"SELECT type, payload FROM events WHERE table_id = %s AND type IN {MARK_EVENTS!r} "
        "AND (ts, seq) >= (%s::timestamptz, %s) ORDER BY ts, seq",
        (table_id, *since),
    ).fetchall()
    marks = view.table(table_id).out_of_order
    for type_, payload in rows:
        if isinstance(payload, dict):
            note_marks(marks, str(type_), payload)


# What the round in play's own events (events_round: round_id, seq) say, in the journal now writing (floor/journals.py:
# a fresh journal counts its round ids from 1 again): the mark that says what becomes of the round, and the table's
# newest word on a close waiting for it (a close is asked, and said again at a restart, only in a round past "no more
# bets": one asked before closes the table at once).
THIS_ROUND = (
    "SELECT payload FROM events WHERE round_id = %s AND table_id = %s AND type = 'device.out_of_order' "
    "AND payload ? 'this_round' AND ts >= coalesce(%s, '-infinity'::timestamptz) ORDER BY seq DESC LIMIT 1"
)
CLOSE_ASKED = (
    "SELECT ts, seq, type, payload FROM events WHERE round_id = %s AND table_id = %s "
    "AND type IN ('table.closing', 'table.recovered') AND ts >= coalesce(%s, '-infinity'::timestamptz) "
    "ORDER BY seq DESC LIMIT 1"
)
# Closed, or opened again, since (events_type_ts: those events of the floor's tables since the round in play began).
CLOSE_DONE = (
    "SELECT 1 FROM events WHERE type IN ('table.closed', 'table.opened') AND ts >= %s AND table_id = %s "
    "AND (ts, seq) > (%s, %s) LIMIT 1"
)


def load_round_in_play(
    view: FloorView, live: TableLive, conn: psycopg.Connection[tuple[Any, ...]], start: datetime | None
) -> None:
    """What becomes of the round in play by a device marked in it (`this_round`) and a close waiting for it, however
    many events ago either was said: the last 200 lines alone lost them in a long round (a hand dealt slowly, a chip
    count awaited, a table held on a block)."""
    if live.round_id is None:
        return
    # Said here in place of what the last lines said: read by seq, those mix an old journal's round of the same id in.
    x = view.table(live.table_id)
    x.this_round.clear()
    row = conn.execute(THIS_ROUND, (live.round_id, live.table_id, start)).fetchone()
    if row is not None and isinstance(row[0], dict):
        note_this_round(x.this_round, "device.out_of_order", row[0], live.round_id)
    x.closing = None
    asked = conn.execute(CLOSE_ASKED, (live.round_id, live.table_id, start)).fetchone()
    if asked is not None and isinstance(asked[3], dict):
        at, seq, type_, payload = asked
        if conn.execute(CLOSE_DONE, (at, live.table_id, at, seq)).fetchone() is None:
            note_closing(x, str(type_), payload)
