"""Chapter 655a's paytables in force, for the birth message: each 655a.12 table of a wager the rules offer."""

from __future__ import annotations

from controller.core.paytable import Paytable
from controller.games.describe import PaytableText, rows_text
from controller.games.mississippi_stud.paytables import (
    ANTE_AND_STREETS,
    FIVE_CARD_HAND_BONUS,
    PROGRESSIVE,
    SIX_CARD_BONUS,
    SIX_CARD_ROYAL_DIAMONDS,
    THREE_CARD_BONUS,
)
from controller.games.mississippi_stud.rules import MississippiStudRules


def _text(wager: str, table: Paytable, letter: str | None) -> PaytableText:
    return PaytableText(wager=wager, citation=table.citation, letter=letter, rows=rows_text(table.rows))


def _six_card_bonus(letter: str) -> PaytableText:
    """655a.12(f): paytable E's six-card royal flush in diamonds is a row of its own."""
    rows = rows_text(SIX_CARD_BONUS[letter].rows)
    if letter in SIX_CARD_ROYAL_DIAMONDS:
        diamonds = rows_text(SIX_CARD_ROYAL_DIAMONDS[letter].rows)
        rows |= {f"{k}_of_diamonds": v for k, v in diamonds.items()}
    return PaytableText(wager="six_card_bonus", citation=SIX_CARD_BONUS[letter].citation, letter=letter, rows=rows)


def paytables(rules: MississippiStudRules) -> list[PaytableText]:
    out = [_text("ante", ANTE_AND_STREETS, None)]
    if (letter := rules.three_card_bonus_paytable) is not None:
        out.append(_text("three_card_bonus", THREE_CARD_BONUS[letter], letter))
    if (six := rules.six_card_bonus_paytable) is not None:
        out.append(_six_card_bonus(six))
    if (letter := rules.progressive_paytable) is not None:
        out.append(
            PaytableText(
                wager="progressive",
                citation=f"655a.12(c)(1) paytable {letter}",
                letter=letter,
                rows=rows_text(PROGRESSIVE[letter]),
            )
        )
    if rules.five_card_hand_bonus:
        out.append(
            PaytableText(
                wager="five_card_hand_bonus",
                citation="655a.12(e)(1)",
                letter=None,
                rows=rows_text(FIVE_CARD_HAND_BONUS),
            )
        )
    return out
