"""`tablectl journal totals`: a table's own figures for a gaming day or a shift of one, summed from its journal
(controller.store.totals), so that a supervisor or an auditor can hold the floor's report against them by hand
(docs/floor.md, "Reconciling"). The gaming day is the floor's ([gaming_day] starts_at and timezone): the table does
not know it, so the command is told. Rows sealed into archive segments (`journal archive`, [journal] keep_rounds)
count as the rows kept in the file do: each segment is checked as `journal verify --archives` checks it, and one
that is missing or altered stops the command (a smaller total would pass for the day's).
"""

from __future__ import annotations

import argparse
import json
import re
from datetime import date
from datetime import time as dt_time
from itertools import chain
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from controller.cli import numbers
from controller.cli.verb import Subparsers, UsageError
from controller.store.reader import ArchiveUnreadable, JournalReader
from controller.store.schema import JournalError
from controller.store.totals import GamingDays, Shift, in_period, to_text, totals

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_CLOCK = re.compile(r"([0-9]{2}):([0-9]{2})")
# The floor's [[shifts]] name pattern (floor/config.py), then its local start and end.
_SHIFT = re.compile(r"([A-Za-z0-9_\-]{1,32})=([^-]+)-(.+)")


def _day(text: str) -> date:
    if not _DATE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{numbers.shown(text)} is not a date: write YYYY-MM-DD, e.g. 2026-11-21")
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{numbers.shown(text)} is no such date: e.g. 2026-11-21") from None


def _clock(text: str) -> dt_time:
    m = _CLOCK.fullmatch(text)
    if m is None or int(m[1]) > 23 or int(m[2]) > 59:
        raise argparse.ArgumentTypeError(
            f"{numbers.shown(text)} is not a local time HH:MM: give the floor's [gaming_day] starts_at, e.g. 06:00"
        )
    return dt_time(int(m[1]), int(m[2]))


def _shift(text: str) -> Shift:
    m = _SHIFT.fullmatch(text)
    if m is None:
        raise argparse.ArgumentTypeError(
            f"{numbers.shown(text)} is not a shift: write NAME=HH:MM-HH:MM as the floor's [[shifts]] entry says it, "
            "e.g. --shift grave=22:00-06:00"
        )
    # A start equal to its end is a 24-hour shift, as the floor reads it: accepted alike, so both count the same.
    return Shift(m[1], _clock(m[2]), _clock(m[3]))


def _zone(text: str) -> ZoneInfo:
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise argparse.ArgumentTypeError(
            f"unknown time zone {numbers.shown(text)}: give the floor's [gaming_day] timezone, e.g. America/New_York"
        ) from None


def add_totals(actions: Subparsers, where: argparse.ArgumentParser) -> None:
    """`journal totals`: the table's own figures for a gaming day, to reconcile the floor's report by hand."""
    tot = actions.add_parser(
        "totals",
        parents=[where],
        help="the table's own totals for a gaming day (rounds, handle, win, jackpots, voids), from its journal",
        description="Sums, from the journal alone, the figures the floor's report (tablectl report) shows for this "
        "table: rounds completed and voided, per wager the settlements, handle, collected, paid and win, the "
        "seats playing and placing each wager, jackpots paid and progressive contributions per level, voids and "
        "irregularities per rule; in "
        "integer cents with --json. The gaming day is the floor's: give its [gaming_day] starts_at and timezone. "
        "A round's events count in the day the round ended (docs/floor.md, 'Which day owns a round'); with "
        "--shift, in the shift it ended. "
        "docs/floor.md, 'Reconciling', compares them with the floor's report.",
    )
    tot.add_argument("--day", type=_day, metavar="D", help="the gaming day, e.g. 2026-11-21")
    tot.add_argument("--from", dest="first", type=_day, metavar="D1", help="the first gaming day of a range")
    tot.add_argument("--to", dest="last", type=_day, metavar="D2", help="the last gaming day of a range (included)")
    tot.add_argument(
        "--shift",
        type=_shift,
        metavar="NAME=HH:MM-HH:MM",
        help="only this shift of --day, as the floor's [[shifts]] entry defines it (its name, local start and end), "
        "e.g. --shift grave=22:00-06:00, to hold against `tablectl report --shift NAME --day D`",
    )
    tot.add_argument(
        "--starts-at",
        type=_clock,
        default=dt_time(6, 0),
        metavar="HH:MM",
        help="local time the gaming day starts, as the floor's [gaming_day] starts_at (default 06:00)",
    )
    tot.add_argument(
        "--timezone",
        type=_zone,
        default=ZoneInfo("UTC"),
        metavar="ZONE",
        help="the floor's [gaming_day] timezone (default UTC), e.g. America/New_York",
    )
    tot.add_argument("--json", action="store_true", help="print the totals as JSON (integer cents)")
    tot.add_argument(
        "--archives",
        type=Path,
        metavar="DIR",
        help="where the journal's archive segments are (default: the config's [journal] archive_dir, else "
        "<journal>.archive beside the journal); their rows count as the journal's",
    )


def _days(args: argparse.Namespace) -> tuple[date, date]:
    if args.shift is not None and (args.first is not None or args.last is not None or args.day is None):
        raise UsageError("a shift is of one gaming day: --shift NAME=HH:MM-HH:MM --day YYYY-MM-DD, no --from/--to")
    if args.first is not None or args.last is not None:
        if args.first is None or args.last is None or args.day is not None:
            raise UsageError("a range takes both --from and --to, and no --day")
        if args.last < args.first:
            raise UsageError(f"--to {args.last} is before --from {args.first}: give the earlier day to --from")
        return args.first, args.last
    if args.day is None:
        raise UsageError("say which gaming day: --day YYYY-MM-DD, or --from YYYY-MM-DD --to YYYY-MM-DD")
    return args.day, args.day


def print_totals(reader: JournalReader, args: argparse.Namespace, archives: Path) -> int:
    """`archives`: the segments' directory (--archives, else the config's [journal] archive_dir, else the default)."""
    first, last = _days(args)
    days = GamingDays(args.starts_at, args.timezone)
    shift: Shift | None = args.shift
    start, end = days.period(first, last) if shift is None else days.shift(first, shift)
    try:
        # Archived rounds are older than the kept ones, but a day's rounds may be on both sides of the cut:
        # in_period pairs each round with its end wherever either row is.
        found = totals(in_period(chain(reader.archived_rows(archives), reader.rows()), days, start, end))
    except ArchiveUnreadable as err:
        raise JournalError(f"cannot total the archived rows: {err}") from None
    label = f"gaming day {first}" if first == last else f"gaming days {first} to {last}"
    label += f" (from {args.starts_at:%H:%M} {args.timezone.key})"
    if shift is not None:  # worded as the floor's report titles a shift (floor/days.py shift_period)
        label = f"shift {shift.name} ({shift.start:%H:%M}-{shift.end:%H:%M} {args.timezone.key}) of {label}"
    if args.json:
        print(json.dumps({"period": label, "tables": [t.as_dict() for _, t in sorted(found.items())]}, indent=1))
    else:
        print(to_text(found, label), end="")
    return 0
