"""Chapter 683a: the certificate holder's Rules-Submission choices, the [game] table of a Cajun Stud config."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from controller.core.money import AMOUNT_BOUND, MAX_AMOUNT_CENTS, Cents, wager_field
from controller.core.settlement import ChapterRules
from controller.engine.spec import Offer
from controller.games.cajun_stud.paytables import ANTE_AND_RAISE, PAYTABLES, ChapterPaytable
from controller.games.cajun_stud.rankings import AnteHand
from controller.games.limits import Limits, WagerLimit, limits_problem, resolve
from controller.games.procedure import DealingChoice

CHAPTER = "683a"
NAME = "Cajun Stud"
MAX_SEATS = 6  # 683a.2(a)
RAISE_MULTIPLES = (1, 2, 3)  # 683a.1 Raise Wager; 683a.11(b), (d), (f)
MIN_PAYOUT_LIMIT: Cents = 5_000_000  # 683a.12(f): not less than $50,000

OptionalWager = Literal["pocket_bonus", "board_bonus", "lo_ball", "all_six_bonus"]
OPTIONAL_WAGERS: tuple[OptionalWager, ...] = ("pocket_bonus", "board_bonus", "lo_ball", "all_six_bonus")
RAISES = ("raise_1", "raise_2", "raise_3")
# Settlement order of one seat's wagers: 683a.11(h), then the optional wagers in the order of 683a.11(i).
WAGERS: tuple[str, ...] = ("ante", *RAISES, *OPTIONAL_WAGERS)
WAGER_RULES: dict[str, str] = {
    "ante": "683a.7(d)(1)",
    "raise_1": "683a.11(b)",
    "raise_2": "683a.11(d)",
    "raise_3": "683a.11(f)",
    "pocket_bonus": "683a.7(d)(2)",
    "board_bonus": "683a.7(d)(3)",
    "lo_ball": "683a.7(d)(4)",
    "all_six_bonus": "683a.7(d)(5)",
}
# The decision that asks for raise_k, in order; a fold there forfeits the Ante and the earlier raises.
DECISION_RULES = ("683a.11(b)", "683a.11(d)", "683a.11(f)")
# Wagers whose settlement reads the player's own cards; a seat that folded without them may have none.
READS_PLAYER_CARDS: tuple[OptionalWager, ...] = ("pocket_bonus", "lo_ball", "all_six_bonus")


def payout_limit_floor(ante_min_cents: Cents) -> Cents:
    """683a.12(f): the lowest limit allowed, $50,000 or the most one patron betting the minimum could win.

    "The minimum Ante and Raise Wager" is read as the minimum Ante with every Raise Wager at the most the
    chapter lets a player raise on it (3x, 683a.11(b), (d), (f)), so the floor never lets the limit cut a
    royal flush of a minimum-Ante player, whatever he raised. It counts one box.
    """
    royal = ANTE_AND_RAISE["A"].paytable.rows[AnteHand.ROYAL_FLUSH]  # 500 to 1 in every 683a.12(a) table
    most = royal.winnings(ante_min_cents * (1 + max(RAISE_MULTIPLES) * len(RAISES)))
    return max(MIN_PAYOUT_LIMIT, most)


class CajunStudRules(ChapterRules, DealingChoice):
    """Chapter 683a options from the certificate holder's Rules Submission (601a.2), with the table's procedure
    (controller.games.procedure: 683a.8 manual shoe, 683a.9 hand or 683a.10 automated shoe, stub counts, decks)."""

    chapter: Literal["683a"] = Field(description="the chapter of 58 Pa. Code that defines the game: 683a Cajun Stud")
    seats: int = Field(6, ge=1, le=MAX_SEATS, description="betting positions at the table, at most six (683a.2(a))")
    adjacent_boxes: int = Field(
        1, ge=1, le=MAX_SEATS, description="how many adjacent boxes one player may wager on in a round (683a.7(e))"
    )
    ante_min_cents: int = wager_field(500, "table minimum Ante Wager (it sets the 683a.12(f) floor)")
    ante_max_cents: int = wager_field(10_000, "table maximum Ante Wager")
    ante_paytable: Literal["A", "B", "C"] = Field(
        description="683a.12(a) paytable letter for the Ante and Raise Wagers"
    )
    optional_wagers: tuple[OptionalWager, ...] = Field(
        (),
        description="optional wagers offered (683a.7(d)(2)-(5)): any of pocket_bonus, board_bonus, lo_ball, "
        "all_six_bonus; each needs its <wager>_paytable",
    )
    pocket_bonus_paytable: Literal["A", "B", "C"] | None = Field(
        None, description="683a.12(b) paytable letter of the Pocket Bonus Wager, when offered"
    )
    board_bonus_paytable: Literal["A", "B", "C", "D"] | None = Field(
        None, description="683a.12(c) paytable letter of the Board Bonus Wager, when offered"
    )
    lo_ball_paytable: Literal["A", "B"] | None = Field(
        None,
        description="683a.12(d) paytable letter of the Lo Ball Wager, when offered (A: jack high or lower "
        "wins, queen high loses; B: queen high pushes)",
    )
    all_six_bonus_paytable: Literal["A", "B", "C", "D", "E"] | None = Field(
        None, description="683a.12(e) paytable letter of the All-Six Bonus Wager, when offered"
    )
    wager_limits: dict[str, WagerLimit] = Field(
        default_factory=dict,
        description="each optional wager's posted minimum and maximum in cents, e.g. all_six_bonus = "
        "{ min_cents = 100, max_cents = 2500 }; a wager or a bound left out takes the Ante's limits",
    )
    payout_limit_cents: int | None = Field(
        None,
        gt=0,
        le=MAX_AMOUNT_CENTS,
        description="683a.12(f) aggregate payout limit per player per round on the Ante and Raise Wagers, in "
        f"cents; at least $50,000 and at least payout_limit_floor(ante_min_cents); {AMOUNT_BOUND}; leave out for none",
    )

    @field_validator("optional_wagers")
    @classmethod
    def _distinct(cls, v: tuple[OptionalWager, ...]) -> tuple[OptionalWager, ...]:
        dup = sorted({w for w in v if v.count(w) > 1})
        if dup:
            raise ValueError(f"optional_wagers lists {', '.join(dup)} more than once: list each wager once")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> CajunStudRules:
        letters = self.optional_letters()
        for wager in OPTIONAL_WAGERS:
            letter = letters[wager]
            if wager in self.optional_wagers and letter is None:
                raise ValueError(
                    f"optional_wagers offers {wager} but {wager}_paytable is not set: add "
                    f'{wager}_paytable = "<letter>" from {PAYTABLES[wager]["A"].paytable.rule}'
                )
            if wager not in self.optional_wagers and letter is not None:
                raise ValueError(
                    f'{wager}_paytable = "{letter}" but optional_wagers does not offer {wager}: add '
                    f'"{wager}" to optional_wagers, or remove {wager}_paytable'
                )
        if self.ante_min_cents > self.ante_max_cents:
            raise ValueError(
                f"ante_min_cents ({self.ante_min_cents}) is above ante_max_cents ({self.ante_max_cents}): swap them"
            )
        problem = limits_problem(self.wager_limits, self.optional_wagers, self.ante_limits()) or (
            self.deck_change_problem("683a.3(c)", self.dealing_method)
        )
        if problem is not None:
            raise ValueError(problem)
        if self.adjacent_boxes > self.seats:
            raise ValueError(f"adjacent_boxes ({self.adjacent_boxes}) exceeds seats ({self.seats}): lower it")
        floor = payout_limit_floor(self.ante_min_cents)
        if self.payout_limit_cents is not None and self.payout_limit_cents < floor:
            raise ValueError(
                f"payout_limit_cents = {self.payout_limit_cents} is below the 683a.12(f) floor of "
                f"{floor} for ante_min_cents = {self.ante_min_cents}: raise it to at least {floor} "
                "or leave it out"
            )
        return self

    def ante_limits(self) -> Limits:
        return (self.ante_min_cents, self.ante_max_cents)

    def optional_offers(self) -> list[Offer]:
        """The optional wagers offered, each with the subsection that offers it and its posted limits."""
        return [
            Offer(w, WAGER_RULES[w], *resolve(self.wager_limits, w, self.ante_limits()))
            for w in OPTIONAL_WAGERS
            if w in self.optional_wagers
        ]

    def optional_letters(self) -> dict[str, str | None]:
        """Each optional wager's <wager>_paytable letter, None where the Rules Submission selected none."""
        return {
            "pocket_bonus": self.pocket_bonus_paytable,
            "board_bonus": self.board_bonus_paytable,
            "lo_ball": self.lo_ball_paytable,
            "all_six_bonus": self.all_six_bonus_paytable,
        }

    def paytable(self, wager: str) -> ChapterPaytable:
        """The table this Rules Submission selected for a wager ("ante" covers the Raise Wagers too)."""
        if wager == "ante" or wager in RAISES:
            return PAYTABLES["ante"][self.ante_paytable]
        letter = self.optional_letters().get(wager)
        if letter is None:
            raise KeyError(f"the Rules Submission selects no paytable for {wager}: offer it with its {wager}_paytable")
        return PAYTABLES[wager][letter]
