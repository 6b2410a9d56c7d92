"""Chapter 684a: the certificate holder's Rules-Submission choices, the [game] table of a chapter 684a config.

Every rule the available text does not fix is required, and a config that leaves one out is refused with a message
naming the setting and how to supply it (REQUIRED).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from controller.core.cards import RANKS, rank_value
from controller.core.rankings import Five, FiveCardHand, Six
from controller.core.settlement import ChapterRules
from controller.games.limits import WagerLimit, limits_problem
from controller.games.partial import check_odds_table, odds_text, posted_limits, required_settings
from controller.games.procedure import StubCounting

CHAPTER = "684a"
NAME = "Chapter 684a (game name not in the available text)"
FIVE_CLASSES: tuple[str, ...] = tuple(c.name.lower() for c in Five)
SIX_CLASSES: tuple[str, ...] = tuple(c.name.lower() for c in Six)
MAIN = ("ante", "odds", "raise")
OPTIONAL = ("four_card_bonus", "prime", "all_six")
PLAYER_CARDS = 5
# The subsection that makes or defines each wager; the settling subsections (684a.11, 684a.12) are not available.
WAGER_RULE = {
    "ante": "684a.1",
    "odds": "684a.1",
    "raise": "684a.1",
    "four_card_bonus": "684a.1",
    "prime": "684a.1",
    "all_six": "684a.1",
}

REQUIRED: dict[str, str] = {
    "dealer_qualifies": "684a.11 is not available: give the lowest dealer hand that qualifies, e.g. "
    'dealer_qualifies = { min_class = "high_card", high_cards = ["A", "K"] } for ace-king',
    "raise_multiples": "684a.7 is not available: list the Raise Wager amounts allowed, as multiples of the Ante, "
    "e.g. raise_multiples = [2]",
    "ante_odds": "684a.12 is not available: give the Ante Wager's odds when the player beats a qualified dealer, "
    'e.g. ante_odds = "1 to 1"',
    "raise_odds": "684a.12 is not available: give the Raise Wager's odds when the player beats a qualified dealer, "
    'e.g. raise_odds = "1 to 1"',
    "dealer_not_qualified": "684a.11 is not available: say what the Ante, Raise and Odds Wagers do when the dealer "
    'does not qualify, e.g. dealer_not_qualified = { ante = "win", raise = "push", '
    'odds = "push" }',
    "odds_paytable": "684a.12 is not available: give the Odds Wager's odds for each five-card class when the player "
    "beats the dealer, a row for every class from high_card to royal_flush",
    "odds_when_player_loses": "684a.11 is not available: say what the Odds Wager does when the player loses to the "
    'dealer, odds_when_player_loses = "lose" or "push"',
    "folded_optional_wagers": "684a.11 is not available: say whether a folded player's optional wagers are still "
    'settled, folded_optional_wagers = "settled" or "collected"',
}


def _odds_table(table: dict[str, str], known: Sequence[str], name: str) -> None:
    check_odds_table(table, known, name)
    if not table:
        raise ValueError(f"{name} is empty: give its rows, or leave it out to not offer the wager")


class DealerQualifies(BaseModel):
    """The lowest dealer hand that qualifies: a class, and within it the highest cards needed (compared in the
    order rankings.best_five ranks the class's cards: a pair's rank first, then kickers)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    min_class: str = Field(description="a five-card class, e.g. high_card or pair")
    high_cards: list[str] = Field(
        description='ranks the hand must reach within min_class, e.g. ["A", "K"]; [] for any hand of the class'
    )

    @field_validator("min_class")
    @classmethod
    def _cls(cls, v: str) -> str:
        if v not in FIVE_CLASSES:
            raise ValueError(f"{v!r} is not a five-card class: use one of {', '.join(FIVE_CLASSES)}")
        return v

    @field_validator("high_cards")
    @classmethod
    def _ranks(cls, v: list[str]) -> list[str]:
        bad = [r for r in v if len(r) != 1 or r.upper() not in RANKS]
        if bad:
            raise ValueError(f"high_cards {bad} are not ranks: use {', '.join(RANKS)}")
        return [r.upper() for r in v]

    def met_by(self, hand: FiveCardHand) -> bool:
        need = Five[self.min_class.upper()]
        if hand.cls != need:
            return hand.cls > need
        return hand.tiebreak[: len(self.high_cards)] >= tuple(rank_value(r + "c") for r in self.high_cards)


