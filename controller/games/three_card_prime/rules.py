"""Chapter 679a: the certificate holder's Rules-Submission choices, the [game] table of a Three Card Prime config.

Every rule the available text does not fix is required, and a config that leaves one undefined is refused with a
message naming the setting and how to supply it (REQUIRED).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from controller.core.cards import rank_value
from controller.core.rankings import Six, Three, rank_three
from controller.core.settlement import ChapterRules
from controller.games.limits import WagerLimit, limits_problem
from controller.games.partial import check_odds_table, odds_text, posted_limits, required_settings
from controller.games.procedure import TableProcedure

CHAPTER = "679a"
NAME = "Three Card Prime"
THREE_CLASSES: tuple[str, ...] = tuple(c.name.lower() for c in Three)
SIX_CLASSES: tuple[str, ...] = tuple(c.name.lower() for c in Six)
WAGERS = ("ante", "play", "prime", "pair_bonus", "all_six")
OPTIONAL = ("prime", "pair_bonus", "all_six")
PLAYER_CARDS = 3
QUEEN = 12

# The subsection that makes each wager; the settling subsection (679a.11) is not available.
WAGER_RULE = {
    "ante": "679a.7(d)(1)",
    "play": "679a.7(d)(1)",
    "prime": "679a.7(d)(2)",
    "pair_bonus": "679a.7(d)(3)",
    "all_six": "679a.1",
}

# Each rule the text leaves open, with why it is needed and how to supply it: the error a config gets when it
# leaves one out, so the operator reads the fix in the message rather than in this file.
REQUIRED: dict[str, str] = {
    "hand_order": "679a.6 (rankings) is not available: rank the three-card classes from highest to lowest as the "
    'Rules Submission does, e.g. hand_order = ["mini_royal", "straight_flush", "three_of_a_kind", '
    '"straight", "flush", "pair", "high_card"]',
    "ace_two_three": "679a.6 is not available: say where an A-2-3 straight ranks among straights, "
    'ace_two_three = "lowest" (3 high) or "second_highest" (just below A-K-Q)',
    "ante_odds": "679a.12 (payouts) is not available: give the Ante Wager's odds when the player beats a qualified "
    'dealer, e.g. ante_odds = "1 to 1"',
    "play_odds": "679a.12 is not available: give the Play Wager's odds when the player beats a qualified dealer, "
    'e.g. play_odds = "1 to 1"',
    "dealer_not_qualified": "679a.11 is not available: say what the Ante and Play Wagers do when the dealer does not "
    'qualify, e.g. dealer_not_qualified = { ante = "win", play = "push" }',
    "folded_optional_wagers": "679a.11 is not available: say whether a folded player's Prime, Pair Bonus and All-Six "
    'Bonus Wagers are still settled, folded_optional_wagers = "settled" or "collected"',
}


class DealerNotQualified(BaseModel):
    """What the Ante and Play Wagers do when the dealer's hand is below queen high (679a.1)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    ante: Literal["win", "push"]
    play: Literal["win", "push"]


