"""A report run while its period is still going (today's gaming day, a shift in progress): a device still down was
counted to the period's END, time that has not happened yet (a shoe marked at 08:31 showed 1288.2 min in a report run
at 08:33). A stretch still open ends at the report's now, the archive's clock (`SELECT now()`, the clock every reader
shares), and its row says the device is still down (`STILL`). A period already over still counts to its end. The
events are the real engine's (tests/engine's pure table), archived by the floor's real writer in a real PostgreSQL
cluster."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from controller.engine.inputs import CriticalStateInvalid, MarkOutOfOrder
from drivers.interfaces import DeviceFault
from floor.config import DatabaseSection
from floor.days import Period
from floor.db import connect
from floor.report.build import not_begun
from floor.report.downtime import BEFORE, STILL
from floor.report.figures import Figures, Scope, gather
from tests.engine.conftest import decide_all
from tests.engine.mississippi_table import make
from tests.floor.archiving import events_published, msg, writer

pytestmark = pytest.mark.floor


def period(first: date, days: int) -> Period:
    start = datetime(first.year, first.month, first.day, tzinfo=UTC)
    return Period(start, start + timedelta(days=days), "test period", first, first + timedelta(days=days - 1))


async def marked_yesterday(floor_dsn: str, table: str) -> datetime:
    """A shoe marked out of order yesterday at 12:00 UTC and never back (a past time, whatever the hour now)."""
    t = make()
    marked = t.feed(MarkOutOfOrder("shoe"))
    for _ in range(3):
        t.feed(DeviceFault("dealer_panel", code="noise"))
    events = list(t.events)
    said = events_published(table, events, datetime.now(UTC).date() - timedelta(days=1))
    w = await writer(floor_dsn)
    assert (await w.write([msg(m) for m in said])).events_new == len(said)
    return datetime.fromisoformat(said[events.index(marked[0])]["ts"])


def report(floor_dsn: str, p: Period) -> Figures:
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        return gather(conn, Scope(p))


async def test_a_shoe_still_down_counts_to_the_report_s_now_not_the_period_s_end(floor_dsn: str) -> None:
    at = await marked_yesterday(floor_dsn, "ms-now1")
    p = period(at.date(), 2)  # yesterday and today: it ends at tomorrow's midnight
    f = report(floor_dsn, p)
    assert f.now is not None and p.start < at < f.now < p.end
    shoe = [d for d in f.devices if d[:2] == ("ms-now1", "shoe")]
    assert shoe == [("ms-now1", "shoe", (f.now - at).total_seconds(), 0, "", STILL)], f.devices


async def test_a_shoe_down_from_before_a_period_still_going_counts_from_its_start_to_now(floor_dsn: str) -> None:
    at = await marked_yesterday(floor_dsn, "ms-now2")
    p = period(at.date() + timedelta(days=1), 1)  # today alone: the mark was the day before
    f = report(floor_dsn, p)
    assert f.now is not None and at < p.start < f.now < p.end
    shoe = [d for d in f.devices if d[:2] == ("ms-now2", "shoe")]
    assert shoe == [("ms-now2", "shoe", (f.now - p.start).total_seconds(), 0, "", f"{BEFORE}; {STILL}")]


async def test_a_period_over_counts_a_shoe_still_down_to_its_end(floor_dsn: str) -> None:
    at = await marked_yesterday(floor_dsn, "ms-now3")
    p = Period(at - timedelta(hours=1), at + timedelta(hours=2), "three hours", at.date(), at.date())
    f = report(floor_dsn, p)
    assert f.now is not None and p.end < f.now
    shoe = [d for d in f.devices if d[:2] == ("ms-now3", "shoe")]
    assert shoe == [("ms-now3", "shoe", (p.end - at).total_seconds(), 0, "", "")]


async def test_a_tilt_still_open_counts_to_the_report_s_now(floor_dsn: str) -> None:
    """The report's tilts had the same fault: one still open was counted to the period's end."""
    t = make()
    t.wager(1, "ante", 500)
    t.feed(CriticalStateInvalid("meters record failed", "tilt:meters"))
    decide_all(t, t.press("no_more_bets"))  # the round ends: the table blocks on the tilt
    events = list(t.events)
    blocked = next(e for e in events if e.type == "table.blocked")
    said = events_published("ms-now4", events, datetime.now(UTC).date() - timedelta(days=1))
    w = await writer(floor_dsn)
    assert (await w.write([msg(m) for m in said])).events_new == len(said)
    at = said[events.index(blocked)]["ts"]
    f = report(floor_dsn, period(datetime.fromisoformat(at).date(), 2))
    assert f.now is not None
    open_s = (f.now - datetime.fromisoformat(at)).total_seconds()
    assert [x for x in f.tilts if x[0] == "ms-now4"] == [("ms-now4", "tilt:meters", at, None, open_s)]


async def test_a_period_not_begun_has_no_row_for_a_device_down_since_before_it(floor_dsn: str) -> None:
    """Tomorrow's report run today: nothing of it has happened, and the report says so (`not_begun`). A shoe marked
    yesterday and never back had a row of 0 s noted `down from before the period; still down` beside that notice;
    it has none (a device down is counted once the period begins). A period begun has it, as above."""
    at = await marked_yesterday(floor_dsn, "ms-now5")
    tomorrow = period(at.date() + timedelta(days=2), 1)
    f = report(floor_dsn, tomorrow)
    assert f.now is not None and f.now < tomorrow.start
    assert not_begun(tomorrow.start, f.now, "the period") != ""  # the notice the report shows instead
    assert [d for d in f.devices if d[0] == "ms-now5"] == [], f.devices
    today = report(floor_dsn, period(at.date() + timedelta(days=1), 1))
    assert [d[:2] for d in today.devices if d[0] == "ms-now5"] == [("ms-now5", "shoe")]
