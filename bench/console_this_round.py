"""The console's start: what becomes of the round in play by a device marked in it (`this_round`), read from the
archive for each table whatever the mark's distance (floor/console/loading.py `load_round_in_play`), on a big archive.

The archive is floor_report.py's generated floor (several gaming days of a floor at a round a minute, each day its
own partition, loaded with fsync off: set-up, not what is measured), with one table's round in play made long: a
`device.out_of_order` with `this_round` at its start and a `table.closing`, then `--taps` more of the round's events
(lines the table ignores), so the mark is far past the last 200 lines a restarted console reads back. Timed back to
back on the same connection, interleaved, `--runs` times each: the baseline, main's read of a table's last lines before
ord26 (its last 200 events, `ORDER BY seq DESC LIMIT 200` on `events`, which sorted every event of the table); the
read the console's start makes now (the journal's start, then the last 200 events of that journal through
event_keys' primary key, floor/console/loading.py LAST_LINES); and `load_round_in_play` (the round's own mark and
close by events_round, and a close done since by events_type_ts). Then each read's plan (EXPLAIN ANALYZE, BUFFERS):
which index, how many rows. The generator writes `events` alone; the keys the archive writer keeps beside them
(event_keys) are filled from them before timing (set-up); each table's seq counts on across the days (`keyed`).

Every table besides marks a device an hour (MARKS) and closes and opens again once a day (CLOSINGS), so that the
plans are chosen as on a floor's archive.

Run:  .venv/bin/python bench/console_this_round.py [--tables 30] [--days 7] [--hours 24] [--taps 5000] [--runs 200]
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import timedelta

from benchlib import machine, progress
from floor_report import DAY, START, generate, spill

from floor.config import DatabaseSection
from floor.console.loading import (
    CLOSE_ASKED,
    CLOSE_DONE,
    LAST_LINES,
    THIS_ROUND,
    journal_start,
    last_lines,
    load_round_in_play,
)
from floor.console.table_extra import LOG_LINES
from floor.console.views import FloorView
from floor.db import connect
from floor.journals import journal_span
from floor.live import TableLive
from floor.pgcluster import PgCluster

TABLE = "b000"
ROUND = f"{TABLE}-held-r000001"
BEFORE = "SELECT table_id, seq, ts_text, round_id, type, rule, payload FROM events WHERE table_id = %(t)s " \
    "ORDER BY seq DESC LIMIT 200"  # fmt: skip
# The keys the archive writer inserts with each event (floor/archive_rows.py INSERT_EVENTS); the digest is not read.
KEYS = """
INSERT INTO event_keys (table_id, seq, event_id, boot_id, digest, gaming_day)
SELECT table_id, seq, event_id, boot_id, sha256(convert_to(event_id, 'UTF8')), gaming_day FROM events
"""
HELD = """
INSERT INTO events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type, rule, payload,
                    replayed)
SELECT %(day)s, %(t)s, %(seq)s + k, md5('held:' || k), 'boot', %(start)s + make_interval(secs => k),
       to_char(%(start)s + make_interval(secs => k), 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), %(r)s,
       CASE k WHEN 0 THEN 'device.out_of_order' WHEN 1 THEN 'table.closing' ELSE 'input.refused' END, '655a.13(g)',
       CASE k WHEN 0 THEN '{"device": "shoe", "reason": "covered", "takes_over": "hand", "dealing_method": "hand",
                            "this_round": "automated_shoe"}'::jsonb
              WHEN 1 THEN '{"after_round": 1, "by": "interrupt"}'::jsonb
              ELSE '{"input": "shuffled", "phase": "decision", "reason": "no shuffle was asked for"}'::jsonb END,
       false
FROM generate_series(0, %(taps)s) k
"""


# Marks on every table besides, one an hour (each a round's `cards.dealt` turned into a mark said in that round): far
# more than a floor makes, so that the plan is not chosen on an archive that holds a single mark.
MARKS = """
UPDATE events SET type = 'device.out_of_order', payload = '{"device": "shoe", "reason": "covered",
  "takes_over": "hand", "dealing_method": "hand", "this_round": "automated_shoe"}'::jsonb
WHERE type = 'cards.dealt' AND (seq - 8) % (26 * 60) = 0
"""
# And each table closing and opening again once a gaming day (a round's `meter.contributed` turned into them), the
# events a close done is looked for among.
CLOSINGS = """
UPDATE events SET type = CASE WHEN seq % 2 = 0 THEN 'table.closed' ELSE 'table.opened' END
WHERE type = 'meter.contributed' AND (seq - 7) % (26 * 1440) < 26 * 2
"""


def held_round(dsn: str, days: int, taps: int) -> TableLive:
    """The table's round in play, the mark at its start and `taps` events after it, past the last generated day's
    events; the table's live model as a restarted floor has it (its round, its last event)."""
    day = DAY + timedelta(days=days - 1)
    start = START + timedelta(days=days - 1, hours=23, minutes=59, seconds=59)
    with connect(DatabaseSection(dsn=dsn)) as conn:
        (top,) = conn.execute("SELECT max(seq) FROM events WHERE table_id = %s", (TABLE,)).fetchone() or (0,)
        args = {"day": day, "t": TABLE, "seq": int(top) + 1, "start": start, "r": ROUND, "taps": taps}
        conn.execute(HELD.encode(), args)
        marks = conn.execute(MARKS.encode()).rowcount
        closings = conn.execute(CLOSINGS.encode()).rowcount
        progress(f"{marks:,} marks and {closings:,} closings and openings on the floor's tables besides")
        keys = conn.execute(KEYS.encode()).rowcount
        progress(f"{keys:,} event keys filled from the events")
        conn.execute(b"ANALYZE events")
        conn.execute(b"ANALYZE event_keys")
        conn.commit()
        last = start + timedelta(seconds=taps)
    return TableLive(TABLE, round_id=ROUND, last_event_at=last.strftime("%Y-%m-%dT%H:%M:%S.000000Z"))


