"""The per-round summary (floor/rounds.py, `round_days`) against a real PostgreSQL: kept at ingest by the archive
writer whatever the order, duplication or lateness of the events; filled for days archived before it (migration 7)
resumably and idempotently, by `tablectl floor fill-rounds` as a real process; dropped with its day by retention.

What it must equal is computed here from the events as generated (in Python), not by the summary's own SQL.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from floor.archive import ArchiveWriter
from floor.config import DatabaseSection, GamingDaySection
from floor.days import day_period, gaming_day
from floor.db import connect
from floor.report.owner import prepare
from floor.retention import RetentionPlan, apply_retention
from floor.rounds import SummaryPending, fill_beside, fill_pending, pending
from floor.schema import migrate, partition_ddl
from tests.floor.archiving import msg, writer
from tests.tablectl_runs import tablectl

pytestmark = pytest.mark.floor
GD = GamingDaySection()
DAY = date(2026, 11, 21)
START = datetime(2026, 11, 21, 6, 0, tzinfo=UTC)  # the gaming day's start (06:00 UTC)
ENDS = ("round.completed", "round.voided")
Row = tuple[date, str, str, datetime, datetime, int, int, list[datetime]]


def floor_events(seed: int) -> list[dict[str, Any]]:
    """Two tables' rounds around the day's edges (a round dealt before 06:00 and completed after it), one left
    open, one voided then completed again (two ends), and events of no round; seqs counting across them."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    for table in ("t1", "t2"):
        seq = 0
        at = START - timedelta(minutes=rng.randint(5, 20))
        for r in range(8):
            kinds = ["no_more_bets", "wager.accepted", "wager.accepted"] + (
                [] if r == 5 else ["round.voided", "round.completed"] if r == 6 else [rng.choice(ENDS)]
            )
            for kind in kinds:
                seq += 1
                at += timedelta(seconds=rng.randint(30, 200))
                if r == 0 and kind in ENDS:  # the first round is dealt before the day's start and ends after it
                    at = max(at, START + timedelta(seconds=60))
                events.append(_event(table, seq, at, f"{table}-r{r}", kind))
            seq += 1
            events.append(_event(table, seq, at + timedelta(seconds=1), None, "device.fault"))
            at += timedelta(hours=26 if r == 3 else rng.choice([0, 0, 3, 10]))  # some far apart: several gaming days
    return events


def _event(table: str, seq: int, at: datetime, round_id: str | None, kind: str) -> dict[str, Any]:
    payloads = {"device.fault": {"device_id": "shuffler", "code": "jam"}, "no_more_bets": {"wagers": {}}}
    return {
        "event_id": uuid.uuid4().hex,
        "boot_id": "b1",
        "seq": seq,
        "ts": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "table_id": table,
        "round_id": round_id,
        "type": kind,
        "rule": "655a.11(j)",
        "payload": payloads.get(kind, {"seat": 1}),
    }


def expected(events: list[dict[str, Any]]) -> list[Row]:
    by: dict[tuple[date, str, str], list[dict[str, Any]]] = {}
    for e in events:
        if e["round_id"] is not None:
            ts = datetime.fromisoformat(e["ts"])
            by.setdefault((gaming_day(ts, GD), e["table_id"], e["round_id"]), []).append({**e, "at": ts})
    out = []
    for (day, table, round_id), evs in sorted(by.items()):
        out.append(
            (
                day,
                table,
                round_id,
                min(e["at"] for e in evs),
                max(e["at"] for e in evs),
                min(e["seq"] for e in evs),
                max(e["seq"] for e in evs),
                sorted({e["at"] for e in evs if e["type"] in ENDS}),
            )
        )
    return out


def summary(dsn: str) -> list[Row]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT gaming_day, table_id, round_id, first_ts, last_ts, first_seq, last_seq, ends FROM round_days"
            " ORDER BY 1, 2, 3"
        ).fetchall()
    return [
        (d, t, r, a.astimezone(UTC), b.astimezone(UTC), s0, s1, [x.astimezone(UTC) for x in e])
        for d, t, r, a, b, s0, s1, e in rows
    ]


