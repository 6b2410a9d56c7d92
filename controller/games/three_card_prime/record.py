"""Chapter 679a: a recorded round (the input of `tablectl settle`) and what it must satisfy under the rules."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

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
from controller.games import partial
from controller.games.limits import check_offered_limits
from controller.games.partial import refuse_unoffered
from controller.games.three_card_prime.rules import OPTIONAL, PLAYER_CARDS, WAGER_RULE, WAGERS, ThreeCardPrimeRules


class ThreeCardPrimeSeat(SeatRecord):
    """cards: the player's three cards; fourth_card: the Pair Bonus fourth card (679a.9(b)); folded: the player
    made no Play Wager. wagers: ante, play, prime, pair_bonus, all_six (a wager not placed is left out)."""

    fourth_card: Card | None = None
    folded: bool = False

    _one = field_validator("fourth_card", mode="before")(parse_card_field)

    _known = field_validator("wagers")(known_wagers("679a", WAGERS))


class ThreeCardPrimeRound(RoundRecord):
    chapter: Literal["679a"]
    seats: list[ThreeCardPrimeSeat]
    dealer: list[Card] = Field(description="the dealer's three cards (679a.9(b))")
    pair_bonus_community_card: Card | None = Field(None, description="the Pair Bonus community card (679a.9(g))")

    _dealer = field_validator("dealer", mode="before")(parse_cards_field)

    _one = field_validator("pair_bonus_community_card", mode="before")(parse_card_field)


def validate(rules: ThreeCardPrimeRules, r: ThreeCardPrimeRound) -> None:
    """Refuse a record the chapter could not have produced, naming the field and the fix."""
    require_distinct_seats(s.seat for s in r.seats)
    if len(r.dealer) != PLAYER_CARDS:
        raise _fail("dealer", f"{len(r.dealer)} cards; 679a.9(b) deals the dealer three")
    community = rules.pair_bonus_layout == "community_card"
    for s in r.seats:
        at = f"seats[seat={s.seat}]"
        if s.seat > rules.seats:
            raise _fail(at, f"the table has {rules.seats} seats (game.seats)")
        ante, play = s.wagers.get("ante", 0), s.wagers.get("play", 0)
        if not ante:
            raise _fail(f"{at}.wagers.ante", "679a.9(b) deals only to a player with an Ante Wager (679a.7(d)(1))")
        if len(s.cards) != PLAYER_CARDS:
            raise _fail(f"{at}.cards", f"{len(s.cards)} cards; 679a.9(b) deals each player three")
        if s.folded and play:
            raise _fail(f"{at}.wagers.play", "a player who folded made no Play Wager: remove it or set folded = false")
        if not s.folded and play != ante:
            raise _fail(
                f"{at}.wagers.play",
                f"{play} is not the Ante ({ante}): 679a.7(d)(1) makes the Play Wager "
                "equal to the Ante; a player who did not make it folded (folded = true)",
            )
        refuse_unoffered(at, s.wagers, OPTIONAL, rules.offers)
        bonus = bool(s.wagers.get("pair_bonus"))
        if s.fourth_card is not None and not (bonus and not community):
            raise _fail(
                f"{at}.fourth_card",
                "679a.9(b) deals a fourth card only to a Pair Bonus Wager at a "
                "fourth-card table (pair_bonus_layout): remove it",
            )
        if bonus and not community and s.fourth_card is None:
            raise _fail(
                f"{at}.fourth_card", "the player placed a Pair Bonus Wager, so 679a.9(b) dealt a fourth card: give it"
            )
    any_bonus = any(s.wagers.get("pair_bonus") for s in r.seats)
    if r.pair_bonus_community_card is not None and not (community and any_bonus):
        raise _fail(
            "pair_bonus_community_card",
            "679a.9(g) deals it only at a community-card table when a player placed a Pair Bonus Wager: remove it",
        )
    if community and any_bonus and r.pair_bonus_community_card is None:
        raise _fail(
            "pair_bonus_community_card",
            "a player placed a Pair Bonus Wager at a community-card table, so 679a.9(g) dealt one: give it",
        )
    groups: list[list[str]] = [r.dealer, [r.pair_bonus_community_card] if r.pair_bonus_community_card else []]
    groups += [[*s.cards, *([s.fourth_card] if s.fourth_card else [])] for s in r.seats]
    check_round_cards(groups)
    offered = partial.offers([w for w in OPTIONAL if rules.offers(w)], WAGER_RULE, rules.posted_limits())
    check_offered_limits(offered, ((f"seats[seat={s.seat}]", s.wagers) for s in r.seats))
