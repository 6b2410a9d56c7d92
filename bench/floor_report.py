"""The time `tablectl report` takes for one gaming day of a 500-table floor at a round a minute (generated data).

The day is generated inside PostgreSQL (generate_series: the archive's own tables and partition, the shapes of the
real events the report reads: lock-outs, settlements with their wagers, folds, bonus settlements, completed rounds,
jackpots and commands, and the other events of a round as filler), then the report is built for that day in every
format, as `tablectl report --day` does. Baseline: one full scan of the day's partition (`SELECT count(*)`, cold
statistics aside), the least any report over the whole day must read. The cluster runs with fsync off: loading
the day is set-up, not what is measured.

Run:  .venv/bin/python bench/floor_report.py [--tables 500] [--hours 24] [--filler 18] [--neighbours] [--plans]

A round that runs past the next day's start (06:00) has its later events archived in the next gaming day, as the
archive writer dates each event by its own ts (without --neighbours, in a partition of those events alone).

--neighbours archives the day before and the day after too (the same floor, its own rounds), as a floor's archive
holds them: the rounds across the day's edges then move in and out. Each day is summarised per round as migration 6
fills a day archived before it (floor/rounds.py; the time is said). The report is then timed twice, paired on the
same data: as it is, with its look-ups in the per-round summary, and with main's look-ups in the events
(floor/report/owner.py before the summary, kept here).

--plans prints, after the timed run, the plan of every statement the report runs as it ran (EXPLAIN (ANALYZE,
BUFFERS), by auto_explain): where the time goes. Timing each plan node slows the run, so it is not the one timed.

--work-mem sets the cluster's work_mem (default 64MB, the figures in README). A floor's cluster keeps PostgreSQL's
4MB (systemd/postgresql.md sets none): `--work-mem 4MB --plans` shows the sorts that spill there ("Sort Method:
external merge"), which 64MB hides.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, date, datetime, timedelta

import psycopg
from benchlib import machine, progress

from floor.config import DatabaseSection, GamingDaySection
from floor.days import day_period
from floor.db import connect
from floor.pgcluster import PgCluster
from floor.report import owner
from floor.report.build import build
from floor.report.figures import Figures, Scope, gather
from floor.report.html import to_html
from floor.report.render import to_csv, to_json, to_text
from floor.rounds import fill_pending
from floor.schema import migrate, partition_ddl

DAY = date(2026, 11, 21)
START = datetime(2026, 11, 21, 6, 0, tzinfo=UTC)  # the gaming day's start (06:00 UTC)

# One round of table t, round r (a round a minute): seq base = r * per_round. Rows of the real shapes.
# Generated minute by minute (r outermost, each table's round within it), so the rows land roughly in ts order as
# the archive writer appends them as they arrive: a BRIN index on ts (migration 8) sees a live day's narrow ranges.
# The `+ 0 * r` and `+ 0 * t` make each series LATERAL to the one before, so the planner keeps that nesting.
GENERATE = """
WITH rounds AS (
    SELECT t, r, format('b%%s', lpad(t::text, 3, '0')) AS table_id,
           %(start)s::timestamptz + make_interval(mins => r) + make_interval(secs => t %% 60) AS ts
    FROM generate_series(0, %(rounds)s - 1) r CROSS JOIN LATERAL generate_series(0, %(tables)s - 1 + 0 * r) t
)
INSERT INTO {partition} (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type, rule, payload,
                         replayed)
