"""A table's own totals for a gaming day or a shift of one, summed from its journal: what `tablectl journal totals`
prints so that an auditor can hold the floor's report (floor/report/figures.py) against the table's own record,
figure by figure.

The definitions are docs/floor.md's ("Reports"), computed here independently, in Python over the journal's rows,
not with the floor's SQL: the two agreeing is the check. Pure: rows in, totals out (the CLI reads the file).

Which gaming day an event belongs to (docs/floor.md, "Which day owns a round"): an event of a round counts in the
period in which its round ended (`round.completed` or `round.voided`), so a round dealt before the day's start hour
and settled after it is wholly the new day's: its lock-out, folds, settlements and jackpots with its completion. An
event whose round has not ended, or ended more than one gaming day from the event's own day (a round left open
across days), counts by its own `ts`, as does every event of no round.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from controller.core.irregularities import IRREGULARITIES

ROUND_ENDS = ("round.completed", "round.voided")


@dataclass(frozen=True, slots=True)
class Shift:
    """A shift as the floor's [[shifts]] defines it: a name and its local start and end."""

    name: str
    start: time
    end: time


@dataclass(frozen=True, slots=True)
class GamingDays:
    """Gaming days as the floor counts them ([gaming_day] starts_at and timezone of FLOOR.toml)."""

    starts_at: time
    zone: ZoneInfo

    def day_of(self, ts: datetime) -> date:
        local = ts.astimezone(self.zone).replace(tzinfo=None)
        return (local - timedelta(hours=self.starts_at.hour, minutes=self.starts_at.minute)).date()

    def start(self, day: date) -> datetime:
        local = datetime.combine(day, self.starts_at, tzinfo=self.zone)
        return local.astimezone(UTC)

    def period(self, first: date, last: date) -> tuple[datetime, datetime]:
        """Gaming days `first` through `last` as the instants [start, end)."""
        return self.start(first), self.start(last + timedelta(days=1))

    def shift(self, day: date, shift: Shift) -> tuple[datetime, datetime]:
        """A shift of gaming day `day` as the instants [start, end), as the floor places it (floor/days.py
        shift_period): a shift starting before the day's start hour lies on the next date, and one whose end is
        not after its start ends on the date after its start (grave 22:00-06:00)."""
        on = day if shift.start >= self.starts_at else day + timedelta(days=1)
        off = on if shift.end > shift.start else on + timedelta(days=1)
        return (
            datetime.combine(on, shift.start, tzinfo=self.zone).astimezone(UTC),
            datetime.combine(off, shift.end, tzinfo=self.zone).astimezone(UTC),
        )


