"""Chapter 643a: a recorded round (the input of `tablectl settle`) and what it must satisfy under the rules.

What can be checked without the rules is checked by the models (ValidationError); what needs the rules is checked by
`check_round` (SettlementError). Every message names the field, the problem and the fix.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from controller.core.cards import parse_card
from controller.core.money import Cents
from controller.core.settlement import (
    Card,
    RoundRecord,
    SeatRecord,
    SettlementError,
    check_round_cards,
    parse_cards_field,
)
from controller.games.boxes import check_boxes
from controller.games.let_it_ride.rules import (
    COMMUNITY_CARDS,
    LET_IT_RIDE_WAGERS,
    MAX_SEATS,
    METER_LEVELS,
    PLAYER_CARDS,
    WAGERS,
    LetItRideRules,
)
from controller.games.limits import check_offered_limits


class LetItRideSeat(SeatRecord):
    """One box: the player's three cards, its wagers, and the two Let It Ride decisions."""

    seat: int = Field(ge=1, le=MAX_SEATS, description="the betting position, 1 to 7 (643a.2(a))")
    player: str | None = Field(
        None, description="who holds the box; boxes with one name are one player's (643a.7(k)), no name: own player"
    )
    cards: list[Card] = Field(default_factory=list, description="the three cards dealt to the box (643a.8(d))")
    wagers: dict[str, Cents] = Field(
        default_factory=dict,
        description=f"cents by wager, keys among {', '.join(WAGERS)}; bet_1, bet_2 and "
        "bet_3 are required and equal (643a.7(d))",
    )
    bet_1_withdrawn: bool = Field(False, description="643a.11(b)(2): the player withdrew Bet Number 1")
    bet_2_withdrawn: bool = Field(False, description="643a.11(d)(2): the player withdrew Bet Number 2")

    @field_validator("cards")
    @classmethod
    def _three(cls, v: list[Card]) -> list[Card]:
        if len(v) != PLAYER_CARDS:
            raise ValueError(
                f"{len(v)} card(s) where 643a.8(d) deals each player {PLAYER_CARDS}: record the "
                "box's three cards (a misdeal voids the round under 643a.13(c) and is not settled)"
            )
        return v

    @field_validator("wagers")
    @classmethod
    def _bets(cls, v: dict[str, Cents]) -> dict[str, Cents]:
        unknown = sorted(set(v) - set(WAGERS))
        if unknown:
            raise ValueError(f"unknown wager(s) {unknown}: use {', '.join(WAGERS)}")
        missing = [w for w in LET_IT_RIDE_WAGERS if w not in v]
        if missing:
            raise ValueError(f"missing {missing}: 643a.7(d) requires Bet Number 1, 2 and 3 to play a round")
        bets = {v[w] for w in LET_IT_RIDE_WAGERS}
        if len(bets) != 1:
            raise ValueError(
                f"bet_1, bet_2 and bet_3 are {[v[w] for w in LET_IT_RIDE_WAGERS]}: 643a.7(d) "
                "requires three equal wagers; record the amounts placed"
            )
        zero = [w for w, a in v.items() if a == 0]
        if zero:
            raise ValueError(f"{zero} are 0: leave out a wager that was not placed")
        return v


class LetItRideRound(RoundRecord):
    """A recorded round of chapter 643a: boxes, community cards, meters and the table system's draws."""

    chapter: Literal["643a"] = Field(description="selects chapter 643a, Let It Ride Poker")
    round_id: str | None = Field(None, description="the journal's id of the round, if known")
    seats: list[LetItRideSeat] = Field(min_length=1, description="every box that played, any order")
    community: list[Card] = Field(description="the two community cards, first then second (643a.11(c), (e))")
    burned_card: Card | None = Field(
        None,
        description="643a.10(b): the community card an automated dealing shoe's stack discards unseen; "
        "record it when the shoe reports it, so the one-deck check covers it",
    )
    magic_card: Card | None = Field(
        None, description="643a.1 Magic Card Bonus: the card the table game system drew (controller.core.rng)"
    )
    lucky_seat: int | None = Field(
        None, ge=1, le=MAX_SEATS, description="643a.1 Lucky Bonus: the betting position the table game system drew"
    )

    _parse_community = field_validator("community", mode="before")(parse_cards_field)

    @field_validator("burned_card", "magic_card", mode="before")
    @classmethod
    def _card(cls, v: Any) -> Any:
        return parse_card(v) if isinstance(v, str) else v

    @field_validator("community")
    @classmethod
    def _two(cls, v: list[Card]) -> list[Card]:
        if len(v) != COMMUNITY_CARDS:
            raise ValueError(
                f"{len(v)} card(s) where 643a.8(d) deals {COMMUNITY_CARDS} community cards: record "
                "both (a misdeal voids the round under 643a.13(c) and is not settled)"
            )
        return v

    @field_validator("meters")
    @classmethod
    def _levels(cls, v: dict[str, Cents]) -> dict[str, Cents]:
        unknown = sorted(set(v) - set(METER_LEVELS))
        if unknown:
            raise ValueError(f"unknown meter level(s) {unknown}: use {', '.join(METER_LEVELS)}")
        bad = {k: a for k, a in v.items() if a < 0}
        if bad:
            raise ValueError(f"meter values are cents and cannot be negative: {bad}")
        return v

    @model_validator(mode="after")
    def _one_deck(self) -> LetItRideRound:
        numbers = [s.seat for s in self.seats]
        dup = sorted({n for n in numbers if numbers.count(n) > 1})
        if dup:
            raise ValueError(f"seats: seat number(s) {dup} appear more than once: record each box once")
        # The Magic Card is drawn by the table game system, not from the deck: it is left out on purpose.
        extra = [self.burned_card] if self.burned_card else []
        check_round_cards([*(s.cards for s in self.seats), self.community, extra])
        return self