SELECT %(day)s, table_id, %(seq_base)s + r * %(per_round)s + k + 1, md5(table_id || ':' || r || ':' || k || %(id_tag)s),
       'boot',
       ts + make_interval(secs => k), to_char(ts, 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       table_id || %(tag)s || lpad(r::text, 6, '0'),
       CASE k WHEN 0 THEN 'no_more_bets' WHEN 1 THEN 'hand.settled' WHEN 2 THEN 'hand.settled'
              WHEN 3 THEN 'seat.folded' WHEN 4 THEN 'three_card_bonus.settled' WHEN 5 THEN 'round.completed'
              WHEN 6 THEN CASE WHEN r %% 200 = 0 THEN 'progressive.paid' ELSE 'meter.contributed' END
              WHEN 7 THEN CASE WHEN r %% 200 = 0 THEN 'command.accepted' ELSE 'cards.dealt' END
              ELSE 'wager.accepted' END,
       '655a.11(h)(1)',
       CASE k
         WHEN 0 THEN '{{"players": [1, 2, 3], "wagers": {{"1": {{"ante": 500, "three_card_bonus": 100}},
                     "2": {{"ante": 500}}, "3": {{"ante": 1000}}}}}}'::jsonb
         WHEN 1 THEN jsonb_build_object('seat', 1, 'hand', CASE WHEN r %% 3 = 0 THEN 'pair' ELSE 'high_card' END,
                     'paytable', '655a.12(a)', 'wagers', jsonb_build_array(
                       jsonb_build_object('wager', 'ante', 'amount', 500, 'outcome',
                         CASE WHEN r %% 3 = 0 THEN 'win' ELSE 'lose' END,
                         'odds', CASE WHEN r %% 3 = 0 THEN '1 to 1' END,
                         'paid', CASE WHEN r %% 3 = 0 THEN 500 ELSE 0 END, 'returned', 0,
                         'collected', CASE WHEN r %% 3 = 0 THEN 0 ELSE 500 END),
                       jsonb_build_object('wager', 'street_3', 'amount', 500, 'outcome', 'lose', 'odds', null,
                         'paid', 0, 'returned', 0, 'collected', 500)))
         WHEN 2 THEN '{{"seat": 2, "hand": "high_card", "paytable": "655a.12(a)", "wagers": [{{"wager": "ante",
                     "amount": 500, "outcome": "lose", "odds": null, "paid": 0, "returned": 0,
                     "collected": 500}}]}}'::jsonb
         WHEN 3 THEN '{{"seat": 3, "collected": {{"ante": 1000}}}}'::jsonb
         WHEN 4 THEN jsonb_build_object('seat', 1, 'wager', 'three_card_bonus', 'amount', 100,
                     'hand', CASE WHEN r %% 6 = 0 THEN 'pair' ELSE 'high_card' END,
                     'outcome', CASE WHEN r %% 6 = 0 THEN 'win' ELSE 'lose' END,
                     'odds', CASE WHEN r %% 6 = 0 THEN '1 to 1' END, 'paid', CASE WHEN r %% 6 = 0 THEN 100 ELSE 0 END,
                     'collected', CASE WHEN r %% 6 = 0 THEN 0 ELSE 100 END, 'returned', 0)
         WHEN 5 THEN '{{"round_no": 1, "players": [1, 2, 3], "paid": 500, "collected": 2000,
                     "table_result": 1500}}'::jsonb
         WHEN 6 THEN '{{"level": "minor", "amount": 25000, "hit": "h"}}'::jsonb
         WHEN 7 THEN '{{"verb": "validate_jackpot", "role": "floorperson", "count": 2}}'::jsonb
         ELSE '{{"seat": 1, "spot": "ante", "amount": 500}}'::jsonb END,
       false
FROM rounds CROSS JOIN LATERAL generate_series(0, %(per_round)s - 1 + 0 * t) k
"""
BIRTH = """
INSERT INTO births (table_id, boot_id, ts, gaming_day, digest, payload)
SELECT format('b%%s', lpad(t::text, 3, '0')), 'boot', %(start)s, %(day)s, decode(md5(t::text), 'hex'),
       '{"game": {"chapter": "655a", "name": "Mississippi Stud"}, "paytables": [
         {"wager": "ante", "citation": "655a.12(a)", "rows": {"pair": "1 to 1"}},
         {"wager": "three_card_bonus", "citation": "655a.12(d) paytable A", "rows": {"pair": "1 to 1"}}]}'::jsonb