def spanning(dsn: str) -> list[tuple[str, str]]:
    """The rounds the summary marks as having events in more than one gaming day (the reports look at these)."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT DISTINCT table_id, round_id FROM round_days WHERE spans ORDER BY 1, 2").fetchall()
    return [(str(t), str(r)) for t, r in rows]


def spanning_expected(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    days_of: dict[tuple[str, str], set[date]] = {}
    for day, table, round_id, *_ in expected(events):
        days_of.setdefault((table, round_id), set()).add(day)
    return sorted(k for k, v in days_of.items() if len(v) > 1)


async def write_shuffled(w: ArchiveWriter, events: list[dict[str, Any]], rng: random.Random) -> None:
    """Every event, in a shuffled order and batches of random sizes, some twice (in a batch and across batches),
    some replayed (flagged as a table's resend is): only what is new to the archive may reach the summary."""
    order = events[:]
    rng.shuffle(order)
    order += rng.sample(events, len(events) // 3)
    while order:
        n = rng.randint(1, 9)
        batch, order = order[:n], order[n:]
        batch += [{**e, "replayed": True} for e in batch if rng.random() < 0.3]
        await w.write([msg(e) for e in batch])


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_the_summary_is_the_rounds_whatever_the_order_duplicates_and_replays(floor_dsn: str, seed: int) -> None:
    events = floor_events(seed)
    assert len({gaming_day(datetime.fromisoformat(e["ts"]), GD) for e in events}) >= 3  # across days' edges
    w = await writer(floor_dsn)
    await write_shuffled(w, events, random.Random(seed))
    await w.conn.close()
    assert summary(floor_dsn) == expected(events)
    assert spanning(floor_dsn) == spanning_expected(events) != []


async def test_a_table_back_hours_late_fills_its_rounds_in_the_summary_and_moves_them(floor_dsn: str) -> None:
    """A round dealt before the day's start whose end (and the next rounds) reach the floor only after the report
    of the day before was run: the late end moves its early events out of the day before into the day."""
    events = [e for e in floor_events(7) if e["table_id"] == "t1"]
    w = await writer(floor_dsn)
    cut = next(i for i, e in enumerate(events) if e["type"] in ENDS)  # the first round's end, after 06:00
    first = events[:cut]
    assert datetime.fromisoformat(first[0]["ts"]) < START <= datetime.fromisoformat(events[cut]["ts"])
    await w.write([msg(e) for e in first])
    before, day = day_period(DAY - timedelta(days=1), GD), day_period(DAY, GD)
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        prepare(conn, before)
        assert conn.execute("SELECT count(*) FROM moved_out").fetchone() == (0,)  # no end yet: counted by ts
        await w.write([msg(e) for e in reversed(events[cut:])])  # late, and newest first
        prepare(conn, before)
        assert conn.execute("SELECT table_id, round_id, gaming_day FROM moved_out").fetchall() == [
            ("t1", "t1-r0", DAY - timedelta(days=1))
        ]
        claims = prepare(conn, day)
        assert conn.execute("SELECT round_id FROM moved_in").fetchall() == [("t1-r0",)]
        assert claims.lo == datetime.fromisoformat(first[0]["ts"]) and claims.first_day == DAY - timedelta(days=1)
    await w.conn.close()
    assert summary(floor_dsn) == expected(events)


def _old_archive(dsn: str, events: list[dict[str, Any]]) -> None:
    """An archive as a floor before migration 7 left it: schema 6, events in their partitions, no summary."""
    with psycopg.connect(dsn) as conn:
        migrate(conn, upto=6)
        rows = []
        for e in events:
            ts = datetime.fromisoformat(e["ts"])
            conn.execute(partition_ddl(gaming_day(ts, GD)))
            rows.append(
                (gaming_day(ts, GD), e["table_id"], e["seq"], e["event_id"], ts, e["ts"], e["round_id"], e["type"])
            )
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type,"
                " payload, replayed) VALUES (%s, %s, %s, %s, 'b1', %s, %s, %s, %s, '{}', false)",
                rows,
            )


def test_days_archived_before_the_summary_are_filled_resumably_and_idempotently(floor_dsn: str, tmp_path: Path) -> None:
    events = floor_events(11)
    _old_archive(floor_dsn, events)
    days = sorted({gaming_day(datetime.fromisoformat(e["ts"]), GD) for e in events})
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        with pytest.raises(SummaryPending, match="migration 7"):
            prepare(conn, day_period(DAY, GD))
        assert migrate(conn) == 6
        assert pending(conn) == days
        with pytest.raises(SummaryPending, match=f"gaming day.*{DAY}.*fill-rounds"):
            prepare(conn, day_period(DAY, GD))
        # Stopped after the first day (a service stopping, a kill between two transactions): that day is done.
        said: list[tuple[int, int, date]] = []
        assert fill_pending(conn, lambda n, of, d, _r: said.append((n, of, d)), lambda: len(said) == 1) == 1
        assert said == [(1, len(days), days[0])] and pending(conn) == days[1:]
    config = tmp_path / "floor.toml"
    config.write_text(f'name = "f"\n[database]\ndsn = "{floor_dsn}"\n[mqtt]\nbroker = "mqtt://127.0.0.1:1"\n')
    run = tablectl("floor", "--config", config, "fill-rounds")
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stdout.splitlines() if " gaming day " in line]  # then the days' ts index
    assert [line.split(" gaming day ")[0] for line in lines] == [f"[{n}/{len(days) - 1}]" for n in range(1, len(days))]
    assert all(f"gaming day {d}:" in line for d, line in zip(days[1:], lines, strict=True))
    assert summary(floor_dsn) == expected(events)
    again = tablectl("floor", "--config", config, "fill-rounds")
    assert again.returncode == 0 and "complete" in again.stdout
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        # A day summarised twice (two fillers at once, a pending row put back by hand) is summarised the same.
        conn.execute("INSERT INTO round_days_pending SELECT DISTINCT gaming_day FROM round_days")
        conn.commit()
        fill_pending(conn)
        prepare(conn, day_period(DAY, GD))  # nothing pending any more: the report runs
    assert summary(floor_dsn) == expected(events)
    assert spanning(floor_dsn) == spanning_expected(events) != []