class DealerNotQualified(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    ante: Literal["win", "push"]
    raise_: Literal["win", "push"] = Field(alias="raise")
    odds: Literal["push", "paytable"]


class Chapter684aRules(ChapterRules, StubCounting):
    """Chapter 684a options from the certificate holder's Rules Submission (601a.2). Every rule the available text
    does not fix is required; each optional wager is offered only with its table and formation rule. The stub count
    without a counting shuffler (684a.10(d)-(f)) comes from controller.games.procedure; the other procedure
    sections of 684a are not available, so the engine's defaults stand for them."""

    chapter: Literal["684a"]
    seats: int = Field(7, ge=1, le=7, description="betting positions at the table")
    dealer_qualifies: DealerQualifies
    raise_multiples: list[int] = Field(description="allowed Raise Wagers as multiples of the Ante")
    ante_odds: str
    raise_odds: str
    dealer_not_qualified: DealerNotQualified
    odds_paytable: dict[str, str] = Field(description="five-card class -> odds of the Odds Wager")
    odds_when_player_loses: Literal["lose", "push"]
    folded_optional_wagers: Literal["settled", "collected"]
    four_card_bonus_paytable: dict[str, str] | None = None
    four_card_bonus_hand: str | None = None
    prime_paytable: dict[str, str] | None = Field(None, description="{ same_color = odds }; leave out to not offer")
    prime_hand: str | None = Field(None, description="how the Prime hand is formed: all_five_same_color")
    all_six_paytable: dict[str, str] | None = Field(None, description="rankings.Six class -> odds")
    all_six_hand: str | None = Field(None, description="how the All-Six hand is formed: player_five_and_all_six_card")
    wager_limits: dict[str, WagerLimit] = Field(
        default_factory=dict,
        description="each wager's posted minimum and maximum in cents, e.g. ante = { min_cents = 500, max_cents = "
        "10000 }, all_six = { min_cents = 100 }; the Ante has no limit where none is posted, the Odds and the "
        "optional wagers take the Ante's",
    )

    _required = model_validator(mode="before")(required_settings(REQUIRED))

    _check_odds = field_validator("ante_odds", "raise_odds")(odds_text)

    @field_validator("raise_multiples")
    @classmethod
    def _multiples(cls, v: list[int]) -> list[int]:
        if not v or any(m <= 0 for m in v) or len(set(v)) != len(v):
            raise ValueError(f"raise_multiples {v} must list distinct positive multiples of the Ante, e.g. [2]")
        return v

    @model_validator(mode="after")
    def _tables(self) -> Chapter684aRules:
        _odds_table(self.odds_paytable, FIVE_CLASSES, "odds_paytable")
        absent = [c for c in FIVE_CLASSES if c not in self.odds_paytable]
        if absent:
            raise ValueError(
                f"odds_paytable has no row for {absent}: a player who beats the dealer can hold any "
                "class, so give every class from high_card to royal_flush its odds"
            )
        if self.four_card_bonus_paytable is not None or self.four_card_bonus_hand is not None:
            raise ValueError(
                "four_card_bonus_paytable: the Four Card Bonus Wager cannot be offered: neither the "
                "available text of 684a nor this controller defines four-card hand classes or how the "
                "Four Card Bonus hand is formed; remove four_card_bonus_paytable and four_card_bonus_hand"
            )
        self._offer("prime", self.prime_paytable, self.prime_hand, "all_five_same_color", ("same_color",))
        self._offer("all_six", self.all_six_paytable, self.all_six_hand, "player_five_and_all_six_card", SIX_CLASSES)
        offered = ["ante", "odds", *(w for w in OPTIONAL if self.offers(w))]
        problem = limits_problem(self.wager_limits, offered, self.posted_limits())
        if problem is not None:
            raise ValueError(problem)
        return self

    def posted_limits(self) -> dict[str, tuple[int, int]]:
        """Each wager's posted (min, max) in cents, as `wager_limits` gives them (controller.games.partial)."""
        return posted_limits(self.wager_limits, ("ante", "odds", *OPTIONAL))

    def _offer(
        self, w: str, table: dict[str, str] | None, hand: str | None, implemented: str, known: Sequence[str]
    ) -> None:
        if table is None:
            if hand is not None:
                raise ValueError(f"{w}_hand belongs to the {w} wager: add {w}_paytable to offer it, or remove it")
            return
        if hand is None:
            raise ValueError(
                f"{w}_hand is required with {w}_paytable: 684a does not say how the hand is formed; "
                f'"{implemented}" is the formation implemented'
            )
        if hand != implemented:
            raise ValueError(f'{w}_hand = {hand!r} is not implemented: set "{implemented}" or do not offer the wager')
        _odds_table(table, known, f"{w}_paytable")

    def offers(self, wager: str) -> bool:
        return {
            "four_card_bonus": self.four_card_bonus_paytable,
            "prime": self.prime_paytable,
            "all_six": self.all_six_paytable,
        }[wager] is not None
