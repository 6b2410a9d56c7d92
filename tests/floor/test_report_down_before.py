"""The floor report's device downtime for a device marked out of order (or held) before the period and never said
again inside it (no restart): it had no row at all, as if in service the whole period. The archive's last word on the
device before the period's start now says it was down then: its row counts from the period's start and says so
(`down from before the period`, floor/report/downtime.py BEFORE). The events are the real engine's (tests/engine's
pure table), archived by the floor's real writer in a real PostgreSQL cluster; the query is checked to use an index."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

import pytest

from controller.core.events import DomainEvent
from controller.engine.inputs import MarkOutOfOrder
from drivers.interfaces import DeviceFault, DeviceOnline
from floor.config import DatabaseSection, GamingDaySection
from floor.days import day_period
from floor.db import connect
from floor.report.downtime import BEFORE, LAST_BEFORE, SAID
from floor.report.figures import Scope, gather
from tests.engine.mississippi_table import make
from tests.floor.archiving import events_published, msg, writer

pytestmark = pytest.mark.floor
DAY = date(2026, 11, 21)
PERIOD = day_period(DAY, GamingDaySection())


def noise(t: Any, n: int = 3) -> None:
    for _ in range(n):
        t.feed(DeviceFault("dealer_panel", code="noise"))


async def archived(floor_dsn: str, table: str, events: list[DomainEvent], today: int) -> list[dict[str, Any]]:
    """The events archived, those before index `today` the day before DAY, the rest on DAY."""
    yesterday = DAY - timedelta(days=1)
    said = events_published(table, events, yesterday)
    for m in said[today:]:
        m["ts"] = m["ts"].replace(yesterday.isoformat(), DAY.isoformat())
    w = await writer(floor_dsn)
    assert (await w.write([msg(m) for m in said])).events_new == len(said)
    return said


def shoe_rows(floor_dsn: str, table: str) -> list[tuple[str, str, float, int, str, str]]:
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        figures = gather(conn, Scope(PERIOD))
    return [d for d in figures.devices if d[:2] == (table, "shoe")]


async def test_a_shoe_marked_the_day_before_and_back_today_counts_from_the_day_s_start(floor_dsn: str) -> None:
    t = make()
    t.feed(MarkOutOfOrder("shoe"))
    noise(t)
    today = len(t.events)
    noise(t)
    back = t.feed(MarkOutOfOrder("shoe", False))
    said = await archived(floor_dsn, "ms-b1", list(t.events), today)
    back_at = datetime.fromisoformat(said[t.events.index(back[0])]["ts"])
    assert PERIOD.start < back_at < PERIOD.end
    down_s = (back_at - PERIOD.start).total_seconds()
    assert shoe_rows(floor_dsn, "ms-b1") == [("ms-b1", "shoe", down_s, 0, "", BEFORE)]


async def test_a_shoe_marked_the_day_before_and_never_said_again_is_down_all_day(floor_dsn: str) -> None:
    t = make()
    t.feed(MarkOutOfOrder("shoe"))
    t.feed(DeviceOnline("shoe", identity={"model": "sim"}))  # covered, it identifies: still out of order
    today = len(t.events)
    noise(t)
    await archived(floor_dsn, "ms-b2", list(t.events), today)
    whole = (PERIOD.end - PERIOD.start).total_seconds()
    assert shoe_rows(floor_dsn, "ms-b2") == [("ms-b2", "shoe", whole, 0, "", BEFORE)]


async def test_a_shoe_held_the_day_before_is_down_until_it_identifies_today(floor_dsn: str) -> None:
    t = make()
    t.feed(DeviceFault("shoe", code="jam", detail="card jam at the gate"))
    noise(t)
    today = len(t.events)
    noise(t)
    back = t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    assert back[0].type == "device.online"
    said = await archived(floor_dsn, "ms-b3", list(t.events), today)
    back_at = datetime.fromisoformat(said[t.events.index(back[0])]["ts"])
    down_s = (back_at - PERIOD.start).total_seconds()
    assert shoe_rows(floor_dsn, "ms-b3") == [("ms-b3", "shoe", down_s, 0, "", BEFORE)]


async def test_a_shoe_back_before_the_period_has_no_row(floor_dsn: str) -> None:
    t = make()
    t.feed(MarkOutOfOrder("shoe"))
    t.feed(MarkOutOfOrder("shoe", False))
    t.feed(DeviceFault("shoe", code="jam", detail="card jam at the gate"))
    t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    today = len(t.events)
    noise(t)
    await archived(floor_dsn, "ms-b4", list(t.events), today)
    assert shoe_rows(floor_dsn, "ms-b4") == []


async def test_the_last_word_before_the_period_is_read_by_the_type_and_time_index(floor_dsn: str) -> None:
    """One query on the archive, on events_type_ts (type, ts): the device events before the period's start alone. A
    test archive is small enough that a sequential scan is cheaper, so the planner is told not to take one: the plan
    must still find an index for it (without one it would scan every event archived before the period)."""
    t = make()
    t.feed(MarkOutOfOrder("shoe"))
    await archived(floor_dsn, "ms-b5", list(t.events), len(t.events))
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        conn.execute("SET enable_seqscan = off")
        sql = "EXPLAIN " + LAST_BEFORE.format(tables="")
        plan = "\n".join(str(r[0]) for r in conn.execute(sql.encode(), [SAID, PERIOD.start]).fetchall())
    # The archive is partitioned by day: each partition's copy of the index, and none of the period's own partitions.
    assert "type_ts_idx" in plan and "Seq Scan" not in plan, plan
    assert f"events_{DAY:%Y%m%d}" not in plan, plan
