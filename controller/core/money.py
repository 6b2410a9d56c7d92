"""Money is integer cents; payout odds are exact ratios.

"N to 1" pays N times the wager and the wager is returned; "N for 1" returns N times the wager in
total, the wager included (DESIGN.md, Money).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from pydantic import Field

Cents = int

# Upper bounds for the amounts a table config may name; each chapter's rules model gives them in its Field
# descriptions. A wager limit: $100,000, above any maximum a Pennsylvania table game posts; at the highest odds a
# chapter pays (1,000 to 1, on up to ten times the Ante) such a wager wins well inside the 2**53 cents a JSON
# consumer reads exactly (SQLite stores up to 2**63). A config with 2**63-1 cents is a typo, not a table.
MAX_WAGER_CENTS: Cents = 10_000_000
# Payout limits and progressive meter seeds: $1,000,000,000, above every floor a chapter derives from the largest
# minimum wager (683a.12(f): 500 to 1 on an Ante of $100,000 and three 3x Raises is $500,000,000), as far inside.
MAX_AMOUNT_CENTS: Cents = 100_000_000_000
# How the rules models' Field descriptions state the bounds.
WAGER_BOUND = "at most 10000000 ($100,000, above any posted table maximum: payouts stay exact)"
AMOUNT_BOUND = "at most 100000000000 ($1,000,000,000, above every floor a chapter derives: amounts stay exact)"


def wager_field(default: Cents, what: str) -> Any:
    """A rules model's wager amount or limit in cents: more than 0, at most MAX_WAGER_CENTS, and saying so."""
    return Field(default, gt=0, le=MAX_WAGER_CENTS, description=f"{what}, in cents; {WAGER_BOUND}")


# ASCII: in a str pattern \s is every Unicode space, so "1\u3000to 1" (an ideographic space) read as odds.
_ODDS = re.compile(r"^\s*([0-9,]+)\s+(to|for)\s+([0-9]+)\s*$", re.ASCII)


@dataclass(frozen=True, slots=True)
class Odds:
    """Payout odds as a chapter prints them: "500 to 1" returns the wager besides, "50 for 1" includes it."""

    numerator: int
    denominator: int = 1
    kind: Literal["to", "for"] = "to"

    @classmethod
    def parse(cls, text: str) -> Odds:
        m = _ODDS.fullmatch(text)
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
