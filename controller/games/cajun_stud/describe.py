"""Chapter 683a's paytables in force, for the birth message: each 683a.12 table the Rules Submission selected."""

from __future__ import annotations

from controller.games.cajun_stud.paytables import PAYTABLES, ChapterPaytable
from controller.games.cajun_stud.rules import CajunStudRules
from controller.games.describe import PaytableText, rows_text


def rows(table: ChapterPaytable) -> dict[str, str]:
    """Rows with odds, then the rows the text writes as "Push" or "Loss", which are outcomes rather than odds."""
    return (
        rows_text(table.paytable.rows)
        | {h.name.lower(): "push" for h in table.push_rows}
        | {h.name.lower(): "lose" for h in table.loss_rows}
    )


def paytables(rules: CajunStudRules) -> list[PaytableText]:
    letters: dict[str, str | None] = {"ante": rules.ante_paytable, **rules.optional_letters()}
    return [
        PaytableText(wager=wager, citation=tables[letter].citation, letter=letter, rows=rows(tables[letter]))
        for wager, tables in PAYTABLES.items()
        if (letter := letters[wager]) is not None
    ]
