"""Chapter 684a: a recorded round (the input of `tablectl settle`) and what it must satisfy under the rules."""

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
from controller.games.chapter_684a.rules import MAIN, OPTIONAL, PLAYER_CARDS, WAGER_RULE, Chapter684aRules
from controller.games.limits import check_offered_limits
from controller.games.partial import refuse_unoffered


class Chapter684aSeat(SeatRecord):
    """cards: the player's five-card stack (684a.10(b)); folded: the player made no Raise Wager (684a.1).
    wagers: ante, odds, raise, four_card_bonus, prime, all_six (a wager not placed is left out)."""

    folded: bool = False

    _known = field_validator("wagers")(known_wagers("684a", MAIN + OPTIONAL))


class Chapter684aRound(RoundRecord):
    chapter: Literal["684a"]
    seats: list[Chapter684aSeat]
    dealer: list[Card] = Field(description="the dealer's five-card stack (684a.10(b))")
    all_six_bonus_card: Card | None = Field(None, description="top card of the stack after the dealer's (684a.10(b))")

    _dealer = field_validator("dealer", mode="before")(parse_cards_field)

    _one = field_validator("all_six_bonus_card", mode="before")(parse_card_field)


def validate(rules: Chapter684aRules, r: Chapter684aRound) -> None:
    """Refuse a record the chapter could not have produced, naming the field and the fix."""
    require_distinct_seats(s.seat for s in r.seats)
    if len(r.dealer) != PLAYER_CARDS:
        raise _fail("dealer", f"{len(r.dealer)} cards; 684a.10(b) delivers the dealer a stack of five")
    for s in r.seats:
        at = f"seats[seat={s.seat}]"
        if s.seat > rules.seats:
            raise _fail(at, f"the table has {rules.seats} seats (game.seats)")
        ante = s.wagers.get("ante", 0)
        for w in ("ante", "odds"):
            if not s.wagers.get(w):
                raise _fail(
                    f"{at}.wagers.{w}",
                    "684a.10(b) delivers a stack only to a player with Ante and Odds Wagers: give both",
                )
        if len(s.cards) != PLAYER_CARDS:
            raise _fail(f"{at}.cards", f"{len(s.cards)} cards; 684a.10(b) delivers each player a stack of five")
        raised = s.wagers.get("raise", 0)
        if s.folded and raised:
            raise _fail(
                f"{at}.wagers.raise",
                "a player who folded made no Raise Wager (684a.1): remove it or set folded = false",
            )
        allowed = [m * ante for m in rules.raise_multiples]
        if not s.folded and raised not in allowed:
            raise _fail(
                f"{at}.wagers.raise",
                f"{raised} is not an allowed Raise Wager {allowed} (raise_multiples "
                "of the Ante); a player who did not raise folded (folded = true)",
            )
        refuse_unoffered(at, s.wagers, OPTIONAL, rules.offers)
    any_all_six = any(s.wagers.get("all_six") for s in r.seats)
    if any_all_six and r.all_six_bonus_card is None:
        raise _fail(
            "all_six_bonus_card",
            "a player placed an All-Six Bonus Wager, so 684a.10(b) dealt the All-Six Bonus card: give it",
        )
    if not any_all_six and r.all_six_bonus_card is not None:
        raise _fail(
            "all_six_bonus_card", "no player placed an All-Six Bonus Wager, so 684a.10(b) dealt none: remove it"
        )
    bonus = [r.all_six_bonus_card] if r.all_six_bonus_card else []
    check_round_cards([r.dealer, bonus, *(s.cards for s in r.seats)])
    offered = partial.offers([w for w in OPTIONAL if rules.offers(w)], WAGER_RULE, rules.posted_limits())
    check_offered_limits(offered, ((f"seats[seat={s.seat}]", s.wagers) for s in r.seats))