class ThreeCardPrimeRules(ChapterRules, TableProcedure):
    """Chapter 679a options from the certificate holder's Rules Submission (601a.2). Every rule the available text
    does not fix is required; each optional wager is offered only with its table. The table's procedure comes from
    controller.games.procedure (the stub count of 679a.9(d)-(f); decks, inspections and deck changes as the Rules
    Submission says, 679a.3 to 679a.5 not being available); dealing from the hand is the only published method
    (679a.9), so there is no fallback dealing method to configure."""

    chapter: Literal["679a"]
    seats: int = Field(7, ge=1, le=7, description="betting positions at the table")
    hand_order: list[str] = Field(description="three-card classes, highest first (679a.6 not available)")
    ace_two_three: Literal["lowest", "second_highest"] = Field(description="where an A-2-3 straight ranks")
    ante_odds: str = Field(description="Ante Wager odds against a qualified dealer")
    play_odds: str = Field(description="Play Wager odds against a qualified dealer")
    dealer_not_qualified: DealerNotQualified
    folded_optional_wagers: Literal["settled", "collected"] = Field(
        description="whether a folded player's optional wagers are settled or collected with the Ante"
    )
    prime_paytable: dict[str, str] | None = Field(
        None, description="Prime Wager table (679a.7(d)(2)); leave out to not offer the wager"
    )
    pair_bonus_paytable: dict[str, str] | None = Field(
        None, description="Pair Bonus table, a row for each class from pair up (679a.7(d)(3)); leave out to not offer"
    )
    pair_bonus_layout: Literal["fourth_card", "community_card"] | None = Field(
        None, description="679a.9(b) a fourth card to each player, or 679a.9(g) one Pair Bonus community card"
    )
    pair_bonus_hand: str | None = Field(None, description="how the Pair Bonus hand is formed: best_three_of_four")
    bad_beat_paytable: dict[str, str] | None = Field(
        None, description="Bad Beat Bonus table on the Play Wager (679a.1); leave out to not pay it"
    )
    bad_beat_minimum: Literal["flush", "straight"] | None = Field(
        None, description="the lowest class the Bad Beat Bonus pays on: flush or straight, as the table selected"
    )
    all_six_paytable: dict[str, str] | None = Field(
        None, description="All-Six Bonus table, rankings.Six class -> odds (679a.1); leave out to not offer"
    )
    wager_limits: dict[str, WagerLimit] = Field(
        default_factory=dict,
        description="each wager's posted minimum and maximum in cents, e.g. ante = { min_cents = 500, max_cents = "
        "10000 }, pair_bonus = { min_cents = 100 }; the Ante has no limit where none is posted, an optional wager "
        "takes the Ante's",
    )

    _required = model_validator(mode="before")(required_settings(REQUIRED))

    _check_odds = field_validator("ante_odds", "play_odds")(odds_text)

    @field_validator("hand_order")
    @classmethod
    def _order(cls, v: list[str]) -> list[str]:
        if sorted(v) != sorted(THREE_CLASSES):
            repeated = sorted({c for c in v if v.count(c) > 1})
            absent = sorted(set(THREE_CLASSES) - set(v))
            unknown = sorted(set(v) - set(THREE_CLASSES))
            raise ValueError(
                f"hand_order must name each three-card class once (unknown: {unknown}, repeated: "
                f"{repeated}, missing: {absent}): list all of {', '.join(THREE_CLASSES)}, highest first"
            )
        if v[-1] != "high_card":
            raise ValueError(
                "hand_order must end with high_card: 679a.1 qualifies the dealer at queen high or "
                "better, which needs every other class above high card"
            )
        return v

    @model_validator(mode="after")
    def _tables(self) -> ThreeCardPrimeRules:
        if self.prime_paytable is not None:
            if "same_color" not in self.prime_paytable:
                raise ValueError('prime_paytable needs its same_color row (679a.7(d)(2)): add same_color = "N to 1"')
            check_odds_table(self.prime_paytable, ["same_color"], "prime_paytable")
        self._pair_bonus()
        self._bad_beat()
        if self.all_six_paytable is not None:
            check_odds_table(self.all_six_paytable, SIX_CLASSES, "all_six_paytable")
            if not self.all_six_paytable:
                raise ValueError("all_six_paytable is empty: give its rows or leave it out to not offer the wager")
        offered = ["ante", *(w for w in OPTIONAL if self.offers(w))]
        problem = limits_problem(self.wager_limits, offered, self.posted_limits()) or self.deck_change_problem(
            "the deck change (679a.3 is not available; 4 hours dealt by hand as the other chapters' .3(c))", "hand"
        )
        if problem is not None:
            raise ValueError(problem)
        return self

    def _pair_bonus(self) -> None:
        settings = (self.pair_bonus_layout, self.pair_bonus_hand)
        if self.pair_bonus_paytable is None:
            if any(x is not None for x in settings):
                raise ValueError(
                    "pair_bonus_layout and pair_bonus_hand belong to the Pair Bonus Wager: add "
                    "pair_bonus_paytable to offer it, or remove them"
                )
            return
        if self.pair_bonus_layout is None:
            raise ValueError(
                'pair_bonus_layout is required with pair_bonus_paytable: "fourth_card" (679a.9(b)) or '
                '"community_card" (679a.9(g), only if the Rules Submission says so)'
            )
        if self.pair_bonus_hand is None:
            raise ValueError(
                "pair_bonus_hand is required with pair_bonus_paytable: how the Rules Submission forms "
                'the Pair Bonus hand; "best_three_of_four" is the one implemented'
            )
        if self.pair_bonus_hand != "best_three_of_four":
            raise ValueError(
                f"pair_bonus_hand = {self.pair_bonus_hand!r} is not implemented: the controller forms "
                'the Pair Bonus hand only as "best_three_of_four" (the player\'s three cards and the '
                "fourth or community card); set that or do not offer the wager"
            )
        check_odds_table(self.pair_bonus_paytable, THREE_CLASSES, "pair_bonus_paytable")
        needed = self.hand_order[: self.hand_order.index("pair") + 1]
        self._rows("pair_bonus_paytable", self.pair_bonus_paytable, needed, "679a.7(d)(3) pays a pair or better")

    def _bad_beat(self) -> None:
        if self.bad_beat_paytable is None:
            if self.bad_beat_minimum is not None:
                raise ValueError("bad_beat_minimum belongs to the Bad Beat Bonus: add bad_beat_paytable or remove it")
            return
        if self.bad_beat_minimum is None:
            raise ValueError(
                'bad_beat_minimum is required with bad_beat_paytable: "flush" or "straight", as the '
                "payout table selected (679a.1)"
            )
        check_odds_table(self.bad_beat_paytable, THREE_CLASSES, "bad_beat_paytable")
        needed = self.hand_order[: self.hand_order.index(self.bad_beat_minimum) + 1]
        self._rows(
            "bad_beat_paytable",
            self.bad_beat_paytable,
            needed,
            f"679a.1 pays a {self.bad_beat_minimum} or higher that loses",
        )

    def _rows(self, name: str, table: dict[str, str], needed: list[str], why: str) -> None:
        absent = [c for c in needed if c not in table]
        extra = sorted(set(table) - set(needed))
        if absent:
            raise ValueError(
                f"{name} has no row for {absent}: {why}, so give each class from the lowest paying one up its odds"
            )
        if extra:
            raise ValueError(
                f"{name} has rows for {extra}, which rank below what {why.split(' pays ')[0]} pays: remove them"
            )

    def posted_limits(self) -> dict[str, tuple[int, int]]:
        """Each wager's posted (min, max) in cents, as `wager_limits` gives them (controller.games.partial)."""
        return posted_limits(self.wager_limits, ("ante", *OPTIONAL))

    def offers(self, wager: str) -> bool:
        return {"prime": self.prime_paytable, "pair_bonus": self.pair_bonus_paytable, "all_six": self.all_six_paytable}[
            wager
        ] is not None

    def key(self, cards: Sequence[str]) -> tuple[int, tuple[int, ...]]:
        """Sort key of a three-card hand: higher is better. Class by hand_order, then ranks high to low with a
        pair's rank ahead of its kicker; an A-2-3 straight as `ace_two_three` says."""
        cls = rank_three(cards).name.lower()
        ranks = sorted((rank_value(c) for c in cards), reverse=True)
        if cls in ("straight", "straight_flush") and ranks == [14, 3, 2]:
            ranks = [3, 2, 1] if self.ace_two_three == "lowest" else [14, 13, 11]  # between A-K-Q and K-Q-J
        elif cls == "pair":
            paired = ranks[1]  # of three sorted ranks with one pair, the middle one is always paired
            ranks = [paired, paired, next(r for r in ranks if r != paired)]
        return len(self.hand_order) - self.hand_order.index(cls), tuple(ranks)
