"""A paytable as data: hand class -> odds, with the subsection that fixes it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar

from controller.core.money import Odds


@dataclass(frozen=True, slots=True)
class Paytable:
    """A chapter's paytable as data: the payout odds of each hand, with the subsection and letter that fix them."""

    rule: str  # e.g. "655a.12(d)"
    letter: str | None  # the letter the certificate holder selected, None for a fixed table
    rows: Mapping[IntEnum, Odds]

    @property
    def citation(self) -> str:
        return f"{self.rule} paytable {self.letter}" if self.letter else self.rule

    def odds_for(self, hand: IntEnum) -> Odds | None:
        return self.rows.get(hand)


Hand = TypeVar("Hand", bound=IntEnum)


def table(rule: str, letter: str | None, rows: Mapping[Hand, str]) -> Paytable:
    parsed: dict[IntEnum, Odds] = {hand: Odds.parse(text) for hand, text in rows.items()}
    return Paytable(rule, letter, parsed)


@dataclass(frozen=True, slots=True)
class MeterShare:
    """An award of a share of a progressive meter at the player's turn ("100% of meter", "10% of meter")."""

    level: str
    percent: int

    def __str__(self) -> str:
        return f"{self.percent}% of the {self.level} meter"

    def award(self, meter: int) -> int:
        return meter * self.percent // 100  # a table cannot pay a fraction of a cent


Award = Odds | MeterShare
