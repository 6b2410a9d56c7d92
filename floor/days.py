"""Gaming days and shifts as instants: a gaming day starts at the configured local hour (FLOOR.toml
[gaming_day]) and lasts until the same hour next day, so a night's play stays in one day; a shift is a stretch of
local clock time inside a gaming day, ending on the next calendar date when its end is before its start.

Local times are turned into instants with the zone's rules, so a day that crosses a change of clocks lasts 23 or
25 hours, as the accounting department counts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from floor.config import GamingDaySection, Shift, clock


def parse_ts(text: str) -> datetime:
    """A contract timestamp (`2026-11-21T08:00:00.000000Z`) as an aware UTC datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def gaming_day(ts: datetime, gd: GamingDaySection) -> date:
    start = clock(gd.starts_at)
    local = ts.astimezone(gd.zone)
    offset = timedelta(hours=start.hour, minutes=start.minute)
    return (local.replace(tzinfo=None) - offset).date()


@dataclass(frozen=True, slots=True)
class Period:
    """A half-open stretch of time [start, end) that a report covers, with the words that name it."""

    start: datetime
    end: datetime
    label: str
    first_day: date
    last_day: date

    @property
    def hours(self) -> float:
        return (self.end - self.start).total_seconds() / 3600


def _local(day: date, hhmm: str, gd: GamingDaySection) -> datetime:
    t = clock(hhmm)
    return datetime(day.year, day.month, day.day, t.hour, t.minute, tzinfo=gd.zone).astimezone(UTC)


def day_period(day: date, gd: GamingDaySection) -> Period:
    start = _local(day, gd.starts_at, gd)
    end = _local(day + timedelta(days=1), gd.starts_at, gd)
    return Period(start, end, f"gaming day {day.isoformat()} (from {gd.starts_at} {gd.timezone})", day, day)


def shift_period(day: date, shift: Shift, gd: GamingDaySection) -> Period:
    """The shift of gaming day `day`: a shift starting before the day's start hour falls on the next date."""
    day_start = clock(gd.starts_at)
    start_date = day if clock(shift.start) >= day_start else day + timedelta(days=1)
    end_date = start_date if clock(shift.end) > clock(shift.start) else start_date + timedelta(days=1)
    label = f"shift {shift.name} of gaming day {day.isoformat()} ({shift.start}-{shift.end} {gd.timezone})"
    return Period(_local(start_date, shift.start, gd), _local(end_date, shift.end, gd), label, day, day)


def range_period(first: date, last: date, gd: GamingDaySection) -> Period:
    """Gaming days `first` through `last`, both included."""
    if last < first:
        raise ValueError(
            f"--to {last} is before --from {first}: give the earlier gaming day to --from (--from {last} --to {first})"
        )
    start = day_period(first, gd).start
    end = day_period(last, gd).end
    return Period(start, end, f"gaming days {first.isoformat()} to {last.isoformat()}", first, last)