def timed(dsn: str, live: TableLive, runs: int) -> tuple[list[float], list[float], list[float]]:
    base: list[float] = []
    lines: list[float] = []
    read: list[float] = []
    with connect(DatabaseSection(dsn=dsn)) as conn:
        # Each statement its own transaction, so the read now's SET LOCAL (no parallel workers) ends with it and the
        # baseline is planned as main planned it.
        conn.autocommit = True
        for _ in range(runs):
            t0 = time.perf_counter()
            before = conn.execute(BEFORE, {"t": TABLE}).fetchall()
            base.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            start = journal_start(conn, live)
            now = last_lines(conn, TABLE, start)
            lines.append(time.perf_counter() - t0)
            if now != before:
                raise SystemExit("the read through event_keys found other lines than the read it replaces")
            view = FloorView()
            t0 = time.perf_counter()
            load_round_in_play(view, live, conn, start)
            read.append(time.perf_counter() - t0)
            if view.table(TABLE).this_round.get("round_id") != ROUND or view.table(TABLE).closing is None:
                raise SystemExit("the round in play's mark or close was not found: the bench measured nothing")
        start, _ = journal_span(conn, TABLE, START)
        for label, lines_sql, lines_args in (
            ("the last lines before (main's)", BEFORE, {"t": TABLE}),
            ("the last lines now", LAST_LINES, {"t": TABLE, "start": start, "n": LOG_LINES}),
        ):
            print(f"the read of {label}: its plan")
            with conn.transaction():
                if lines_sql is LAST_LINES:
                    conn.execute("SET LOCAL max_parallel_workers_per_gather = 0")  # as last_lines reads
                explained = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS) {lines_sql}".encode(), lines_args).fetchall()
            for (line,) in explained:
                print(f"  {line}")
        asked = conn.execute(CLOSE_ASKED, (ROUND, TABLE, start)).fetchone()
        if asked is None:
            raise SystemExit("no close asked in the round in play")
        for name, sql, args in (
            ("the mark", THIS_ROUND, (ROUND, TABLE, start)),
            ("the close asked", CLOSE_ASKED, (ROUND, TABLE, start)),
            ("the close done since", CLOSE_DONE, (asked[0], TABLE, asked[0], asked[1])),
        ):
            print(f"the read of {name}: its plan")
            for (line,) in conn.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}".encode(), args).fetchall():
                print(f"  {line}")
    return base, lines, read


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=30)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--hours", type=int, default=24, help="of each gaming day played")
    ap.add_argument("--taps", type=int, default=5000, help="the round in play's events after its mark")
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    started_on = machine()
    cluster = PgCluster.create(durable=False, shared_buffers="256MB", max_wal_size="4GB", maintenance_work_mem="256MB")
    try:
        cluster.start()
        dsn = cluster.create_database("bench_this_round")
        rows = 0
        for offset in range(args.days):
            progress(f"generating gaming day {offset + 1} of {args.days}: {args.tables} tables x {args.hours} h")
            rows += generate(dsn, args.tables, args.hours, 18, offset, birth=offset == 0, keyed=True)[0]
        spill(dsn)
        live = held_round(dsn, args.days, args.taps)
        base, lines, read = timed(dsn, live, args.runs)
    finally:
        cluster.remove()
    b, r = statistics.median(base) * 1000, statistics.median(read) * 1000
    n = statistics.median(lines) * 1000
    print(f"machine: {started_on}")
    print(f"archive: {rows:,} generated events over {args.days} gaming days (a partition each), {args.tables} tables,")
    print("  each table marking a device an hour;")
    print(f"  {TABLE}'s round in play: its mark, then {args.taps:,} more of its events")
    print(f"baseline: the last 200 lines of the table before (main's), {args.runs} runs:")
    print(f"  median {b:.2f} ms, max {max(base) * 1000:.2f} ms")
    print("the last 200 lines now (the journal's start, then through event_keys):")
    print(f"  median {n:.2f} ms, max {max(lines) * 1000:.2f} ms; median {n / b:.3f}x baseline")
    print("load_round_in_play (the round's mark and close, a close done since):")
    print(f"  median {r:.2f} ms, max {max(read) * 1000:.2f} ms;")
    print(f"  median {r / b:.2f}x baseline")


if __name__ == "__main__":
    main()
