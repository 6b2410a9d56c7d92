"""Chapter 655a: the chapter's seats, cards, streets and wagers, and the certificate holder's Rules-Submission
choices, the [game] table of a Mississippi Stud config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from controller.core.money import wager_field
from controller.core.settlement import ChapterRules
from controller.engine.spec import Offer
from controller.games.mississippi_stud.paytables import ENVY_BONUS
from controller.games.procedure import DealingChoice

CHAPTER = "655a"
NAME = "Mississippi Stud"
MAX_SEATS = 6  # 655a.2(a)
PLAYER_CARDS = 2  # 655a.10(b)
COMMUNITY_CARDS = 3  # 655a.10(c)
SIX_CARD_BONUS_CARDS = 4  # 655a.10(c)
STREET_MULTIPLES = (1, 2, 3)  # 655a.11(b), (d), (f)


@dataclass(frozen=True, slots=True)
class Street:
    """A street of 655a.11(b)-(g): each player places its Street Wager or folds, then a community card is revealed."""

    spot: str  # the wager station's spot of this street's wager, open after "no more bets"
    name: str
    decide_rule: str  # where the chapter asks for this wager or a fold
    reveal_rule: str  # where the chapter reveals the next community card afterwards


STREETS: tuple[Street, ...] = (
    Street("street_3", "3rd Street", "655a.11(b)", "655a.11(c)"),
    Street("street_4", "4th Street", "655a.11(d)", "655a.11(e)"),
    Street("street_5", "5th Street", "655a.11(f)", "655a.11(g)"),
)

# Each optional wager: the rule that offers it and the rule that settles it.
WAGER_RULES = {
    "ante": "655a.7(d)(1)",
    "progressive": "655a.7(d)(3)",
    "three_card_bonus": "655a.7(d)(4)",
    "six_card_bonus": "655a.7(d)(6)",
    "five_card_hand_bonus": "655a.7(d)(5)",
    "street_3": "655a.11(b)",
    "street_4": "655a.11(d)",
    "street_5": "655a.11(f)",
}


class MississippiStudRules(ChapterRules, DealingChoice):
    """Chapter 655a options from the certificate holder's Rules Submission, with the table's procedure
    (controller.games.procedure: 655a.8 manual shoe, 655a.9 hand or 655a.10 automated shoe, stub counts, decks)."""

    chapter: Literal["655a"]
    seats: int = Field(6, ge=1, le=6, description="betting positions, at most six (655a.2(a))")
    adjacent_boxes: int = Field(
        1, ge=1, le=6, description="how many adjacent boxes one player may wager on in a round (655a.7(e))"
    )
    reshuffling_shoe: bool = Field(
        False,
        description="655a.10(g): an automated shoe that reshuffles, dispensing the three community cards "
        "before the players' cards",
    )
    ante_min_cents: int = wager_field(500, "table minimum Ante Wager")
    ante_max_cents: int = wager_field(10_000, "table maximum Ante Wager")
    three_card_bonus_paytable: Literal["A", "B", "C", "D"] | None = Field(
        None, description="655a.12(d) paytable letter; leave out to not offer the wager"
    )
    three_card_bonus_min_cents: int = wager_field(100, "table minimum Three Card Bonus Wager")
    three_card_bonus_max_cents: int = wager_field(2_500, "table maximum Three Card Bonus Wager")
    six_card_bonus_paytable: Literal["A", "B", "C", "D", "E"] | None = Field(
        None, description="655a.12(f) paytable letter; leave out to not offer the wager"
    )
    six_card_bonus_min_cents: int = wager_field(100, "table minimum Six Card Bonus Wager")
    six_card_bonus_max_cents: int = wager_field(2_500, "table maximum Six Card Bonus Wager")
    progressive_paytable: Literal["A", "B", "C", "D"] | None = Field(
        None, description="655a.12(c)(1) paytable letter of the Progressive Payout Wager; leave out to not offer it"
    )
    progressive_wager_cents: int = wager_field(
        100, "the Progressive Payout Wager amount: 100 or 500, as 655a.12(c)(5) schedules envy"
    )
    five_card_hand_bonus: bool = Field(False, description="offer the Five Card Hand Bonus Wager (655a.7(d)(5))")
    five_card_hand_bonus_wager_cents: int = wager_field(100, "the Five Card Hand Bonus Wager amount")
    magic_card_bonus: bool = Field(False, description="pay the Magic Card Bonus of 655a.12(e)(3)")
    lucky_bonus: bool = Field(False, description="pay the Lucky Bonus of 655a.12(e)(3)")

    def optional_offers(self) -> list[Offer]:
        """The optional wagers taken before "no more bets", each with the subsection that offers it and its limits."""
        out: list[Offer] = []
        if self.three_card_bonus_paytable:
            lo, hi = self.three_card_bonus_min_cents, self.three_card_bonus_max_cents
            out.append(Offer("three_card_bonus", WAGER_RULES["three_card_bonus"], lo, hi))
        if self.progressive_paytable:
            # 655a.7(d)(3): one size, the Progressive Payout Wager the 655a.12(c)(3) figures are "for 1" of.
            size = self.progressive_wager_cents
            out.append(Offer("progressive", WAGER_RULES["progressive"], size, size))
        if self.six_card_bonus_paytable:
            lo, hi = self.six_card_bonus_min_cents, self.six_card_bonus_max_cents
            out.append(Offer("six_card_bonus", WAGER_RULES["six_card_bonus"], lo, hi))
        if self.five_card_hand_bonus:
            # 655a.7(d)(5): made at the seat's electronic wagering terminal from its game account, one size (the
            # 655a.12(e)(4) seed is "for 1" of it).
            size = self.five_card_hand_bonus_wager_cents
            out.append(Offer("five_card_hand_bonus", WAGER_RULES["five_card_hand_bonus"], size, size))
        return out

    @model_validator(mode="after")
    def _ranges(self) -> MississippiStudRules:
        if self.reshuffling_shoe and self.dealing_method != "automated_shoe":
            raise ValueError(
                "reshuffling_shoe is an automated dealing shoe (655a.10(g)): set "
                'dealing_method = "automated_shoe" or reshuffling_shoe = false'
            )
        if self.progressive_paytable and self.progressive_wager_cents not in ENVY_BONUS:
            raise ValueError(
                f"progressive_wager_cents = {self.progressive_wager_cents}: 655a.12(c)(5) gives envy "
                "schedules only for $1 and $5 wagers; use 100 or 500"
            )
        if (self.magic_card_bonus or self.lucky_bonus) and not self.five_card_hand_bonus:
            raise ValueError(
                "magic_card_bonus and lucky_bonus pay on the Five Card Hand Bonus Wager: "
                "set five_card_hand_bonus = true or turn them off"
            )
        if self.adjacent_boxes > self.seats:
            raise ValueError(f"adjacent_boxes ({self.adjacent_boxes}) exceeds seats ({self.seats}): lower it")
        problem = self.deck_change_problem("655a.3(c)", self.dealing_method)
        if problem is not None:
            raise ValueError(problem)
        limits = (
            ("ante", self.ante_min_cents, self.ante_max_cents),
            ("three_card_bonus", self.three_card_bonus_min_cents, self.three_card_bonus_max_cents),
            ("six_card_bonus", self.six_card_bonus_min_cents, self.six_card_bonus_max_cents),
        )
        for name, lo, hi in limits:
            if lo > hi:
                raise ValueError(f"{name}_min_cents ({lo}) is above {name}_max_cents ({hi}): swap them")
        return self
