"""Money is integer cents; payout odds are exact ratios.

"N to 1" pays N times the wager and the wager is returned; "N for 1" returns N times the wager in
total, the wager included (DESIGN.md, Money).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

Cents = int

_ODDS = re.compile(r"^\s*([\d,]+)\s+(to|for)\s+(\d+)\s*$")


@dataclass(frozen=True, slots=True)
class Odds:
    numerator: int
    denominator: int = 1
    kind: Literal["to", "for"] = "to"

    @classmethod
    def parse(cls, text: str) -> Odds:
        m = _ODDS.match(text)
        if not m:
            raise ValueError(f"{text!r} is not payout odds: write e.g. '500 to 1', '3 to 2' or '50 for 1'")
        kind: Literal["to", "for"] = "to" if m.group(2) == "to" else "for"
        return cls(int(m.group(1).replace(",", "")), int(m.group(3)), kind)

    def __str__(self) -> str:
        return f"{self.numerator:,} {self.kind} {self.denominator}"

    def winnings(self, wager: Cents) -> Cents:
        """What the table pays on top of returning the wager (for "to"), or in total less the wager
        (for "for"). Fractions of a cent are rounded down: a table cannot pay them."""
        total = Fraction(wager * self.numerator, self.denominator)
        if self.kind == "for":
            total -= wager
        return int(total)  # int() truncates toward zero; total is never negative for "to" odds


def fmt(cents: Cents) -> str:
    """'$1,234.50' for the operator's eyes."""
    sign = "-" if cents < 0 else ""
    whole, part = divmod(abs(cents), 100)
    return f"{sign}${whole:,}.{part:02d}"
