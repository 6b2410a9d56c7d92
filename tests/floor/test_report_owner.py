"""Which events a report counts (docs/floor.md, "Which day owns a round"), as floor/report/owner.py finds them with
its look-ups, equal to the rule read plainly for every event, on archives of rounds
drawn across five gaming days (dealt before an edge and ended after it, ended twice, never ended, ended more than a
day from some of their events, one round id on two tables, events of no round) in a real PostgreSQL cluster.

The same holds at every moment of an archive filled out of order and late (a table back hours after its rounds
ended): the report's look-ups read the per-round summary kept at ingest (floor/rounds.py), which must follow.

The rule, plainly: an event of a round counts where the round's first end (`round.completed` or `round.voided`,
within two days of the period) lies, when that end's gaming day is a day or less from the event's own; any other
event where its own ts lies.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from floor.config import DatabaseSection, GamingDaySection, Shift
from floor.days import Period, day_period, gaming_day, range_period, shift_period
from floor.db import connect
from floor.report.figures import Scope
from floor.report.owner import prepare
from floor.schema import migrate, partition_ddl

pytestmark = pytest.mark.floor
GD = GamingDaySection()
DAY = date(2026, 11, 21)
START = day_period(DAY, GD).start
ENDS = ("round.completed", "round.voided")
PERIODS = {
    "day": day_period(DAY, GD),
    "two days": range_period(DAY, DAY + timedelta(days=1), GD),
    "shift": shift_period(DAY, Shift(name="swing", start="14:00", end="22:00"), GD),
}


@dataclass(frozen=True)
class Ev:
    event_id: str
    table_id: str
    round_id: str | None
    ts: datetime
    type: str

    @property
    def day(self) -> date:
        return gaming_day(self.ts, GD)


# Minutes from the day's start: most near an edge of a period (the day's start and end, the shift's), some far.
EDGES = (0, 8 * 60, 16 * 60, 24 * 60, 48 * 60)
minutes = st.one_of(
    st.sampled_from(EDGES).flatmap(lambda e: st.integers(e - 5, e + 5)),
    st.integers(-2 * 24 * 60 - 30, 3 * 24 * 60 + 30),
)


@st.composite
def archives(draw: st.DrawFn) -> list[Ev]:
    events: list[Ev] = []
    for n in range(draw(st.integers(1, 12))):
        table = draw(st.sampled_from(["t1", "t2"]))
        round_id = draw(st.sampled_from([f"r{n}", "r-shared"]))  # one round id on both tables: keyed by table too
        at = draw(st.lists(minutes, min_size=1, max_size=4))
        ends = draw(st.lists(st.tuples(minutes, st.sampled_from(ENDS)), max_size=2))
        events += [
            Ev(f"e{n}-{i}", table, round_id, START + timedelta(minutes=m), "wager.accepted") for i, m in enumerate(at)
        ]
        events += [Ev(f"x{n}-{i}", table, round_id, START + timedelta(minutes=m), t) for i, (m, t) in enumerate(ends)]
    for i, m in enumerate(draw(st.lists(minutes, max_size=3))):
        events.append(Ev(f"n{i}", "t1", None, START + timedelta(minutes=m), "device.fault"))
    return events


def plainly(events: list[Ev], p: Period) -> set[str]:
    """The rule for each event on its own."""
    lo, hi = p.start - timedelta(days=2), p.end + timedelta(days=2)
    d0, d1 = p.first_day - timedelta(days=2), p.last_day + timedelta(days=2)
    ends: dict[tuple[str, str], list[Ev]] = {}
    for e in events:
        if e.type in ENDS and e.round_id is not None and lo <= e.ts < hi and d0 <= e.day <= d1:
            ends.setdefault((e.table_id, e.round_id), []).append(e)
    counted = set()
    for e in events:
        owner = e.ts
        found = ends.get((e.table_id, e.round_id or ""), [])
        if found and e.round_id is not None:
            ended, end_day = min(x.ts for x in found), min(x.day for x in found)
            if abs((e.day - end_day).days) <= 1:
                owner = ended
        if p.start <= owner < p.end:
            counted.add(e.event_id)
    return counted


@pytest.fixture
def archive(floor_dsn: str) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        migrate(conn)
        for k in range(-3, 5):
            conn.execute(partition_ddl(DAY + timedelta(days=k)))
        conn.commit()
        yield conn


# The archive is emptied at each example: the database is the fixture's, made once for all of them.
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=archives(), which=st.sampled_from(sorted(PERIODS)))
def test_the_events_a_report_counts_are_those_the_rule_gives_each_event(
    archive: psycopg.Connection[tuple[Any, ...]], events: list[Ev], which: str
) -> None:
    conn, period = archive, PERIODS[which]
    conn.execute("TRUNCATE events")
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type, payload,"
            " replayed) VALUES (%s, %s, %s, %s, 'boot', %s, %s, %s, %s, '{}', false)",
            [
                (e.day, e.table_id, i, e.event_id, e.ts, e.ts.astimezone(UTC).isoformat(), e.round_id, e.type)
                for i, e in enumerate(events)
            ],
        )
    conn.execute("ANALYZE events")
    scope = Scope(period)
    where, params = scope.where(prepare(conn, period))
    found = {str(r[0]) for r in conn.execute(f"SELECT e.event_id FROM events e WHERE {where}".encode(), params)}
    assert found == plainly(events, period)


def _insert(conn: psycopg.Connection[tuple[Any, ...]], events: list[tuple[int, Ev]]) -> None:
    """One statement of several rows, as the archive writer inserts a batch: the trigger folds them at once."""
    values = ", ".join(["(%s, %s, %s, %s, 'boot', %s, %s, %s, %s, '{}', false)"] * len(events))
    params: list[Any] = []
    for i, e in events:
        params += [e.day, e.table_id, i, e.event_id, e.ts, e.ts.astimezone(UTC).isoformat(), e.round_id, e.type]
    conn.execute(
        f"INSERT INTO events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type, payload,"
        f" replayed) VALUES {values}".encode(),
        params,
    )
    conn.commit()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=archives(), which=st.sampled_from(sorted(PERIODS)), data=st.data())
def test_the_rule_holds_at_every_moment_of_an_archive_filled_out_of_order_and_late(
    archive: psycopg.Connection[tuple[Any, ...]], events: list[Ev], which: str, data: st.DataObject
) -> None:
    conn, period = archive, PERIODS[which]
    conn.execute("TRUNCATE events")
    conn.commit()
    order = data.draw(st.permutations(list(enumerate(events))))  # a round's end before its start, days apart
    arrived: list[Ev] = []
    while order:
        n = data.draw(st.integers(1, max(1, len(order))))
        batch, order = order[:n], order[n:]
        _insert(conn, batch)
        arrived += [e for _, e in batch]
        where, params = Scope(period).where(prepare(conn, period))
        found = {str(r[0]) for r in conn.execute(f"SELECT e.event_id FROM events e WHERE {where}".encode(), params)}
        assert found == plainly(arrived, period)
