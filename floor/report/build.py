"""The report: the figures rolled up per table, per game and for the floor, as sections of rows any renderer
prints (text, csv, json, html). Amounts stay integer cents in columns named *_cents; the renderers format them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

from floor.report.expected import COMMUNITY_WAGERS, ExactFrequencies, binomial_range, wilson_interval
from floor.report.figures import Figures, Scope


@dataclass
class Section:
    key: str
    title: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    note: str = ""


@dataclass
class HitRow:
    label: str
    observed: float
    expected: float | None
    low: float
    high: float
    flagged: bool


@dataclass
class Report:
    floor: str
    title: str
    period: str
    start: str
    end: str
    generated_at: str
    sections: list[Section]
    hourly_rounds: list[tuple[str, int]]
    hourly_hold: list[tuple[str, float | None]]  # cumulative hold % at the end of each hour
    hits: list[HitRow]
    # Said above the sections when they are empty for want of time, not of play: a period that has not begun.
    notice: str = ""

    def section(self, key: str) -> Section:
        return next(s for s in self.sections if s.key == key)

    def to_json(self) -> dict[str, Any]:
        return {
            "floor": self.floor,
            "title": self.title,
            "period": self.period,
            "start": self.start,
            "end": self.end,
            "generated_at": self.generated_at,
            "notice": self.notice or None,
            "sections": {s.key: [dict(zip(s.columns, r, strict=True)) for r in s.rows] for s in self.sections},
        }


def _pct(num: int | float, den: int | float) -> float | None:
    return round(100 * num / den, 4) if den else None


def _rollup(rows: Iterable[tuple[str, tuple[Any, ...], list[int]]], game_of: Callable[[str], str]) -> list[list[Any]]:
    """(table, key, sums) -> rows at scope table, game and floor, each [scope, id, *key, *sums]."""
    by: dict[tuple[str, str, tuple[Any, ...]], list[int]] = {}
    for table, key, sums in rows:
        for scope, ident in (("table", table), ("game", game_of(table)), ("floor", "all")):
            acc = by.setdefault((scope, ident, key), [0] * len(sums))
            for i, v in enumerate(sums):
                acc[i] += v
    order = {"table": 0, "game": 1, "floor": 2}
    return [[s, i, *k, *v] for (s, i, k), v in sorted(by.items(), key=lambda kv: (order[kv[0][0]], kv[0][1:]))]


def build(f: Figures, scope: Scope, floor_name: str, expected: ExactFrequencies | None = None) -> Report:
    expected = expected or ExactFrequencies()

    def game_of(table: str) -> str:
        return f.games.get(table, ("unknown", ""))[0]

    sections = [
        _rounds(f, game_of),
        _wagers(f, game_of),
        _takes(f, game_of),
        _abandoned(f, game_of),
    ]
    hits_section, hits = _hits(f, game_of, expected)
    sections += [hits_section, *_progressives(f, game_of), *_operations(f, game_of)]
    p = scope.period
    title = f"{floor_name}: {p.label}" + (f", table {scope.table_id}" if scope.table_id else "")
    title += f", game {scope.chapter}" if scope.chapter else ""
    rounds_by_hour: dict[datetime, int] = defaultdict(int)
    if p.hours <= 48:  # a day or a shift: every hour of it, the quiet ones too
        hour = p.start.replace(minute=0, second=0, microsecond=0)
        while hour < p.end:
            rounds_by_hour[hour] = 0
            hour += timedelta(hours=1)
    for hour, _t, n in f.hourly:
        rounds_by_hour[hour] += n
    hold: list[tuple[str, float | None]] = []
    handle = win = 0
    by_hour: dict[datetime, list[int]] = defaultdict(lambda: [0, 0])
    for hour, _t, _w, _n, h, coll, paid in f.wagers:
        by_hour[hour][0] += h
        by_hour[hour][1] += coll - paid
    for hour in sorted(set(by_hour) | set(rounds_by_hour)):  # every hour of the rounds chart: the same axis
        handle += by_hour.get(hour, [0, 0])[0]
        win += by_hour.get(hour, [0, 0])[1]
        hold.append((hour.isoformat(), _pct(win, handle)))
    return Report(
        floor_name,
        title,
        p.label,
        p.start.isoformat(),
        p.end.isoformat(),
        datetime.now(UTC).isoformat(timespec="seconds"),
        sections,
        [(h.isoformat(), n) for h, n in sorted(rounds_by_hour.items())],
        hold,
        hits,
        not_begun(p.start, f.now, p.label) if f.now is not None else "",
    )


def _rounds(f: Figures, game_of: Callable[[str], str]) -> Section:
    rows = _rollup(((t, (), [c, v, h]) for t, (c, v, h) in f.rounds.items()), game_of)
    out = [[*r, round(r[2] / r[4], 2) if r[4] else None] for r in rows]
    return Section(
        "rounds",
        "Rounds",
        ["scope", "id", "rounds", "voided", "active_hours", "rounds_per_hour"],
        out,
        "rounds per hour = rounds completed / hours in which the table completed at least one round (summed "
        "over the tables of a game or the floor)",
    )


def _wagers(f: Figures, game_of: Callable[[str], str]) -> Section:
    per = ((t, (w,), [n, h, c, p]) for _hour, t, w, n, h, c, p in f.wagers)
    rows = _rollup(per, game_of)
    out = [[*r, r[5] - r[6], _pct(r[5] - r[6], r[4])] for r in rows]
    return Section(
        "wagers",
        "Handle, win and hold by wager",
        ["scope", "id", "wager", "settled", "handle_cents", "collected_cents", "paid_cents", "win_cents", "hold_pct"],
        out,
        "handle = the amounts of the wagers settled or collected at a fold (a bet withdrawn is not handle); "
        "win = collected - paid; hold % = 100 x win / handle",
    )


def _abandoned(f: Figures, game_of: Callable[[str], str]) -> Section:
    rows = _rollup(
        ((t, (r,), [lost, held, house, player, end]) for t, r, lost, held, house, player, end in f.abandoned), game_of
    )
    return Section(
        "abandoned",
        "Wagers abandoned by a player who left (.7(b))",
        [
            "scope",
            "id",
            "rule",
            "collected_at_once_cents",
            "held_cents",
            "released_to_house_cents",
            "released_to_player_cents",
            "held_at_end_cents",
        ],
        rows,
        "collected at once (abandoned_wagers = lose) and released to the house are collected: in the wagers' "
        "handle and win above; held, they are neither until released; released to the player, the wager is "
        "returned (not a win, not handle); held at end = every hold less every release before the period's end",
    )


def _takes(f: Figures, game_of: Callable[[str], str]) -> Section:
    placing = ((t, (spot,), [n, m]) for t, spot, n, m in f.takes)
    rows = _rollup(placing, game_of)
    return Section(
        "take_rates",
        "Take rate of each wager",
        ["scope", "id", "wager", "seats_placing", "seats_playing", "take_pct"],
        [[*r, _pct(r[3], r[4])] for r in rows],
        "take rate = seat-rounds with the wager at lock-out / seat-rounds played (each seat at 'no more bets')",
    )


def _row_of(hand: str, odds: str | None, rows: dict[str, str]) -> str:
    """The paytable row a settlement was paid under: its hand when the row has that name, else the one row with
    the award paid (Let It Ride pays its 'pair' row to a pair of tens or better), else no award."""
    if hand == "(no award)" or hand in rows:
        return hand
    matches = [r for r, award in rows.items() if odds is not None and award.lower() == odds.lower()]
    return matches[0] if len(matches) == 1 else "(no award)"


def _hits(f: Figures, game_of: Callable[[str], str], expected: ExactFrequencies) -> tuple[Section, list[HitRow]]:
    counts: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for table, wager_key, hand, odds, n, rounds in f.hands:
        chapter = game_of(table)
        paytables = f.paytables.get(chapter, [])
        if wager_key.startswith("main:"):
            citation = wager_key.removeprefix("main:")
            table_def = next((p for p in paytables if p["citation"] == citation), paytables[0] if paytables else None)
        else:
            table_def = next((p for p in paytables if p["wager"] == wager_key), None)
        if table_def is None:
            continue
        row = _row_of(hand, odds, dict(table_def["rows"]))
        acc = counts[(chapter, str(table_def["wager"]))][row]
        acc[0] += n
        acc[1] += rounds
    section = Section(
        "hit_frequency",
        "Hit frequency of each paytable row",
        ["game", "wager", "row", "n", "hits", "observed_pct", "expected_pct", "expected_hits_95", "flag"],
        note="observed = hits / n; n = the wager's settlements (rounds, for a wager on the community cards); "
        "expected hits 95 % = the 2.5 % to 97.5 % quantiles of Binomial(n, expected); flagged when the hits lie "
        "outside; no expectation: the row depends on the players' decisions (par sheet, issue 18)",
    )
    hits: list[HitRow] = []
    for (chapter, wager), rows in sorted(counts.items()):
        per_round = (chapter, wager) in COMMUNITY_WAGERS
        n = sum(v[1] if per_round else v[0] for v in rows.values())
        for row, (k_wagers, k_rounds) in sorted(rows.items()):
            if row == "(no award)":
                continue
            k = k_rounds if per_round else k_wagers
            exp: Fraction | None = expected.expected(chapter, wager, row)
            low, high = wilson_interval(k, n)
            span, flag, e = "-", "", None
            if exp is not None:
                a, b = binomial_range(n, float(exp))
                span, e = f"{a}-{b}", round(100 * float(exp), 6)
                flag = "" if a <= k <= b else ("above 95 % range" if k > b else "below 95 % range")
            section.rows.append([chapter, wager, row, n, k, _pct(k, n), e, span, flag])
            expected_f = None if exp is None else float(exp)
            hits.append(HitRow(f"{chapter} {wager} {row}", k / n if n else 0.0, expected_f, low, high, bool(flag)))
    return section, hits


def _progressives(f: Figures, game_of: Callable[[str], str]) -> list[Section]:
    jackpots = Section(
        "jackpots",
        "Jackpots paid",
        ["scope", "id", "level", "hits", "paid_cents"],
        _rollup(((t, (lv,), [n, a]) for t, lv, n, a in f.jackpots), game_of),
    )
    contributions = Section(
        "contributions",
        "Progressive contributions",
        ["scope", "id", "level", "wagers", "wagered_cents", "contributed_micro_cents"],
        _rollup(((t, (lv,), [n, c, m]) for t, lv, n, c, m in f.contributions), game_of),
        "the progressive wagers that fed each meter at lock-out (655a.8(b), 643a.8(b)(2)), less a voided round's"
        " (reversed); contributed in micro-cents (1 cent = 1,000,000), exact",
    )
    liability = Section(
        "liability",
        "Progressive liability at the period's end",
        ["scope", "id", "level", "display_cents", "reserve_cents", "liability_cents"],
        [[*r, r[3] + r[4]] for r in _rollup(((t, (lv,), [d, r]) for t, lv, d, r in f.liability), game_of)],
        "liability = display + reserve of each meter's last report before the period's end",
    )
    return [jackpots, contributions, liability]


def _operations(f: Figures, game_of: Callable[[str], str]) -> list[Section]:
    irregular = Section(
        "irregularities",
        "Voids and irregularities",
        ["scope", "id", "kind", "rule", "count"],
        _rollup(((t, (ty, r or ""), [n]) for t, ty, r, n in f.irregular), game_of),
    )
    devices = Section(
        "devices",
        "Device downtime and faults",
        ["table", "device", "downtime_s", "faults", "fault_codes", "note"],
        [[t, d, round(s, 1), n, c, note] for t, d, s, n, c, note in f.devices],
        "downtime = time offline, unusable or out of order (until back online or in service, or the period's end, "
        "or now for a device still down in a period not over; "
        "from the period's start for a mark or hold made before it that a restart said again)",
    )
    tilts = Section(
        "tilts",
        "Tilts",
        ["table", "tilt", "raised", "cleared", "duration_s"],
        [[t, k, a, b or "(open)", round(s, 1)] for t, k, a, b, s in f.tilts],
    )
    commands = Section(
        "commands",
        "Supervisor commands by verb and role",
        ["scope", "id", "verb", "role", "count"],
        _rollup(((t, (v, r), [n]) for t, v, r, n in f.commands), game_of),
    )
    return [irregular, devices, tilts, commands]


def not_begun(start: datetime, now: datetime, label: str) -> str:
    """The report's notice for a period that starts after `now` (the archive's clock), else nothing."""
    if now >= start:
        return ""
    return (
        f"{label} has not begun: it starts {start:%Y-%m-%d %H:%M} UTC and the archive's clock says "
        f"{now.astimezone(UTC):%Y-%m-%d %H:%M} UTC, so nothing of it is archived yet; run the report once it has "
        "begun (or ended, for its whole figures)"
    )
