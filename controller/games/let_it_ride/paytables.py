"""Chapter 643a, Let It Ride Poker: every table of 643a.12 as data, with its citation.

Rows are keyed by hand class in the order the chapter prints them. Three kinds of award occur: payout
odds ("1,000 to 1", "500 for 1"), fixed sums ("$20,000") and shares of a progressive meter ("100% of
meter"); `award` parses each from the chapter's own words so the tables below read like the text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar

from controller.core.money import Cents, Odds, fmt
from controller.core.paytable import Paytable, table
from controller.core.rankings import Five, Three


class ThreeCardProgressiveHand(IntEnum):
    """643a.6(d) hands; 643a.12(d)(1) and (d)(5) pay a mini-royal in spades apart from the other suits."""

    STRAIGHT = 1
    THREE_OF_A_KIND = 2
    STRAIGHT_FLUSH = 3
    MINI_ROYAL = 4  # hearts, diamonds, clubs
    MINI_ROYAL_SPADES = 5


class HandBonusExtra(IntEnum):
    """643a.12(f)(3): the two extra awards of the Five Card Hand Bonus Wager."""

    MAGIC_CARD = 1
    LUCKY_BONUS = 2


@dataclass(frozen=True, slots=True)
class MeterShare:
    """A share of the progressive meter at the player's turn (643a.12(d)(4), (e)(4))."""

    percent: int

    def __str__(self) -> str:
        return f"{self.percent}% of meter"

    def of(self, meter: Cents) -> Cents:
        # Fractions of a cent are rounded down: a table cannot pay them.
        return meter * self.percent // 100


@dataclass(frozen=True, slots=True)
class Amount:
    """A fixed sum, as 643a.12(b) and the envy schedules of 643a.12(d)(5) and (e)(5) print them."""

    cents: Cents

    def __str__(self) -> str:
        return fmt(self.cents)


Award = Odds | MeterShare | Amount

_AMOUNT = re.compile(r"^\$([0-9,]+)$")
_SHARE = re.compile(r"^([0-9]+)% of meter$")


def award(text: str) -> Award:
    """'$20,000', '10% of meter', '500 for 1' or '1,000 to 1', exactly as the chapter writes them."""
    if m := _AMOUNT.fullmatch(text):
        return Amount(int(m.group(1).replace(",", "")) * 100)
    if m := _SHARE.fullmatch(text):
        return MeterShare(int(m.group(1)))
    return Odds.parse(text)


@dataclass(frozen=True, slots=True)
class AwardTable:
    """A table of 643a.12 as data: each hand's award (odds, a fixed sum or a share of a meter), with its citation."""

    rule: str  # e.g. "643a.12(b)"
    name: str | None  # "paytable A", "$1 Progressive Payout Wager", or None for the chapter's only table
    rows: Mapping[IntEnum, Award]

    @property
    def citation(self) -> str:
        return f"{self.rule} {self.name}" if self.name else self.rule

    def award_for(self, hand: IntEnum) -> Award | None:
        return self.rows.get(hand)


Hand = TypeVar("Hand", bound=IntEnum)


def awards(rule: str, name: str | None, rows: Mapping[Hand, str]) -> AwardTable:
    parsed: dict[IntEnum, Award] = {hand: award(text) for hand, text in rows.items()}
    return AwardTable(rule, name, parsed)


# 643a.12(a): the Let It Ride Wagers (Bet Number 1, 2 and 3). The PAIR row is "Pair of tens, jacks,
# queens, kings or aces" only; a lower pair loses (settlement checks the rank).
LET_IT_RIDE: dict[str, Paytable] = {
    letter: table(
        "643a.12(a)",
        letter,
        {
            Five.ROYAL_FLUSH: royal,
            Five.STRAIGHT_FLUSH: "200 to 1",
            Five.FOUR_OF_A_KIND: "50 to 1",
            Five.FULL_HOUSE: "11 to 1",
            Five.FLUSH: "8 to 1",
            Five.STRAIGHT: "5 to 1",
            Five.THREE_OF_A_KIND: "3 to 1",
            Five.TWO_PAIR: "2 to 1",
            Five.PAIR: "1 to 1",
        },
    )
    for letter, royal in (("A", "1,000 to 1"), ("B", "500 to 1"))
}

_FIVE_CARD_BONUS_COLUMNS = "ABCDEFG"
# 643a.12(b): one row per hand, one column per paytable A-G. "" is a cell the chapter leaves blank
# (paytable G pays three-of-a-kind or better only, 643a.7(e)); "$0" is kept as printed.
_FIVE_CARD_BONUS_TEXT: dict[Five, tuple[str, ...]] = {
    Five.ROYAL_FLUSH: ("$20,000", "$20,000", "$20,000", "$10,000", "$10,000", "$10,000", "$25,000"),
    Five.STRAIGHT_FLUSH: ("$2,000", "$2,000", "$2,000", "$2,000", "$2,000", "$2,000", "$2,500"),
    Five.FOUR_OF_A_KIND: ("$150", "$200", "$100", "$200", "$200", "$100", "$400"),
    Five.FULL_HOUSE: ("$75", "$75", "$75", "$75", "$100", "$75", "$200"),
    Five.FLUSH: ("$50", "$50", "$50", "$50", "$50", "$50", "$50"),
    Five.STRAIGHT: ("$25", "$25", "$25", "$25", "$25", "$25", "$25"),
    Five.THREE_OF_A_KIND: ("$4", "$5", "$9", "$5", "$10", "$9", "$5"),
    Five.TWO_PAIR: ("$3", "$4", "$6", "$4", "$6", "$6", ""),
    Five.PAIR: ("$2", "$1", "$0", "$1", "$0", "$0", ""),  # tens or better only
}
FIVE_CARD_BONUS: dict[str, AwardTable] = {
    letter: awards(
        "643a.12(b)",
        f"paytable {letter}",
        {hand: cells[i] for hand, cells in _FIVE_CARD_BONUS_TEXT.items() if cells[i]},
    )
    for i, letter in enumerate(_FIVE_CARD_BONUS_COLUMNS)
}

