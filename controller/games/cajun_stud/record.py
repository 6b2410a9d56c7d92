"""Chapter 683a: a recorded round of Cajun Stud (the input of `tablectl settle`), enough to settle every wager again
for a dispute."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from controller.core.money import Cents
from controller.core.settlement import Card, RoundRecord, SeatRecord, check_round_cards, parse_cards_field
from controller.games.cajun_stud.rankings import ALL_SIX_CARDS, BOARD_CARDS, POCKET_CARDS
from controller.games.cajun_stud.rules import (
    DECISION_RULES,
    MAX_SEATS,
    RAISE_MULTIPLES,
    RAISES,
    READS_PLAYER_CARDS,
    WAGERS,
)

Decision = Literal["raise", "fold"]
NOT_A_ROUND = (
    "is not a round of play: give 'raise' or 'fold' for each of the three decisions of 683a.11(b), (d), (f), "
    "stopping at the first 'fold' (only a round voided by an exposed community card, community_exposed, stops "
    "before the three)"
)


class CajunStudSeat(SeatRecord):
    """One box: the player's two cards (683a.8(c)), the wagers by name (see WAGERS), and what the player
    did at each of the three raise decisions (683a.11(b), (d), (f))."""

    seat: int = Field(ge=1, le=MAX_SEATS, description="betting position, 1 farthest to the dealer's left")
    cards: list[Card] = Field(
        default_factory=list,
        description="the player's two cards (683a.8(c)); may be [] only for a seat that folded without a Pocket "
        "Bonus, Lo Ball or All-Six Bonus Wager, whose cards 683a.11(b) collects unread",
    )
    wagers: dict[str, Cents] = Field(
        default_factory=dict,
        description="cents by wager: ante, raise_1, raise_2, raise_3, pocket_bonus, board_bonus, lo_ball, "
        "all_six_bonus; a wager not placed is left out (0 counts as not placed)",
    )
    decisions: list[Decision] = Field(
        description="the player's answer at each raise decision in order, 'raise' or 'fold', ending at a fold "
        "(683a.11(b), (d), (f)); ['raise', 'raise', 'raise'] for a player who stayed in"
    )

    _cards = field_validator("cards", mode="before")(parse_cards_field)

    def placed(self, wager: str) -> Cents:
        return self.wagers.get(wager, 0)

    @property
    def decided(self) -> bool:
        """The player made all three Raise Wagers or folded: the round of play ran its course for this box."""
        return "fold" in self.decisions or len(self.decisions) == len(RAISES)

    @property
    def folded_at(self) -> int | None:
        """1, 2 or 3: the decision at which the player folded; None if he made all three Raise Wagers."""
        return self.decisions.index("fold") + 1 if "fold" in self.decisions else None

    @model_validator(mode="after")
    def _consistent(self) -> CajunStudSeat:
        where = f"seat {self.seat}"
        unknown = sorted(set(self.wagers) - set(WAGERS))
        if unknown:
            raise ValueError(f"{where}: wagers has unknown wager(s) {', '.join(unknown)}: use {', '.join(WAGERS)}")
        ante = self.placed("ante")
        if ante <= 0:
            raise ValueError(
                f"{where}: wagers.ante is missing: 683a.7(d)(1) requires an Ante Wager to play "
                "(683a.8(c) deals cards only to players who placed one); add wagers.ante"
            )
        d = self.decisions
        if len(d) > len(RAISES) or ("fold" in d and d.index("fold") != len(d) - 1):
            raise ValueError(f"{where}: decisions {d} {NOT_A_ROUND}")
        for k, name in enumerate(RAISES):
            made = k < len(d) and d[k] == "raise"
            amount = self.placed(name)
            allowed = ", ".join(str(m * ante) for m in RAISE_MULTIPLES)
            if made and amount not in [m * ante for m in RAISE_MULTIPLES]:
                raise ValueError(
                    f"{where}: wagers.{name} = {amount} but {DECISION_RULES[k]} allows a Raise Wager "
                    f"of one, two or three times the Ante ({allowed}): correct wagers.{name}"
                )
            if not made and amount:
                raise ValueError(
                    f"{where}: wagers.{name} = {amount} but decisions does not raise at decision {k + 1}"
                    f" ({DECISION_RULES[k]}): remove wagers.{name} or correct decisions"
                )
        needs_cards = self.folded_at is None or any(self.placed(w) for w in READS_PLAYER_CARDS)
        if len(self.cards) != POCKET_CARDS and (needs_cards or self.cards):
            raise ValueError(
                f"{where}: cards has {len(self.cards)} card(s); 683a.8(c) deals {POCKET_CARDS} to each "
                "player: give both"
            )
        return self


class CajunStudRound(RoundRecord):
    """A recorded round of Cajun Stud: enough to settle every wager again for a dispute."""

    chapter: Literal["683a"] = Field(description="683a: this record is a Cajun Stud round")
    seats: list[CajunStudSeat] = Field(description="every box that placed an Ante Wager, any order")
    community_cards: list[Card] = Field(description="the three community cards (683a.8(d)), in dealing order")
    all_six_bonus_cards: list[Card] = Field(
        default_factory=list,
        description="the four All-Six Bonus cards (683a.8(c)); dealt, and required, only when a seat placed an "
        "All-Six Bonus Wager",
    )
    community_exposed: bool = Field(
        False,
        description="a community card was exposed before the dealer revealed it (683a.13(d)): every hand is void and "
        "its Ante and Raise Wagers returned, the optional wagers settled under 683a.11(i); the decisions stop "
        "where the exposure stopped the round",
    )

    _community = field_validator("community_cards", "all_six_bonus_cards", mode="before")(parse_cards_field)

    @model_validator(mode="after")
    def _consistent(self) -> CajunStudRound:
        numbers = [s.seat for s in self.seats]
        dup = sorted({n for n in numbers if numbers.count(n) > 1})
        if dup:
            raise ValueError(f"seats lists seat(s) {dup} more than once: give each box once")
        undecided = next((s for s in self.seats if not s.decided), None)
        if undecided is not None and not self.community_exposed:
            raise ValueError(f"seat {undecided.seat}: decisions {undecided.decisions} {NOT_A_ROUND}")
        if len(self.community_cards) != BOARD_CARDS:
            raise ValueError(
                f"community_cards has {len(self.community_cards)} card(s); 683a.8(d) deals "
                f"{BOARD_CARDS}: give all three"
            )
        any_all_six = any(s.placed("all_six_bonus") for s in self.seats)
        if any_all_six and len(self.all_six_bonus_cards) != ALL_SIX_CARDS:
            raise ValueError(
                f"all_six_bonus_cards has {len(self.all_six_bonus_cards)} card(s); with an All-Six "
                f"Bonus Wager placed 683a.8(c) deals {ALL_SIX_CARDS}: give all four"
            )
        if not any_all_six and self.all_six_bonus_cards:
            raise ValueError(
                "all_six_bonus_cards are given but no seat placed an All-Six Bonus Wager, and 683a.8(c) "
                "deals them only then: remove all_six_bonus_cards or add the wager"
            )
        check_round_cards([*(s.cards for s in self.seats), self.community_cards, self.all_six_bonus_cards])
        return self
