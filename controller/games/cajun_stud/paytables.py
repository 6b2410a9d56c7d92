"""Chapter 683a, Cajun Stud: every paytable of 683a.12 as data, each row as the text writes it.

Rows the text writes as odds are a controller.core.paytable.Paytable; rows it writes as "Push" or
"Loss" are kept beside it, because they are outcomes, not odds. Keys are the chapter's hand classes
(controller.games.cajun_stud.rankings), one per row of the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

from controller.core.money import Odds
from controller.core.paytable import Paytable, table
from controller.core.rankings import Three
from controller.games.cajun_stud.rankings import AllSix, AnteHand, LoBall, Pocket

Row = Odds | Literal["push", "lose"]


@dataclass(frozen=True, slots=True)
class ChapterPaytable:
    """One lettered 683a.12 table: the rows with odds as a Paytable, plus the rows the text writes as
    "Push" or "Loss", which are outcomes rather than odds. A hand on no row loses."""

    paytable: Paytable
    push_rows: frozenset[IntEnum] = frozenset()
    loss_rows: frozenset[IntEnum] = frozenset()

    @property
    def citation(self) -> str:
        return self.paytable.citation

    @property
    def letter(self) -> str:
        return self.paytable.letter or ""

    def row(self, hand: IntEnum) -> Row | None:
        if hand in self.push_rows:
            return "push"
        if hand in self.loss_rows:
            return "lose"
        return self.paytable.odds_for(hand)


def _tables(rule: str, letters: Mapping[str, Mapping[IntEnum, str]]) -> dict[str, ChapterPaytable]:
    out: dict[str, ChapterPaytable] = {}
    for letter, rows in letters.items():
        odds = {hand: text for hand, text in rows.items() if text not in ("Push", "Loss")}
        out[letter] = ChapterPaytable(
            table(rule, letter, odds),
            frozenset(h for h, text in rows.items() if text == "Push"),
            frozenset(h for h, text in rows.items() if text == "Loss"),
        )
    return out


A = AnteHand
# 683a.12(a): Ante and Raise Wagers.
ANTE_AND_RAISE: dict[str, ChapterPaytable] = _tables(
    "683a.12(a)",
    {
        letter: {
            A.ROYAL_FLUSH: "500 to 1",
            A.STRAIGHT_FLUSH: "100 to 1",
            A.FOUR_OF_A_KIND: "40 to 1",
            A.FULL_HOUSE: fh,
            A.FLUSH: fl,
            A.STRAIGHT: st,
            A.THREE_OF_A_KIND: "3 to 1",
            A.TWO_PAIR: tp,
            A.PAIR_OF_JACKS_OR_BETTER: "1 to 1",
            A.PAIR_OF_6S_TO_10S: "Push",
        }
        for letter, fh, fl, st, tp in (
            ("A", "10 to 1", "6 to 1", "4 to 1", "2 to 1"),
            ("B", "11 to 1", "7 to 1", "4 to 1", "3 to 2"),
            ("C", "11 to 1", "7 to 1", "5 to 1", "3 to 2"),
        )
    },
)

P = Pocket
# 683a.12(b): Pocket Bonus Wager.
POCKET_BONUS: dict[str, ChapterPaytable] = _tables(
    "683a.12(b)",
    {
        letter: {P.PAIR_OF_ACES: aces, P.SUITED_ACE: "20 to 1", P.UNSUITED_ACE: "10 to 1", P.PAIR: pair}
        for letter, aces, pair in (("A", "30 to 1", "5 to 1"), ("B", "25 to 1", "5 to 1"), ("C", "30 to 1", "4 to 1"))
    },
)

T = Three
# 683a.12(c): Board Bonus Wager.
BOARD_BONUS: dict[str, ChapterPaytable] = _tables(
    "683a.12(c)",
    {
        letter: {
            T.MINI_ROYAL: mini,
            T.STRAIGHT_FLUSH: "40 to 1",
            T.THREE_OF_A_KIND: "30 to 1",
            T.STRAIGHT: st,
            T.FLUSH: fl,
            T.PAIR: "1 to 1",
        }
        for letter, mini, st, fl in (
            ("A", "40 to 1", "6 to 1", "4 to 1"),
            ("B", "40 to 1", "5 to 1", "4 to 1"),
            ("C", "50 to 1", "5 to 1", "4 to 1"),
            ("D", "50 to 1", "6 to 1", "3 to 1"),
        )
    },
)

L = LoBall
# 683a.12(d): Lo Ball Wager. Queen high is "Loss" in A and "Push" in B.
LO_BALL: dict[str, ChapterPaytable] = _tables(
    "683a.12(d)",
    {
        letter: {
            L.SEVEN_HIGH: "100 to 1",
            L.EIGHT_HIGH: "50 to 1",
            L.NINE_HIGH: nine,
            L.TEN_HIGH: "5 to 1",
            L.JACK_HIGH: "1 to 1",
            L.QUEEN_HIGH: queen,
        }
        for letter, nine, queen in (("A", "15 to 1", "Loss"), ("B", "10 to 1", "Push"))
    },
)

S = AllSix
_NONE: dict[IntEnum, str] = {}
_E_SIX_CARD: dict[IntEnum, str] = {
    S.SIX_CARD_ROYAL_FLUSH_DIAMONDS: "200,000 to 1",
    S.SIX_CARD_ROYAL_FLUSH_HEARTS_SPADES_OR_CLUBS: "20,000 to 1",
}
_ALL_SIX_COLUMNS: tuple[tuple[str, dict[IntEnum, str], str, str, str, str, str], ...] = (
    ("A", _NONE, "50 to 1", "25 to 1", "20 to 1", "10 to 1", "5 to 1"),
    ("B", _NONE, "50 to 1", "25 to 1", "15 to 1", "10 to 1", "5 to 1"),
    ("C", _NONE, "100 to 1", "20 to 1", "15 to 1", "9 to 1", "8 to 1"),
    ("D", _NONE, "100 to 1", "20 to 1", "15 to 1", "10 to 1", "7 to 1"),
    ("E", _E_SIX_CARD, "50 to 1", "20 to 1", "15 to 1", "10 to 1", "5 to 1"),
)
# 683a.12(e): All-Six Bonus Wager. Only E has six-card royal flush rows (D leaves them blank).
ALL_SIX_BONUS: dict[str, ChapterPaytable] = _tables(
    "683a.12(e)",
    {
        letter: {
            **six_card,
            S.ROYAL_FLUSH: "1,000 to 1",
            S.STRAIGHT_FLUSH: "200 to 1",
            S.FOUR_OF_A_KIND: quads,
            S.FULL_HOUSE: fh,
            S.FLUSH: fl,
            S.STRAIGHT: st,
            S.THREE_OF_A_KIND: trips,
        }
        for letter, six_card, quads, fh, fl, st, trips in _ALL_SIX_COLUMNS
    },
)
del A, P, T, L, S, _NONE, _E_SIX_CARD, _ALL_SIX_COLUMNS

PAYTABLES: dict[str, dict[str, ChapterPaytable]] = {
    "ante": ANTE_AND_RAISE,
    "pocket_bonus": POCKET_BONUS,
    "board_bonus": BOARD_BONUS,
    "lo_ball": LO_BALL,
    "all_six_bonus": ALL_SIX_BONUS,
}