# 643a.12(c): Three Card Bonus. Only D-F print a mini-royal row; under A-C a mini-royal is a straight
# flush (643a.6(c)(1) defines it as one) and pays on that row.
_3CB: dict[str, tuple[str, str]] = {"A": ("6 to 1", "4 to 1"), "B": ("5 to 1", "4 to 1"), "C": ("6 to 1", "3 to 1")}
THREE_CARD_BONUS: dict[str, Paytable] = {
    letter: table(
        "643a.12(c)",
        letter,
        {
            **({Three.MINI_ROYAL: "50 to 1"} if letter in "DEF" else {}),
            Three.STRAIGHT_FLUSH: "40 to 1",
            Three.THREE_OF_A_KIND: "30 to 1",
            Three.STRAIGHT: _3CB[base][0],
            Three.FLUSH: _3CB[base][1],
            Three.PAIR: "1 to 1",
        },
    )
    for letter, base in (("A", "A"), ("B", "B"), ("C", "C"), ("D", "A"), ("E", "B"), ("F", "C"))
}

# 643a.12(d)(1): Three-Card Progressive Payout Wager. Paytable B leaves the straight blank, so under
# it a straight is no Progressive Payout Hand (643a.1, "depending on the paytable").
THREE_CARD_PROGRESSIVE: dict[str, AwardTable] = {
    "A": awards(
        "643a.12(d)(1)",
        "paytable A",
        {
            ThreeCardProgressiveHand.MINI_ROYAL_SPADES: "100% of meter",
            ThreeCardProgressiveHand.MINI_ROYAL: "500 for 1",
            ThreeCardProgressiveHand.STRAIGHT_FLUSH: "70 for 1",
            ThreeCardProgressiveHand.THREE_OF_A_KIND: "60 for 1",
            ThreeCardProgressiveHand.STRAIGHT: "6 for 1",
        },
    ),
    "B": awards(
        "643a.12(d)(1)",
        "paytable B",
        {
            ThreeCardProgressiveHand.MINI_ROYAL_SPADES: "100% of meter",
            ThreeCardProgressiveHand.MINI_ROYAL: "500 for 1",
            ThreeCardProgressiveHand.STRAIGHT_FLUSH: "100 for 1",
            ThreeCardProgressiveHand.THREE_OF_A_KIND: "90 for 1",
        },
    ),
}

# 643a.12(d)(5): Three-Card Envy Bonus by the receiving player's Progressive Payout Wager, in cents.
THREE_CARD_ENVY: dict[Cents, AwardTable] = {
    100: awards(
        "643a.12(d)(5)",
        "$1 Progressive Payout Wager",
        {
            ThreeCardProgressiveHand.MINI_ROYAL_SPADES: "$100",
            ThreeCardProgressiveHand.MINI_ROYAL: "$25",
        },
    ),
    500: awards(
        "643a.12(d)(5)",
        "$5 Progressive Payout Wager",
        {
            ThreeCardProgressiveHand.MINI_ROYAL_SPADES: "$500",
            ThreeCardProgressiveHand.MINI_ROYAL: "$125",
        },
    ),
}

# 643a.12(e)(1): Five-Card Progressive Payout Wager; the chapter gives one table, no letter.
FIVE_CARD_PROGRESSIVE = awards(
    "643a.12(e)(1)",
    None,
    {
        Five.ROYAL_FLUSH: "100% of meter",
        Five.STRAIGHT_FLUSH: "10% of meter",
        Five.FOUR_OF_A_KIND: "300 for 1",
        Five.FULL_HOUSE: "50 for 1",
        Five.FLUSH: "40 for 1",
        Five.STRAIGHT: "30 for 1",
        Five.THREE_OF_A_KIND: "9 for 1",
    },
)

# 643a.12(e)(5): Five-Card Envy Bonus by the receiving player's Progressive Payout Wager, in cents.
FIVE_CARD_ENVY: dict[Cents, AwardTable] = {
    100: awards(
        "643a.12(e)(5)", "$1 Progressive Payout Wager", {Five.ROYAL_FLUSH: "$1,000", Five.STRAIGHT_FLUSH: "$300"}
    ),
    500: awards(
        "643a.12(e)(5)", "$5 Progressive Payout Wager", {Five.ROYAL_FLUSH: "$5,000", Five.STRAIGHT_FLUSH: "$1,500"}
    ),
}

# 643a.12(f)(1): Five Card Hand Bonus Wager, flush or better (643a.7(i)).
FIVE_CARD_HAND_BONUS = awards(
    "643a.12(f)(1)",
    None,
    {
        Five.ROYAL_FLUSH: "100% of meter",
        Five.STRAIGHT_FLUSH: "10% of meter",
        Five.FOUR_OF_A_KIND: "500 for 1",
        Five.FULL_HOUSE: "100 for 1",
        Five.FLUSH: "50 for 1",
    },
)

# 643a.12(f)(3): Magic Card and Lucky Bonus, on the player's Five Card Hand Bonus Wager.
HAND_BONUS_EXTRAS = table(
    "643a.12(f)(3)",
    None,
    {
        HandBonusExtra.MAGIC_CARD: "20 for 1",
        HandBonusExtra.LUCKY_BONUS: "5 for 1",
    },
)