FROM generate_series(0, %(tables)s - 1) t
"""


SPILLED = "table_id, seq, event_id, boot_id, ts, ts_text, round_id, type, rule, payload, replayed, received_at"


# main's look-ups (floor/report/owner.py before the per-round summary): the same temp tables, from the events.
MAIN_ENDS = """CREATE TEMP TABLE round_ends AS
SELECT table_id, round_id, min(ts) AS ended, min(gaming_day) AS day FROM events
WHERE type IN ('round.completed', 'round.voided') AND round_id IS NOT NULL AND ts >= %s AND ts < %s
  AND gaming_day BETWEEN %s AND %s
GROUP BY 1, 2"""
MAIN_IN = """CREATE TEMP TABLE moved_in AS
SELECT e.table_id, e.round_id, e.gaming_day, min(e.ts) AS first_ts, max(e.ts) AS last_ts
FROM events e JOIN round_ends r ON r.table_id = e.table_id AND r.round_id = e.round_id
WHERE r.ended >= %(start)s AND r.ended < %(end)s AND e.gaming_day BETWEEN %(before)s AND %(after)s
  AND (e.ts < %(start)s OR e.ts >= %(end)s) AND e.gaming_day BETWEEN r.day - 1 AND r.day + 1
GROUP BY 1, 2, 3"""
MAIN_OUT = """CREATE TEMP TABLE moved_out AS
SELECT DISTINCT e.table_id, e.round_id, e.gaming_day
FROM events e JOIN round_ends r ON r.table_id = e.table_id AND r.round_id = e.round_id
WHERE (r.ended < %(start)s OR r.ended >= %(end)s) AND e.gaming_day BETWEEN %(first)s AND %(last)s
  AND e.ts >= %(start)s AND e.ts < %(end)s AND e.gaming_day BETWEEN r.day - 1 AND r.day + 1"""


def generate(
    dsn: str, tables: int, hours: int, filler: int, offset: int = 0, birth: bool = True, keyed: bool = False
) -> tuple[int, float]:
    """One gaming day `offset` days from DAY; returns its events and the seconds summarising its rounds took. `keyed`:
    each table's seq counting on from the days before and event ids unique across days, as a table's are (what
    `event_keys` can hold); else each day's seqs and ids are the first day's."""
    per_round = 8 + filler
    day = DAY + timedelta(days=offset)
    params = {
        "seq_base": offset * hours * 60 * per_round if keyed else 0,
        "id_tag": f":{day:%Y%m%d}" if keyed else "",
        "start": START + timedelta(days=offset),
        "day": day,
        "tables": tables,
        "rounds": hours * 60,
        "per_round": per_round,
        "tag": f"-{day:%Y%m%d}-r",
    }
    name = f"events_{day:%Y%m%d}"
    with connect(DatabaseSection(dsn=dsn)) as conn:
        migrate(conn)
        # Loaded as a table of its own and attached as the day's partition afterwards: building the indexes once
        # is far quicker than keeping them up to date row by row.
        conn.execute(f"CREATE TABLE {name} (LIKE events INCLUDING DEFAULTS)".encode())
        if birth:
            conn.execute(BIRTH.encode(), params)
        conn.execute(GENERATE.format(partition=name).encode(), params)
        # The last rounds run past the next day's start: the archive writer dates each event by its own ts
        # (floor/days.py gaming_day), so those events belong to the next gaming day. Set aside, archived by `spill`.
        conn.execute(b"CREATE TABLE IF NOT EXISTS bench_spill (LIKE events INCLUDING DEFAULTS)")
        conn.execute(
            f"WITH moved AS (DELETE FROM {name} WHERE ts >= %s RETURNING *) INSERT INTO bench_spill SELECT %s,"
            f" {SPILLED} FROM moved".encode(),
            (START + timedelta(days=offset + 1), day + timedelta(days=1)),
        )
        conn.commit()
        progress(f"indexing and attaching the partition of {day}")
        conn.execute(
            f"ALTER TABLE events ATTACH PARTITION {name} FOR VALUES FROM ('{day}') TO ('{day + timedelta(days=1)}')"
            "".encode()
        )
        conn.execute(f"ANALYZE {name}".encode())
        # An attached partition passes no trigger: the day is summarised as migration 6 summarises an older one.
        conn.execute("INSERT INTO round_days_pending VALUES (%s)", (day,))
        conn.commit()
        t0 = time.perf_counter()
        fill_pending(conn)
        summarised = time.perf_counter() - t0
        conn.execute("ANALYZE round_days")
        conn.commit()
    return tables * hours * 60 * per_round, summarised


def spill(dsn: str) -> int:
    """The events set aside by `generate` archived in the gaming day of their ts, as the writer would: through
    `events` (the summary's trigger folds them in), the day's partition made if it is not generated; how many."""
    with connect(DatabaseSection(dsn=dsn)) as conn:
        for (day,) in conn.execute(b"SELECT DISTINCT gaming_day FROM bench_spill").fetchall():
            conn.execute(partition_ddl(day))
        cur = conn.execute(b"INSERT INTO events SELECT * FROM bench_spill")
        moved = max(cur.rowcount, 0)
        conn.execute(b"DROP TABLE bench_spill")
        conn.commit()
        conn.execute(b"ANALYZE events")
        conn.execute(b"ANALYZE round_days")
        conn.commit()
    return moved


# main had no candidates: its look-ups took every round's end.
MAIN_EDGE = """CREATE TEMP TABLE edge_rounds AS SELECT NULL::text AS table_id, NULL::text AS round_id
WHERE %(start)s::timestamptz IS NULL"""
FIGURES: list[tuple[bool, Figures]] = []  # each run's figures, with whether main's look-ups made them


def timed_report(dsn: str, scope: Scope, main_lookups: bool) -> tuple[float, float]:
    """The report's figures (seconds), and its look-ups alone (prepare), with main's look-ups or the summary's."""
    mine = (owner._EDGE, owner._ENDS, owner._IN, owner._OUT)
    if main_lookups:
        owner._EDGE, owner._ENDS, owner._IN, owner._OUT = MAIN_EDGE, MAIN_ENDS, MAIN_IN, MAIN_OUT
    try:
        with connect(DatabaseSection(dsn=dsn)) as conn:
            t0 = time.perf_counter()
            owner.prepare(conn, scope.period)
            lookups = time.perf_counter() - t0
            t0 = time.perf_counter()
            FIGURES.append((main_lookups, gather(conn, scope)))
            return time.perf_counter() - t0, lookups
    finally:
        owner._EDGE, owner._ENDS, owner._IN, owner._OUT = mine


def paired(dsn: str, scope: Scope, n: int) -> list[tuple[float, float, float, float]]:
    """n runs of the report with the summary's look-ups and with main's, each first in turn (neither always meets a
    colder cache): (figures, look-ups) of the summary's, then of main's."""
    pairs: list[tuple[float, float, float, float]] = []
    for i in range(n):
        progress(f"paired run {i + 1} of {n}: the report with the summary's look-ups, and with main's")
        if i % 2:
            main_first = timed_report(dsn, scope, True)
            pairs.append((*timed_report(dsn, scope, False), *main_first))
        else:
            pairs.append((*timed_report(dsn, scope, False), *timed_report(dsn, scope, True)))
    return pairs


def say_pairs(pairs: list[tuple[float, float, float, float]]) -> None:
    if not pairs:
        return
    mid = [sorted(p[i] for p in pairs)[len(pairs) // 2] for i in range(4)]
    print(
        f"paired, median of {len(pairs)}: report {mid[0]:.2f} s with the per-round summary against {mid[2]:.2f} s"
        f" with main's look-ups in the events ({mid[0] / mid[2]:.2f}x); the look-ups alone {mid[1]:.2f} s"
        f" against {mid[3]:.2f} s"
    )
    same = all(_summed(f) == _summed(FIGURES[0][1]) for _, f in FIGURES)
    print(f"the same figures from both look-ups: {'yes' if same else 'NO: the look-ups differ'}")


def _summed(f: Figures) -> tuple[object, ...]:
    """What two runs of the report must agree on, whatever order the database returned rows in."""
    return (f.rounds, sorted(f.wagers), sorted(f.takes), sorted(f.hands), sorted(f.jackpots), sorted(f.commands))


def print_plans(dsn: str, scope: Scope) -> None:
    """The report once more, each statement's plan printed as it ran (auto_explain's log at the client's level)."""
    with connect(DatabaseSection(dsn=dsn)) as conn:
        # Only the plans: the DROP ... IF EXISTS of the report's temp tables say "skipping" too.
        def plan(d: psycopg.errors.Diagnostic) -> None:
            if (d.message_primary or "").startswith("duration"):
                print(f"{d.message_primary}\n")

        conn.add_notice_handler(plan)
        conn.execute("LOAD 'auto_explain'")
        for setting in ("log_min_duration = 0", "log_analyze = on", "log_buffers = on", "log_level = notice"):
            conn.execute(f"SET auto_explain.{setting}".encode())
        t0 = time.perf_counter()
        gather(conn, scope)
        print(f"(the report with every plan timed: {time.perf_counter() - t0:.2f} s)", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=500)
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--filler", type=int, default=18, help="other events of a round (dealing, wagers placed...)")
    ap.add_argument("--plans", action="store_true", help="then print each statement's plan as it ran")
    ap.add_argument("--neighbours", action="store_true", help="the day before and the day after archived too")
    ap.add_argument("--pairs", type=int, default=3, help="paired runs of the report, summary and main (median)")
    ap.add_argument(
        "--work-mem",
        default="64MB",
        help="the cluster's work_mem; 4MB is PostgreSQL's default, which a floor's cluster keeps"
        " (systemd/postgresql.md sets none)",
    )
    args = ap.parse_args()
    started_on = machine()  # the load before this run adds its own
    # fsync off: what is timed is reading the day; loading it is only the set-up.
    cluster = PgCluster.create(
        durable=False, work_mem=args.work_mem, shared_buffers="512MB", max_wal_size="4GB", maintenance_work_mem="512MB"
    )
    try:
        cluster.start()
        dsn = cluster.create_database("bench_report")
        progress(f"generating a gaming day of {args.tables} tables x {args.hours} h at a round a minute")
        t0 = time.perf_counter()
        rows, summarised = generate(dsn, args.tables, args.hours, args.filler)
        for offset in (-1, 1) if args.neighbours else ():
            more, _ = generate(dsn, args.tables, args.hours, args.filler, offset, birth=False)
            rows += more
        progress(f"archiving the {spill(dsn):,} events past a day's end in the next gaming day")
        made = time.perf_counter() - t0
        scope = Scope(day_period(DAY, GamingDaySection()))
        pairs = paired(dsn, scope, args.pairs)
        with connect(DatabaseSection(dsn=dsn)) as conn:
            t0 = time.perf_counter()
            conn.execute("SELECT count(*) FROM events WHERE gaming_day = %s", (DAY,)).fetchone()
            scan = time.perf_counter() - t0
            t0 = time.perf_counter()
            report = build(gather(conn, scope), scope, "bench")
            figures = time.perf_counter() - t0
            t0 = time.perf_counter()
            sizes = {f.__name__: len(f(report)) for f in (to_text, to_csv, to_json, to_html)}
            rendering = time.perf_counter() - t0
        if args.plans:
            print_plans(dsn, scope)
    finally:
        cluster.remove()
    rounds = next(r for r in report.section("rounds").rows if r[0] == "floor")[2]
    print(f"machine: {started_on}")
    print(f"generated: {rows:,} events, {rounds:,} rounds of {args.tables} tables in {made:.0f} s")
    print(f"baseline: a full scan of the day's partition (count(*)): {scan:.2f} s")
    print(f"report figures for the gaming day: {figures:.2f} s ({figures / scan:.1f}x the scan)")
    print(f"rendering text, csv, json and html (3 charts): {rendering:.2f} s; sizes {sizes}")
    print(f"summarising the day's rounds (as migration 6 fills an older day): {summarised:.2f} s")
    say_pairs(pairs)


if __name__ == "__main__":
    main()
