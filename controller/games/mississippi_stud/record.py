"""Chapter 655a: a recorded round (the input of `tablectl settle`) and what it must satisfy under the rules."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from controller.core.settlement import (
    Card,
    RoundRecord,
    SeatRecord,
    check_round_cards,
    known_wagers,
    parse_card_field,
    parse_cards_field,
    require_distinct_seats,
)
from controller.core.settlement import (
    fail as _fail,
)
from controller.games.boxes import check_boxes
from controller.games.limits import check_offered_limits
from controller.games.mississippi_stud import rules as ms
from controller.games.mississippi_stud.rules import MississippiStudRules

StreetSpot = Literal["street_3", "street_4", "street_5"]
MAIN = ("ante", "street_3", "street_4", "street_5")
OPTIONAL = ("progressive", "three_card_bonus", "five_card_hand_bonus", "six_card_bonus")


class MississippiStudSeat(SeatRecord):
    """wagers: ante, street_3, street_4, street_5 (as placed), progressive, three_card_bonus,
    five_card_hand_bonus, six_card_bonus. folded_on: the street at which the player folded."""

    folded_on: StreetSpot | None = None

    _known = field_validator("wagers")(known_wagers("655a", MAIN + OPTIONAL))


class MississippiStudRound(RoundRecord):
    chapter: Literal["655a"]
    seats: list[MississippiStudSeat]
    community: list[Card] = Field(description="the three community cards (655a.10(c))")
    six_card_bonus_cards: list[Card] = Field(default_factory=list, description="the four Six Card Bonus cards")
    magic_card: Card | None = Field(None, description="the table game system's Magic Card draw (655a.12(e)(3))")
    lucky_seat: int | None = Field(None, description="the table game system's Lucky Bonus seat (655a.12(e)(3))")

    _cards = field_validator("community", "six_card_bonus_cards", mode="before")(parse_cards_field)
    _card = field_validator("magic_card", mode="before")(parse_card_field)

    @model_validator(mode="after")
    def _shape(self) -> MississippiStudRound:
        require_distinct_seats(s.seat for s in self.seats)
        if len(self.community) != ms.COMMUNITY_CARDS:
            raise ValueError(f"community has {len(self.community)} cards; 655a.10(c) deals three")
        return self


def validate(rules: MississippiStudRules, r: MississippiStudRound) -> None:
    """Refuse a record the chapter could not have produced, naming the field and the fix."""
    for s in r.seats:
        _check_seat(rules, s)
    if any(s.wagers.get("six_card_bonus") for s in r.seats):
        if len(r.six_card_bonus_cards) != ms.SIX_CARD_BONUS_CARDS:
            raise _fail("six_card_bonus_cards", f"{len(r.six_card_bonus_cards)} cards; 655a.10(c) deals four")
    elif r.six_card_bonus_cards:
        raise _fail("six_card_bonus_cards", "no seat wagered the Six Card Bonus, so none are dealt (655a.10(c))")
    if any(s.wagers.get("five_card_hand_bonus") for s in r.seats):
        if rules.magic_card_bonus and r.magic_card is None:
            raise _fail("magic_card", "the table pays the Magic Card Bonus: give the card the system drew")
        if rules.lucky_bonus and r.lucky_seat is None:
            raise _fail("lucky_seat", "the table pays the Lucky Bonus: give the seat the system drew")
    check_round_cards([r.community, r.six_card_bonus_cards, *(s.cards for s in r.seats)])
    check_offered_limits(rules.optional_offers(), ((f"seats[seat={s.seat}]", s.wagers) for s in r.seats))
    check_boxes(((s.seat, s.player) for s in r.seats), rules.adjacent_boxes, "655a.7(e)", "adjacent_boxes")


def _check_seat(rules: MississippiStudRules, s: MississippiStudSeat) -> None:
    offered = {
        "progressive": rules.progressive_paytable,
        "three_card_bonus": rules.three_card_bonus_paytable,
        "five_card_hand_bonus": rules.five_card_hand_bonus,
        "six_card_bonus": rules.six_card_bonus_paytable,
    }
    at = f"seats[seat={s.seat}]"
    if s.seat > rules.seats:
        raise _fail(at, f"the table has {rules.seats} seats (game.seats)")
    ante = s.wagers.get("ante", 0)
    if not ante:
        raise _fail(f"{at}.wagers.ante", "every player in a round has an Ante Wager (655a.7(d)(1))")
    if len(s.cards) != ms.PLAYER_CARDS:
        raise _fail(f"{at}.cards", f"{len(s.cards)} cards; 655a.10(b) deals each player two")
    for w in OPTIONAL:
        if s.wagers.get(w) and not offered[w]:
            raise _fail(
                f"{at}.wagers.{w}",
                "this table does not offer the wager: remove it or offer it in the config's [game]",
            )
    if s.wagers.get("progressive") and s.wagers["progressive"] != rules.progressive_wager_cents:
        raise _fail(
            f"{at}.wagers.progressive",
            f"the Progressive Payout Wager is {rules.progressive_wager_cents} cents at this table",
        )
    if (
        s.wagers.get("five_card_hand_bonus")
        and s.wagers["five_card_hand_bonus"] != rules.five_card_hand_bonus_wager_cents
    ):
        raise _fail(
            f"{at}.wagers.five_card_hand_bonus",
            f"the Five Card Hand Bonus Wager is {rules.five_card_hand_bonus_wager_cents} cents here",
        )
    _check_streets(at, s, ante)


def _check_streets(at: str, s: MississippiStudSeat, ante: int) -> None:
    """Each Street Wager one, two or three times the Ante (655a.11(b), (d), (f)) up to the street folded on."""
    folded = False
    for street in ms.STREETS:
        amount = s.wagers.get(street.spot)
        if folded or s.folded_on == street.spot:
            folded = True
            if amount:
                raise _fail(
                    f"{at}.wagers.{street.spot}",
                    f"the player folded on {s.folded_on}, so made no {street.name} Wager",
                )
            continue
        if amount not in [m * ante for m in ms.STREET_MULTIPLES]:
            raise _fail(
                f"{at}.wagers.{street.spot}",
                f"{amount} is not one, two or three times the Ante "
                f"({ante}) ({street.decide_rule}); a player who did not bet folded: set folded_on",
            )
