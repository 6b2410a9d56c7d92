"""Chapter 684a (the game's name is not in the available text): the round record and its settlement.

What the available text fixes: five-card stacks from an automated dealing shoe to each player with Ante and
Odds Wagers, clockwise from the dealer's left, then a stack to the dealer; if any player placed an All-Six
Bonus Wager, the top card of the next stack is the All-Six Bonus card (684a.10(b)); a player makes a Raise
Wager or folds (684a.1); the Four Card Bonus, Prime and All-Six Bonus Wagers play against posted tables
(684a.1).

What it does not: how the dealer qualifies, the Raise amounts, how the Ante, Odds and Raise Wagers are paid,
and how the optional wagers' hands are formed (684a.7, 684a.11 and 684a.12 are not available). Each is a
required rule of the operator's Rules Submission (601a.2) in the [game] table; a config that leaves one out is
refused with a message naming it. The readings this module takes:
- Settlement order: seats counterclockwise from the dealer's right (descending seat number), like the other
  chapters; per seat Ante, Odds, Raise, then Four Card Bonus, Prime, All-Six Bonus.
- Hands are poker hands of five cards (rankings.best_five) compared class first, then ranks; equal hands tie,
  and a tie pushes the Ante, Odds and Raise Wagers.
- A player who folds (684a.1 "Fold") withdraws from the round: the Ante and Odds Wagers are collected.
- The Four Card Bonus needs four-card classes and a formation rule that neither the text nor this controller
  defines, so a config that offers it is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from controller.core.cards import RANKS, rank_value
from controller.core.money import Cents, Odds
from controller.core.rankings import Five, FiveCardHand, Six, best_five, rank_six
from controller.core.settlement import (
    Card,
    ChapterRules,
    RoundRecord,
    SeatRecord,
    Settled,
    check_round_cards,
    known_wagers,
    lose,
    parse_card_field,
    parse_cards_field,
    push,
    require_distinct_seats,
    win,
)
from controller.core.settlement import (
    fail as _fail,
)

FIVE_CLASSES: tuple[str, ...] = tuple(c.name.lower() for c in Five)
SIX_CLASSES: tuple[str, ...] = tuple(c.name.lower() for c in Six)
MAIN = ("ante", "odds", "raise")
OPTIONAL = ("four_card_bonus", "prime", "all_six")
PLAYER_CARDS = 5
SUBMISSION = "Rules Submission (601a.2)"
RED = frozenset("dh")
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


def _odds(text: str) -> str:
    Odds.parse(text)  # raises ValueError naming the text and the accepted forms
    return text


def _odds_table(table: dict[str, str], known: Sequence[str], name: str) -> None:
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise ValueError(f"{name} names unknown hand class(es) {unknown}: use {', '.join(known)}")
    if not table:
        raise ValueError(f"{name} is empty: give its rows, or leave it out to not offer the wager")
    for text in table.values():
        _odds(text)


class DealerQualifies(BaseModel):
    """The lowest dealer hand that qualifies: a class, and within it the highest cards needed (compared in the
    order rankings.best_five ranks the class's cards: a pair's rank first, then kickers)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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
    model_config = ConfigDict(extra="forbid", frozen=True)

    ante: Literal["win", "push"]
    raise_: Literal["win", "push"] = Field(alias="raise")
    odds: Literal["push", "paytable"]


class Chapter684aRules(ChapterRules):
    """Chapter 684a options from the certificate holder's Rules Submission (601a.2). Every rule the available text
    does not fix is required; each optional wager is offered only with its table and formation rule."""

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

    @model_validator(mode="before")
    @classmethod
    def _required(cls, data: Any) -> Any:
        if isinstance(data, dict):
            missing = [f"{k} is required: {why}" for k, why in REQUIRED.items() if k not in data]
            if missing:
                raise ValueError("; ".join(missing))
        return data

    _check_odds = field_validator("ante_odds", "raise_odds")(_odds)

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
        return self

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
        for w in OPTIONAL:
            if s.wagers.get(w) and not rules.offers(w):
                raise _fail(
                    f"{at}.wagers.{w}",
                    f"this table does not offer the wager: remove it or give {w}_paytable in the config's [game]",
                )
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