def check_round(rules: LetItRideRules, record: LetItRideRound) -> None:
    """What the record must satisfy under these rules before it can be settled."""
    for i, s in enumerate(record.seats):
        _check_box(rules, f"seats[{i}] (seat {s.seat})", s)
    check_offered_limits(
        rules.optional_offers(), ((f"seats[{i}] (seat {s.seat})", s.wagers) for i, s in enumerate(record.seats))
    )
    check_boxes(((s.seat, s.player) for s in record.seats), rules.boxes_per_player, "643a.7(k)", "boxes_per_player")
    for level in METER_LEVELS:
        if any(level in s.wagers for s in record.seats) and level not in record.meters:
            raise SettlementError(
                f"meters.{level} is missing: a {level} wager was placed and is paid at the "
                "meter amount at the player's turn; record the meter when settlement began"
            )
    _check_draws(rules, record)


def _check_box(rules: LetItRideRules, where: str, s: LetItRideSeat) -> None:
    if s.seat > rules.seats:
        raise SettlementError(f"{where}.seat: the table has {rules.seats} betting positions: fix the seat number")
    for w in s.wagers:
        if not rules.offers(w):
            raise SettlementError(
                f"{where}.wagers.{w}: the rules do not offer this wager; remove it or set {w} = true in the config"
            )
    bet = s.wagers["bet_1"]
    if not rules.bet_min_cents <= bet <= rules.bet_max_cents:
        raise SettlementError(
            f"{where}.wagers.bet_1..bet_3 ({bet}) are outside the table limits "
            f"{rules.bet_min_cents}..{rules.bet_max_cents}: record the amounts accepted"
        )
    fcb = s.wagers.get("five_card_bonus")
    if fcb is not None and fcb != rules.five_card_bonus_wager_cents:
        raise SettlementError(
            f"{where}.wagers.five_card_bonus ({fcb}) is not the accepted Five Card Bonus "
            f"Wager ({rules.five_card_bonus_wager_cents}): 643a.12(b) pays fixed amounts"
        )
    for w, allowed in rules.progressive_wager_sizes().items():
        a = s.wagers.get(w)
        if a is not None and a not in allowed:
            raise SettlementError(
                f"{where}.wagers.{w} ({a}) is not an accepted amount {list(allowed)}: "
                f"record the amount accepted or add it to {w}_wagers_cents"
            )


def _check_draws(rules: LetItRideRules, record: LetItRideRound) -> None:
    """The table game system's draws (643a.1): recorded where the rules pay them, and only there."""
    hand_bonus = any("five_card_hand_bonus" in s.wagers for s in record.seats)
    draws: tuple[tuple[str, object, bool], ...] = (
        ("magic_card", record.magic_card, rules.magic_card_bonus),
        ("lucky_seat", record.lucky_seat, rules.lucky_bonus),
    )
    for draw, value, offered in draws:
        if value is None and offered and hand_bonus:
            raise SettlementError(
                f"{draw} is missing: the rules pay the {draw.replace('_', ' ')} bonus on Five "
                "Card Hand Bonus Wagers; record the table game system's draw"
            )
        if value is not None and not offered:
            raise SettlementError(
                f"{draw} is recorded but the rules do not pay that bonus (643a.12(f)(3)): "
                "remove it or turn the bonus on in the config"
            )
    if record.lucky_seat is not None and record.lucky_seat > rules.seats:
        raise SettlementError(f"lucky_seat ({record.lucky_seat}) is not one of the {rules.seats} betting positions")
    if record.burned_card is not None and rules.dealing_method != "automated_shoe":
        raise SettlementError(
            f"burned_card: only an automated dealing shoe discards a community card "
            f"(643a.10(b)); the rules deal by {rules.dealing_method}: remove it"
        )
