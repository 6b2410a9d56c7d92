"""Chapter 655a: the chapter's seats, cards, streets and wagers, and the certificate holder's Rules-Submission
choices, the [game] table of a Mississippi Stud config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from controller.core.money import wager_field
from controller.core.settlement import ChapterRules
from controller.games.mississippi_stud.paytables import ENVY_BONUS

CHAPTER = "655a"
NAME = "Mississippi Stud"
MAX_SEATS = 6  # 655a.2(a)
PLAYER_CARDS = 2  # 655a.10(b)
COMMUNITY_CARDS = 3  # 655a.10(c)
SIX_CARD_BONUS_CARDS = 4  # 655a.10(c)
STREET_MULTIPLES = (1, 2, 3)  # 655a.11(b), (d), (f)


@dataclass(frozen=True, slots=True)
class Street:
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
    "street_3": "655a.11(b)",
    "street_4": "655a.11(d)",
    "street_5": "655a.11(f)",
}


class MississippiStudRules(ChapterRules):
    """Chapter 655a options from the certificate holder's Rules Submission."""

    chapter: Literal["655a"]
    seats: int = Field(6, ge=1, le=6, description="betting positions, at most six (655a.2(a))")
    dealing_method: Literal["automated_shoe", "manual_shoe", "hand"] = Field(
        "automated_shoe",
        description="655a.10 automated dealing shoe, 655a.8 manual dealing shoe with a card "
        "reader, or 655a.9 from the hand (needs a card-reading shuffler)",
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
    # Table procedure (read by the round engine, controller.engine.spec.TableOptions).
    decks: Literal["one_deck", "two_decks"] = Field(
        "one_deck",
        description="655a.3(a) one deck and a cover card, or 655a.3(b) two decks alternating every "
        "round (automated shuffler only)",
    )
    cards_preinspected: bool = Field(
        True,
        description="decks arrive preinspected and reshuffled under 603a.16(u)/(v) (655a.4(e)); false: the "
        "dealer inspects at opening and the floorperson verifies (655a.4(a))",
    )
    shuffler_counts: bool = Field(
        True,
        description="the automated shuffler counts 52 cards after each shuffle (655a.5(b)); false: the "
        "dealer counts the stub every stub_count_every rounds (655a.8(f), 9(d), 10(d))",
    )
    stub_count_every: int = Field(5, ge=1, le=5, description="rounds between stub counts, at most 5 (655a.8(f))")
    deck_change_hours: float | None = Field(
        None,
        gt=0,
        description="change the decks after this many hours; default 4 dealt by hand, 8 from a shoe "
        "(655a.3(c)); a longer time is refused",
    )
    idle_inspection_minutes: int | None = Field(
        30,
        gt=0,
        description="no gaming activity this long: the cards are inspected again (655a.5(f)); "
        "leave out or null to turn off",
    )
    abandoned_wagers: Literal["lose", "hold"] = Field(
        "lose", description="wagers of a player who leaves during a round: treated as losing or held (655a.7(b))"
    )
    fallback_dealing_method: Literal["automated_shoe", "manual_shoe", "hand"] | None = Field(
        "manual_shoe",
        description="the dealing method once the shoe (or the shuffler, dealing from the hand) is "
        "marked out of order (655a.13(g)); null: none, the table waits for the device",
    )

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
        limit = 4 if self.dealing_method == "hand" else 8
        if self.deck_change_hours is not None and self.deck_change_hours > limit:
            raise ValueError(
                f"deck_change_hours = {self.deck_change_hours:g}: 655a.3(c) changes the decks at least "
                f"every {limit} hours dealing by {self.dealing_method}; use {limit} or less"
            )
        limits = (
            ("ante", self.ante_min_cents, self.ante_max_cents),
            ("three_card_bonus", self.three_card_bonus_min_cents, self.three_card_bonus_max_cents),
            ("six_card_bonus", self.six_card_bonus_min_cents, self.six_card_bonus_max_cents),
        )
        for name, lo, hi in limits:
            if lo > hi:
                raise ValueError(f"{name}_min_cents ({lo}) is above {name}_max_cents ({hi}): swap them")
        return self