def settle(rules: Chapter684aRules, r: Chapter684aRound) -> tuple[list[Settled], dict[str, Cents]]:
    """Every wager of the round, seats counterclockwise from the dealer's right (684a.11 not available), and the
    meters, which no 684a wager moves."""
    validate(rules, r)
    dealer = best_five(r.dealer)
    qualified = rules.dealer_qualifies.met_by(dealer)
    out: list[Settled] = []
    for s in sorted(r.seats, key=lambda x: x.seat, reverse=True):
        out.extend(_main(rules, s, dealer, qualified))
        collect = s.folded and rules.folded_optional_wagers == "collected"
        for w in OPTIONAL:
            if amount := s.wagers.get(w):
                if collect:
                    out.append(
                        lose(
                            s.seat,
                            w,
                            amount,
                            WAGER_RULE[w],
                            paytable=SUBMISSION,
                            note="collected with the folded hand (folded_optional_wagers)",
                        )
                    )
                else:
                    out.append(_optional(rules, r, s, w, amount))
    return out, dict(r.meters)


def settle_round(rules: Chapter684aRules, r: Chapter684aRound) -> list[Settled]:
    return settle(rules, r)[0]


def _main(rules: Chapter684aRules, s: Chapter684aSeat, dealer: FiveCardHand, qualified: bool) -> list[Settled]:
    mine = best_five(s.cards)
    hand = mine.name
    amounts = {w: s.wagers[w] for w in MAIN if s.wagers.get(w)}
    if s.folded:
        return [lose(s.seat, w, a, "684a.1", hand=hand, note="the player folded (684a.1)") for w, a in amounts.items()]
    table = f"{SUBMISSION} odds_paytable"
    odds = {
        "ante": Odds.parse(rules.ante_odds),
        "raise": Odds.parse(rules.raise_odds),
        "odds": Odds.parse(rules.odds_paytable[hand]),
    }
    if not qualified:
        dnq = rules.dealer_not_qualified
        choice = {"ante": dnq.ante, "raise": dnq.raise_, "odds": "win" if dnq.odds == "paytable" else "push"}
        note = "the dealer did not qualify (dealer_qualifies); dealer_not_qualified"
        return [
            win(s.seat, w, a, odds[w], "684a.1", hand=hand, paytable=table if w == "odds" else SUBMISSION, note=note)
            if choice[w] == "win"
            else push(s.seat, w, a, "684a.1", hand=hand, note=note)
            for w, a in amounts.items()
        ]
    if mine > dealer:
        return [
            win(s.seat, w, a, odds[w], "684a.1", hand=hand, paytable=table if w == "odds" else SUBMISSION)
            for w, a in amounts.items()
        ]
    if mine == dealer:
        return [push(s.seat, w, a, "684a.1", hand=hand, note="tie with the dealer") for w, a in amounts.items()]
    return [
        push(s.seat, w, a, "684a.1", hand=hand, note="odds_when_player_loses = push")
        if w == "odds" and rules.odds_when_player_loses == "push"
        else lose(s.seat, w, a, "684a.1", hand=hand)
        for w, a in amounts.items()
    ]


def _optional(rules: Chapter684aRules, r: Chapter684aRound, s: Chapter684aSeat, w: str, amount: Cents) -> Settled:
    if w == "prime":
        colors = {c[1] in RED for c in s.cards}
        hand = ("red" if True in colors else "black") if len(colors) == 1 else "mixed_colors"
        row = (rules.prime_paytable or {}).get("same_color") if len(colors) == 1 else None
        table = f"{SUBMISSION} prime_paytable ({rules.prime_hand})"
    elif w == "all_six":
        assert r.all_six_bonus_card is not None  # validate() requires it
        hand = rank_six([*s.cards, r.all_six_bonus_card]).name
        row = (rules.all_six_paytable or {}).get(hand)
        table = f"{SUBMISSION} all_six_paytable ({rules.all_six_hand})"
    else:  # the rules refuse to offer the Four Card Bonus, so validate() refuses the wager before this
        raise _fail(f"seats[seat={s.seat}].wagers.{w}", "the Four Card Bonus Wager cannot be settled here")
    if row is None:
        return lose(s.seat, w, amount, WAGER_RULE[w], hand=hand, paytable=table)
    return win(s.seat, w, amount, Odds.parse(row), WAGER_RULE[w], hand=hand, paytable=table)