async def test_retention_drops_a_days_summary_with_its_events_and_keeps_the_others(floor_dsn: str) -> None:
    events = floor_events(5)
    w = await writer(floor_dsn)
    await w.write([msg(e) for e in events])
    await w.conn.close()
    oldest = min(gaming_day(datetime.fromisoformat(e["ts"]), GD) for e in events)
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        assert apply_retention(conn, RetentionPlan(oldest + timedelta(days=1), drop=[oldest])) == [
            f"dropped gaming day {oldest}"
        ]
    kept = [e for e in events if gaming_day(datetime.fromisoformat(e["ts"]), GD) != oldest]
    assert summary(floor_dsn) == expected(kept) and len(kept) < len(events)


async def test_the_services_task_fills_the_pending_days_and_stops_between_two(floor_dsn: str) -> None:
    events = floor_events(13)
    _old_archive(floor_dsn, events)
    db = DatabaseSection(dsn=floor_dsn)
    with connect(db) as conn:
        migrate(conn)
        days = pending(conn)
    stopped = asyncio.Event()
    stopped.set()
    await fill_beside(db, stopped)  # the service stopping as it starts: nothing done, nothing lost
    with connect(db) as conn:
        assert pending(conn) == days
    await fill_beside(db, asyncio.Event())
    with connect(db) as conn:
        assert pending(conn) == []
    assert summary(floor_dsn) == expected(events)
