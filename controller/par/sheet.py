"""What a par sheet says, as plain data: every figure an exact rational (fractions.Fraction).

An analysis (controller.par.mississippi_stud, controller.par.let_it_ride, ...) fills these; controller.par.render
prints them as text, JSON or HTML. Nothing here does I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from controller.core.money import Odds


def net_per_unit(odds: Odds) -> Fraction:
    """What one unit wins on top of being returned (a "for" award includes the unit itself, DESIGN.md)."""
    ratio = Fraction(odds.numerator, odds.denominator)
    return ratio - 1 if odds.kind == "for" else ratio


@dataclass(frozen=True, slots=True)
class Row:
    """One outcome of a wager: a paytable row, or a losing, pushing, withdrawn or folded outcome."""

    name: str  # the hand class as settlement names it (rankings' names), or "lose", "push", "fold"
    pays: str  # as the paytable prints it: "500 to 1", "$20,000", "100% of meter", "push", "loses"
    probability: Fraction
    contribution: Fraction  # to the wager's expected net return per initial unit


@dataclass(frozen=True, slots=True)
class Decision:
    """The share of all hands that take one action at one decision point under the strategy found."""

    point: str  # "3rd Street (655a.11(b))"
    action: str  # "fold", "1x", "3x", "let it ride", "withdraw"
    share: Fraction


@dataclass(frozen=True, slots=True)
class MeterLine:
    """A progressive level's return as a line in its meter: return = base + slope x meter (per wager unit)."""

    level: str
    base: Fraction  # expected return (net, per unit wagered) of the fixed rows, meter at 0
    slope: Fraction  # expected return per cent of meter, per unit wagered
    reseed: str  # what the Rules Submission fixes for the level (seed, reseed, rates)
    contribution_rate: Fraction | None = None  # share of each wager added to this meter, when known

    def house_edge_at(self, meter_units: Fraction) -> Fraction:
        return -(self.base + self.slope * meter_units)


@dataclass(frozen=True, slots=True)
class Progressive:
    """A progressive wager's return as a function of its meters, and the meter at which it breaks even."""

    wager_cents: int
    levels: tuple[MeterLine, ...]
    meters_cents: dict[str, int]  # the meters the figures are evaluated at (--meter, else the seeds)
    return_at_meters: Fraction  # net return per unit wagered at those meters
    break_even: dict[str, Fraction | None]  # per level: the meter (cents) at which the wager returns 0 alone
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WagerSheet:
    wager: str  # the wager's name in settlement and events ("ante", "three_card_bonus", ...)
    title: str
    paytable: str  # citation: "655a.12(a)", "655a.12(d) paytable A"
    unit: str  # what the figures are per: "per Ante", "per unit wagered"
    house_edge: Fraction  # the house's expected win per initial unit
    rows: tuple[Row, ...]
    hit_frequency: Fraction  # probability the wager wins something
    method: str  # "exact: every one of the 2,598,960 five-card hands", ...
    average_wager: Fraction | None = None  # total wagered per initial unit under the strategy
    decisions: tuple[Decision, ...] = ()
    progressive: Progressive | None = None
    notes: tuple[str, ...] = ()
    # E[net^2] per initial unit squared, where a row's net is not one figure (a main game's rows pay on whatever was
    # wagered); None: each row's net is its contribution over its probability.
    second_moment: Fraction | None = None
    # False where rows overlap (an envy bonus paid on other players' hands, whose chances depend on the player's own
    # through the cards shared): no variance is given rather than a wrong one.
    variance_known: bool = True

    @property
    def variance(self) -> Fraction | None:
        """The variance of one round's net result per initial unit (what a simulation's confidence interval needs)."""
        if not self.variance_known:
            return None
        second = self.second_moment
        if second is None:
            second = sum((r.contribution**2 / r.probability for r in self.rows if r.probability), Fraction(0))
        return second - self.house_edge**2

    @property
    def standard_deviation(self) -> float | None:
        variance = self.variance
        return None if variance is None else math.sqrt(variance)

    @property
    def element_of_risk(self) -> Fraction | None:
        """The house edge per unit actually wagered (the house edge over the average total wager)."""
        return None if self.average_wager is None else self.house_edge / self.average_wager

    @property
    def expected_return(self) -> Fraction:
        return 1 - self.house_edge


@dataclass(frozen=True, slots=True)
class StrategyTable:
    """A strategy in the form players know it: rules in words, in order, the first that applies decides."""

    point: str  # "3rd Street (655a.11(b))"
    rules: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ParSheet:
    table_id: str
    chapter: str  # "655a"
    game: str  # "Mississippi Stud"
    wagers: tuple[WagerSheet, ...]
    strategy: tuple[StrategyTable, ...] = ()
    not_analysed: tuple[str, ...] = ()  # what the config offers that this sheet does not cover, and why
    software: dict[str, str] = field(default_factory=dict)  # version and digest of the code that computed it
    seconds: float | None = None  # how long the analysis took (set by the caller; not part of the figures)

    def wager(self, name: str) -> WagerSheet:
        return next(w for w in self.wagers if w.wager == name)

    def expected(self, chapter: str, wager: str, row: str) -> Fraction | None:
        """The probability of a row (floor.report.expected.ParSheet): how often a settled wager lands on it."""
        if chapter != self.chapter:
            return None
        for sheet in self.wagers:
            if sheet.wager == wager:
                return next((r.probability for r in sheet.rows if r.name == row), None)
        return None
