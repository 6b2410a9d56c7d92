"""A simulated wager's results beside its exact figure: the mean net per initial unit, its standard error and the
confidence interval the cross-check (crosscheck.py) holds the par sheet's exact house edge against. Pure."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from controller.core.cards import STANDARD_DECK
from controller.core.settlement import ChapterRules, Settled

# Two-sided 99.9 % normal interval: with fixed seeds a test is deterministic, and a figure outside it is a finding.
Z_999 = 3.2905


@dataclass
class Estimate:
    """One wager's simulated results: the player's net per initial unit, summed exactly (integer cents)."""

    wager: str  # as the par sheet names it ("ante", "bet", "three_card_bonus", "five_card_progressive@100", ...)
    unit_cents: int  # the initial unit the results are per (the Ante, one bet, the optional wager)
    rounds: int = 0
    net_cents: int = 0
    net_squared: int = 0  # sum of squared per-round net cents, for the variance

    def add(self, net: int) -> None:
        self.rounds += 1
        self.net_cents += net
        self.net_squared += net * net

    @property
    def house_edge(self) -> float:
        return -self.net_cents / (self.rounds * self.unit_cents)

    @property
    def stderr(self) -> float:
        """The standard error of the house edge estimate (per initial unit)."""
        n = self.rounds
        mean = self.net_cents / n
        variance = max(self.net_squared / n - mean * mean, 0.0) * n / max(n - 1, 1)
        return math.sqrt(variance / n) / self.unit_cents

    def interval(self, z: float = Z_999) -> tuple[float, float]:
        """The confidence interval from the sample alone (what a simulation without an exact figure reports)."""
        return self.house_edge - z * self.stderr, self.house_edge + z * self.stderr

    def deviation(self, exact: Fraction, variance: Fraction | None) -> float:
        """How many standard errors the simulated house edge lies from the exact one, the standard error from the
        exact variance: a few rare, large wins (a royal flush) carry much of it, and a sample that saw none of them
        would understate its own spread."""
        spread = self.stderr if variance is None else math.sqrt(float(variance) / self.rounds)
        return (self.house_edge - float(exact)) / spread

    def agrees(self, exact: Fraction, variance: Fraction | None, z: float = Z_999) -> bool:
        """Whether the exact house edge lies within the simulation's z-sigma confidence interval."""
        return abs(self.deviation(exact, variance)) <= z


@dataclass
class CrossCheck:
    rules: ChapterRules
    rounds: int
    seed: int
    estimates: dict[str, Estimate] = field(default_factory=dict)


def dealt(order: npt.NDArray[np.int64]) -> list[str]:
    return [STANDARD_DECK[int(i)] for i in order]


def net(rows: Iterable[Settled]) -> int:
    return sum(r.paid - r.collected for r in rows)


def tally(check: CrossCheck, wager: str, unit: int, net: int) -> None:
    check.estimates.setdefault(wager, Estimate(wager, unit)).add(net)