def parse_ts(text: str) -> datetime:
    """A contract timestamp (`2026-11-21T08:00:00.000000Z`) as an aware UTC datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


@dataclass
class Totals:
    """One table's figures for a period, as the floor's report names them (integer cents)."""

    table_id: str
    chapter: str = ""
    rounds: int = 0
    voided: int = 0
    # wager -> [settled, handle, collected, paid]
    wagers: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0, 0]))
    seats_playing: int = 0
    seats_placing: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    jackpots: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))  # level -> hits, cents
    # level -> wagers that contributed, their cents, micro-cents contributed (less what a void reversed)
    contributions: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0]))
    irregular: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))  # (type, rule) -> count
    events: int = 0

    def as_dict(self) -> dict[str, Any]:
        wagers = {
            w: {
                "settled": v[0],
                "handle_cents": v[1],
                "collected_cents": v[2],
                "paid_cents": v[3],
                "win_cents": v[2] - v[3],
            }
            for w, v in sorted(self.wagers.items())
        }
        return {
            "table_id": self.table_id,
            "chapter": self.chapter,
            "events": self.events,
            "rounds": self.rounds,
            "voided": self.voided,
            "wagers": wagers,
            "handle_cents": sum(v[1] for v in self.wagers.values()),
            "win_cents": sum(v[2] - v[3] for v in self.wagers.values()),
            "seats_playing": self.seats_playing,
            "seats_placing": dict(sorted(self.seats_placing.items())),
            "jackpots": {lv: {"hits": v[0], "paid_cents": v[1]} for lv, v in sorted(self.jackpots.items())},
            "contributions": {
                lv: {"wagers": v[0], "wagered_cents": v[1], "contributed_micro_cents": v[2]}
                for lv, v in sorted(self.contributions.items())
            },
            "irregularities": [{"type": t, "rule": r, "count": n} for (t, r), n in sorted(self.irregular.items())],
        }


def in_period(
    rows: Iterable[Mapping[str, Any]], days: GamingDays, start: datetime, end: datetime
) -> list[Mapping[str, Any]]:
    """The rows that belong to the period [start, end) (`GamingDays.period` or `.shift`; the module's rule: a
    round's events go with its end when it ended within a gaming day of them)."""
    rows = [r for r in rows if r.get("payload") is not None]  # a damaged row is not counted: `journal verify` says it
    ends: dict[tuple[str, str], datetime] = {}
    for r in rows:
        if r["type"] in ROUND_ENDS and r["round_id"]:
            key = (r["table_id"], r["round_id"])
            at = parse_ts(r["ts"])
            if key not in ends or at < ends[key]:
                ends[key] = at
    out = []
    for r in rows:
        at = parse_ts(r["ts"])
        ended = ends.get((r["table_id"], r["round_id"])) if r["round_id"] else None
        if ended is not None and abs((days.day_of(ended) - days.day_of(at)).days) <= 1:
            at = ended
        if start <= at < end:
            out.append(r)
    return out


def _add(acc: list[int], amount: int, collected: int, paid: int) -> None:
    acc[0] += 1
    acc[1] += amount
    acc[2] += collected
    acc[3] += paid


def totals(rows: Iterable[Mapping[str, Any]]) -> dict[str, Totals]:
    """Each table's figures over `rows` (already chosen by period: `in_period`), docs/floor.md's definitions."""
    out: dict[str, Totals] = {}
    chapters: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in rows:
        tid, t, p = str(r["table_id"]), str(r["type"]), r["payload"]
        tot = out.setdefault(tid, Totals(tid))
        tot.events += 1
        rule = r["rule"] or ""
        if rule and "0" <= rule[0] <= "9":  # a chapter citation starts with its ASCII number
            chapters[tid][rule.split(".")[0]] += 1
        if t == "round.completed":
            tot.rounds += 1
        elif t == "round.voided":
            tot.voided += 1
        if t in IRREGULARITIES:
            tot.irregular[(t, rule)] += 1
        if t == "no_more_bets":
            for spots in p["wagers"].values():
                tot.seats_playing += 1
                for spot in spots:
                    tot.seats_placing[spot] += 1
        elif t == "seat.folded":
            for wager, amount in p["collected"].items():
                _add(tot.wagers[wager], int(amount), int(amount), 0)
        elif (t == "wagers.abandoned" and p.get("disposition") == "lose") or (
            t == "held_wagers.released" and p.get("to") == "house"
        ):
            for wager, amount in p["wagers"].items():
                _add(tot.wagers[wager], int(amount), int(amount), 0)
        elif t.endswith(".settled"):
            for w in p.get("wagers", [p]):
                if w.get("outcome") == "withdrawn":  # 643a.11(b), (d): never at risk, not handle
                    continue
                wager = str(w.get("wager", t.split(".")[0]))
                _add(tot.wagers[wager], int(w.get("amount", 0)), int(w.get("collected", 0)), int(w["paid"]))
        elif t in ("meter.contributed", "meter.contributions_reversed"):
            delta, acc = p["delta"], tot.contributions[str(p["level"])]
            for i, k in enumerate(("in_count", "in_cents", "contributed_micro")):
                acc[i] += int(delta.get(k, 0))
        elif t == "progressive.paid":
            acc = tot.jackpots[str(p["level"])]
            acc[0] += 1
            acc[1] += int(p["amount"])
    for tid, seen in chapters.items():
        out[tid].chapter = max(seen, key=lambda c: seen[c])
    return out


def to_text(found: Mapping[str, Totals], label: str) -> str:
    """The totals as a person reads them beside the floor's text report (dollars and cents)."""

    def usd(cents: int) -> str:
        return f"{'-' if cents < 0 else ''}${abs(cents) // 100:,}.{abs(cents) % 100:02d}"

    lines = [f"Totals from the journal, {label}"]
    if not found:
        lines.append("  no events in this period")
    for tid, t in sorted(found.items()):
        d = t.as_dict()
        lines.append(f"table {tid} (chapter {t.chapter or 'unknown'}): {t.rounds} rounds completed, {t.voided} voided")
        lines.append(f"  handle {usd(d['handle_cents'])}, win {usd(d['win_cents'])}")
        for w, v in d["wagers"].items():
            lines.append(
                f"  {w}: {v['settled']} settled, handle {usd(v['handle_cents'])}, collected "
                f"{usd(v['collected_cents'])}, paid {usd(v['paid_cents'])}, win {usd(v['win_cents'])}"
            )
        lines.append(
            f"  seats played {t.seats_playing}; placing "
            + (", ".join(f"{k} {n}" for k, n in d["seats_placing"].items()) or "none")
        )
        for lv, j in d["jackpots"].items():
            lines.append(f"  jackpot {lv}: {j['hits']} paid, {usd(j['paid_cents'])}")
        for lv, c in d["contributions"].items():
            micro = c["contributed_micro_cents"]
            lines.append(
                f"  contributions to {lv}: {c['wagers']} wagers, {usd(c['wagered_cents'])} wagered, "
                f"{usd(micro // 1_000_000)} and {micro % 1_000_000:,} micro-cents contributed"
            )
        for i in d["irregularities"]:
            lines.append(f"  {i['type']} [{i['rule'] or 'no rule'}]: {i['count']}")
    return "\n".join(lines) + "\n"
