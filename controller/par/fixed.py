"""Wagers settled on random cards alone (no decision changes them): their rows from class counts, exactly, and a
progressive's return as a line in each meter."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from math import comb

from controller.core.money import Odds
from controller.core.rankings import Six
from controller.par import deals
from controller.par.sheet import MeterLine, Progressive, Row, WagerSheet, net_per_unit


@dataclass(frozen=True, slots=True)
class Outcome:
    """`count` of the `total` equally likely hands, paying `net` per unit wagered, plus `meter_percent` of meter
    `level` (the share being all the player receives, the wager included, as for "N for 1")."""

    name: str
    pays: str
    count: int
    net: Fraction = Fraction(0)
    level: str | None = None
    meter_percent: int = 0


def sheet(
    wager: str,
    title: str,
    paytable: str,
    outcomes: list[Outcome],
    total: int,
    method: str,
    wager_cents: int | None = None,
    meters: dict[str, int] | None = None,
    seeds: dict[str, tuple[int, str, Fraction | None]] | None = None,
    notes: tuple[str, ...] = (),
    extra_rows: tuple[Row, ...] = (),
) -> WagerSheet:
    """The WagerSheet of a wager whose outcomes are `outcomes` of `total` hands (counts must add up to total).

    With meter shares, `wager_cents` is the wager's one size and `meters` the meter values (cents) to evaluate at;
    `seeds` gives per level its seed (cents), a description and its rate of progression. `extra_rows` are paid besides
    the outcomes (envy bonuses on other players' hands): they add to the return, not to the hands counted."""
    if sum(o.count for o in outcomes) != total:
        raise AssertionError(f"{wager}: the outcomes count {sum(o.count for o in outcomes)} hands of {total}")
    levels = {o.level for o in outcomes if o.level}
    at = {level: (meters or {}).get(level, (seeds or {})[level][0]) for level in levels}
    rows = []
    base = Fraction(0)
    slope: dict[str, Fraction] = dict.fromkeys(levels, Fraction(0))
    for o in outcomes:
        p = Fraction(o.count, total)
        net = o.net
        if o.level is not None and wager_cents:
            share = Fraction(o.meter_percent, 100 * wager_cents)
            slope[o.level] += p * share
            base -= p
            net = share * at[o.level] - 1
        else:
            base += p * net
        rows.append(Row(o.name, o.pays, p, p * net))
    hit = sum((r.probability for r in rows if r.contribution > 0), Fraction(0))
    base += sum((r.contribution for r in extra_rows), Fraction(0))
    rows.extend(extra_rows)
    expected = sum((r.contribution for r in rows), Fraction(0))
    progressive = _meters(wager_cents, base, slope, at, expected, seeds or {}) if levels and wager_cents else None
    return WagerSheet(
        wager,
        title,
        paytable,
        "per unit wagered" if not wager_cents else f"per {wager_cents}-cent wager",
        -expected,
        tuple(rows),
        hit,
        method,
        progressive=progressive,
        notes=notes,
        variance_known=not extra_rows,
    )


def all_six(table: Mapping[str, str], paytable: str) -> WagerSheet:
    """An All-Six Bonus paid on any six cards of the deck by the class names of `table` (rankings.Six; the rows it
    does not name lose), 679a.1 and 684a.10(b) alike: every one of the 20,358,520 six-card sets."""
    counts = deals.class_counts(6)
    by_class = {Six(int(c)): int(n) for c, n in enumerate(counts)}
    by_class[Six.ROYAL_FLUSH] -= 4  # 9-10-J-Q-K-A of one suit: the six-card royal flush (rank_six)
    by_class[Six.SIX_CARD_ROYAL_FLUSH] = 4
    outcomes = []
    lose = 0
    for cls in reversed(Six):
        name = cls.name.lower()
        if name in table:
            odds = Odds.parse(table[name])
            outcomes.append(Outcome(name, str(odds), by_class[cls], net_per_unit(odds)))
        else:
            lose += by_class[cls]
    outcomes.append(Outcome("lose", "loses", lose, Fraction(-1)))
    return sheet(
        "all_six",
        "All-Six Bonus Wager",
        paytable,
        outcomes,
        comb(52, 6),
        "exact: every one of the 20,358,520 six-card sets",
    )


def _meters(
    wager_cents: int,
    base: Fraction,
    slope: dict[str, Fraction],
    at: dict[str, int],
    expected: Fraction,
    seeds: dict[str, tuple[int, str, Fraction | None]],
) -> Progressive:
    """The return as a line in each meter (base + slope x meter), and each meter's break-even with the others as
    they stand."""
    lines = tuple(MeterLine(level, base, slope[level], seeds[level][1], seeds[level][2]) for level in sorted(slope))
    others = {lv: slope[lv] * at[lv] for lv in slope}
    break_even = {
        lv: None if slope[lv] == 0 else -(base + sum(v for o, v in others.items() if o != lv)) / slope[lv]
        for lv in slope
    }
    return Progressive(wager_cents, lines, at, expected, break_even, ("meters in cents",))
