"""The events a day's figures count as "voids and irregularities": the floor's report (floor/report/figures.py) and a
table's own `tablectl journal totals` (controller/store/totals.py) count the same ones, so an auditor's reconciliation
of the two (docs/floor.md, "Reconciling") compares like with like."""

IRREGULARITIES = (
    "round.voided",
    "card.face_up_discarded",
    "card.drawn_in_error",
    "deck.removed",
    "shuffle.failed",
    "wager.rejected",
    "chip_count.mismatch",
    "stub.miscounted",
    "progressive.reversal_refused",
)
