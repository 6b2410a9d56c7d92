"""Chapter 643a's paytables in force, for the birth message: each 643a.12 table of a wager the rules offer."""

from __future__ import annotations

from controller.core.paytable import Paytable
from controller.games.describe import PaytableText, rows_text
from controller.games.let_it_ride.paytables import (
    FIVE_CARD_BONUS,
    FIVE_CARD_HAND_BONUS,
    FIVE_CARD_PROGRESSIVE,
    LET_IT_RIDE,
    THREE_CARD_BONUS,
    THREE_CARD_PROGRESSIVE,
    AwardTable,
)
from controller.games.let_it_ride.rules import LetItRideRules


def _text(wager: str, table: Paytable | AwardTable, letter: str | None) -> PaytableText:
    return PaytableText(wager=wager, citation=table.citation, letter=letter, rows=rows_text(table.rows))


def paytables(rules: LetItRideRules) -> list[PaytableText]:
    out = [_text("bet", LET_IT_RIDE[rules.let_it_ride_paytable], rules.let_it_ride_paytable)]
    lettered: dict[str, dict[str, Paytable] | dict[str, AwardTable]] = {
        "five_card_bonus": FIVE_CARD_BONUS,
        "three_card_bonus": THREE_CARD_BONUS,
        "three_card_progressive": THREE_CARD_PROGRESSIVE,
    }
    offered, letters = rules.offered(), rules.paytable_letters()
    for wager, tables in lettered.items():
        if offered[wager] and (letter := letters[wager]) is not None:
            out.append(_text(wager, tables[letter], letter))
    fixed = {"five_card_progressive": FIVE_CARD_PROGRESSIVE, "five_card_hand_bonus": FIVE_CARD_HAND_BONUS}
    out += [_text(wager, table, None) for wager, table in fixed.items() if offered[wager]]
    return out
