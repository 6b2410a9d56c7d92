"""The report's device downtime (floor/report/figures.py) follows the table's own events: `device.fault`,
`device.online` and `device.offline` name the device as `device_id`, while `device.unusable`, `device.out_of_order`
and `device.back_in_service` (.13(g)) name it as `device`. Keyed by `device_id` alone, the shoe's unusable time went
to a device called "None", still down at the day's end, and the shoe's own row said 0 s. The events are the real
engine's (tests/engine's pure table), archived by the floor's real writer in a real PostgreSQL cluster."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest

from controller.core.events import DomainEvent
from controller.engine.inputs import MarkOutOfOrder, Recover
from controller.store import snapshot
from drivers.interfaces import DeviceFault, DeviceFaultCleared, DeviceOnline
from floor.config import DatabaseSection, GamingDaySection
from floor.days import day_period
from floor.db import connect
from floor.report.downtime import BEFORE
from floor.report.figures import Scope, gather
from tests.engine.chapter_faults import remedy
from tests.engine.conftest import PureTable
from tests.engine.mississippi_table import make
from tests.floor.archiving import events_published, msg, writer

pytestmark = pytest.mark.floor
DAY = date(2026, 11, 21)


async def test_a_shoe_jammed_between_rounds_is_down_until_it_identifies_again(floor_dsn: str) -> None:
    t = make()  # the automated shoe, betting open
    jammed = t.feed(DeviceFault("shoe", code="jam", detail="card jam at the gate"))
    assert [e.type for e in jammed][:2] == ["device.fault", "device.unusable"]
    assert jammed[1].payload["device"] == "shoe" and "device_id" not in jammed[1].payload
    for _ in range(9):  # nine events a second apart while it is down: the report's clock
        t.feed(DeviceFault("dealer_panel", code="noise"))
    back = t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    assert back[0].type == "device.online"
    events = list(t.events)
    down_s = float(events.index(back[0]) - events.index(jammed[1]))  # seq - seq: one second each

    w = await writer(floor_dsn)
    batch = [msg(m) for m in events_published("ms-jam", events, DAY)]
    assert (await w.write(batch)).events_new == len(batch)
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        figures = gather(conn, Scope(day_period(DAY, GamingDaySection())))
    shoe = [d for d in figures.devices if d[:2] == ("ms-jam", "shoe")]
    assert shoe == [("ms-jam", "shoe", down_s, 1, "jam", "")], figures.devices
    assert not [d for d in figures.devices if d[1] == "None"], figures.devices


async def test_a_shoe_that_says_its_jam_is_cleared_is_down_until_it_says_so(floor_dsn: str) -> None:
    t = make()
    jammed = t.feed(DeviceFault("shoe", code="jam", detail="card jam at the gate"))
    t.feed(DeviceFault("shoe", code="misfeed"))
    for _ in range(4):
        t.feed(DeviceFault("dealer_panel", code="noise"))
    half = t.feed(DeviceFaultCleared("shoe", code="jam"))  # the misfeed is still held: still down
    for _ in range(4):
        t.feed(DeviceFault("dealer_panel", code="noise"))
    back = t.feed(DeviceFaultCleared("shoe", code="misfeed"))
    assert half[0].payload["still_held"] == ["misfeed"] and back[0].payload["still_held"] == []
    events = list(t.events)
    down_s = float(events.index(back[0]) - events.index(jammed[1]))

    w = await writer(floor_dsn)
    batch = [msg(m) for m in events_published("ms-cleared", events, DAY)]
    assert (await w.write(batch)).events_new == len(batch)
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        figures = gather(conn, Scope(day_period(DAY, GamingDaySection())))
    shoe = [d for d in figures.devices if d[:2] == ("ms-cleared", "shoe")]
    assert shoe == [("ms-cleared", "shoe", down_s, 2, "jam, misfeed", "")], figures.devices


def _restart(t: PureTable) -> list[DomainEvent]:
    """The daemon restarts on the same journal: the state as stored, then `Recover` (docs/recovery.md)."""
    t.state = snapshot.decode(snapshot.encode(t.state))
    return t.feed(Recover())


async def _shoe_down(
    floor_dsn: str, table: str, events: list[DomainEvent]
) -> list[tuple[str, str, float, int, str, str]]:
    w = await writer(floor_dsn)
    batch = [msg(m) for m in events_published(table, events, DAY)]
    assert (await w.write(batch)).events_new == len(batch)
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        figures = gather(conn, Scope(day_period(DAY, GamingDaySection())))
    return [d for d in figures.devices if d[:2] == (table, "shoe")]


async def test_a_covered_shoe_is_down_from_its_mark_until_back_in_service_across_a_restart(floor_dsn: str) -> None:
    """The mark's time is the original's: the restart's `device.out_of_order` (`restored`) and the covered shoe's
    identification at start-up neither end its downtime nor start a new one; only `device.back_in_service` does."""
    t = make()
    marked = t.feed(MarkOutOfOrder("shoe"))
    assert marked[0].type == "device.out_of_order"
    for _ in range(3):
        t.feed(DeviceFault("dealer_panel", code="noise"))
    again = _restart(t)
    assert remedy(again, "device.out_of_order").payload["restored"]
    t.feed(DeviceOnline("shoe", identity={"model": "sim"}))  # the covered shoe identifies to the new boot
    for _ in range(3):
        t.feed(DeviceFault("dealer_panel", code="noise"))
    back = t.feed(MarkOutOfOrder("shoe", False))
    assert back[0].type == "device.back_in_service"
    events = list(t.events)
    down_s = float(events.index(back[0]) - events.index(marked[0]))
    assert await _shoe_down(floor_dsn, "ms-covered", events) == [("ms-covered", "shoe", down_s, 0, "", "")]


async def test_a_jammed_shoe_is_down_once_across_a_restart_and_its_identification(floor_dsn: str) -> None:
    """The restart says the held jam again (`device.unusable`, `restored`) and the shoe's identification at start-up
    is followed by the hold said once more: one stretch of downtime and one fault, not two."""
    t = make()
    jammed = t.feed(DeviceFault("shoe", code="jam", detail="card jam at the gate"))
    _restart(t)
    for _ in range(3):
        t.feed(DeviceFault("dealer_panel", code="noise"))
    still = t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    assert [e.type for e in still] == ["device.online", "device.unusable"] and still[1].payload["restored"]
    for _ in range(3):
        t.feed(DeviceFault("dealer_panel", code="noise"))
    back = t.feed(DeviceOnline("shoe", identity={"model": "sim"}))
    events = list(t.events)
    down_s = float(len(events) - len(back) - events.index(jammed[1]))  # the first identification is back[0]'s equal
    assert await _shoe_down(floor_dsn, "ms-rejam", events) == [("ms-rejam", "shoe", down_s, 1, "jam", "")]


async def test_a_mark_made_before_the_period_and_said_again_at_a_restart_counts_from_the_period_s_start(
    floor_dsn: str,
) -> None:
    """The shoe marked out of order the day before; a restart today says the mark again (`restored`), then the shoe is
    back in service: today's report counts the shoe down from the day's start, not from the restart, and says the
    stretch began before the period."""
    t = make()
    marked = t.feed(MarkOutOfOrder("shoe"))
    for _ in range(3):
        t.feed(DeviceFault("dealer_panel", code="noise"))
    again = _restart(t)
    assert remedy(again, "device.out_of_order").payload["restored"]
    for _ in range(3):
        t.feed(DeviceFault("dealer_panel", code="noise"))
    back = t.feed(MarkOutOfOrder("shoe", False))
    events = list(t.events)
    yesterday = DAY - timedelta(days=1)
    said = events_published("ms-before", events, yesterday)
    today = events.index(again[0])  # the restart's first event, and every one after it, today
    assert events.index(marked[0]) < today
    for m in said[today:]:
        m["ts"] = m["ts"].replace(yesterday.isoformat(), DAY.isoformat())
    w = await writer(floor_dsn)
    assert (await w.write([msg(m) for m in said])).events_new == len(said)
    period = day_period(DAY, GamingDaySection())
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        figures = gather(conn, Scope(period))
    back_at = datetime.fromisoformat(said[events.index(back[0])]["ts"])
    assert period.start < datetime.fromisoformat(said[today]["ts"]) < back_at < period.end
    down_s = (back_at - period.start).total_seconds()
    shoe = [d for d in figures.devices if d[:2] == ("ms-before", "shoe")]
    assert shoe == [("ms-before", "shoe", down_s, 0, "", BEFORE)], figures.devices
