"""Chapter 679a, Three Card Prime: the round record and its settlement.

What the available text fixes: the Ante Wager competes against the dealer's hand and the Play Wager equals
the Ante (679a.7(d)(1)); the dealer qualifies with queen high or better (679a.1); the Prime Wager wins when
all three of the player's cards are of one color (679a.7(d)(2)); the Pair Bonus Wager wins with a pair or
better (679a.7(d)(3)), played with a fourth card dealt to the player (679a.9(b)) or one Pair Bonus community
card (679a.9(g)); the Bad Beat Bonus pays on the Play Wager when the player's flush-or-higher (or
straight-or-higher) hand loses to the dealer's (679a.1); the All-Six Bonus Wager plays against a posted table.

What it does not: the rankings (679a.6), the completion of the round (679a.11) and the payouts (679a.12) are
not available. The certificate holder's Rules Submission (601a.2) supplies them through the [game] table, and
a config that leaves one undefined is refused, naming the setting. The readings this module takes:
- Settlement order: 679a.11 is missing, so, like the other chapters, seats are settled counterclockwise from
  the dealer's right (descending seat number); per seat Ante, Play, Bad Beat Bonus, Prime, Pair Bonus, All-Six.
- Hands compare by `hand_order`, then by ranks high to low with a pair's rank before its kicker; equal hands
  tie and a tie pushes the Ante and Play. Where an A-2-3 straight stands is `ace_two_three`.
- A player who does not make the Play Wager folds and loses the Ante: the Play Wager is what a player makes
  "to remain in competition against the dealer" (679a.1).
- The Bad Beat Bonus is not a wager: it is an award row (amount 0) paid at its odds on the Play Wager, only
  when the dealer qualified and beat the player.
- The All-Six hand is the player's three cards and the dealer's three, ranked as rankings.Six.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from controller.core.cards import rank_value
from controller.core.money import Cents, Odds
from controller.core.rankings import Six, Three, rank_six, rank_three
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
    win_fixed,
)
from controller.core.settlement import (
    fail as _fail,
)

THREE_CLASSES: tuple[str, ...] = tuple(c.name.lower() for c in Three)
SIX_CLASSES: tuple[str, ...] = tuple(c.name.lower() for c in Six)
WAGERS = ("ante", "play", "prime", "pair_bonus", "all_six")
OPTIONAL = ("prime", "pair_bonus", "all_six")
PLAYER_CARDS = 3
SUBMISSION = "Rules Submission (601a.2)"
QUEEN = 12

# The subsection that makes each wager; the settling subsection (679a.11) is not available.
WAGER_RULE = {
    "ante": "679a.7(d)(1)",
    "play": "679a.7(d)(1)",
    "prime": "679a.7(d)(2)",
    "pair_bonus": "679a.7(d)(3)",
    "all_six": "679a.1",
}
RED = frozenset("dh")

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


def _odds(text: str) -> str:
    Odds.parse(text)  # raises ValueError naming the text and the accepted forms
    return text


def _odds_table(table: dict[str, str], known: Sequence[str], what: str) -> dict[str, str]:
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise ValueError(f"{what} names unknown hand class(es) {unknown}: use {', '.join(known)}")
    for text in table.values():
        _odds(text)
    return table


class DealerNotQualified(BaseModel):
    """What the Ante and Play Wagers do when the dealer's hand is below queen high (679a.1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ante: Literal["win", "push"]
    play: Literal["win", "push"]


class ThreeCardPrimeRules(ChapterRules):
    """Chapter 679a options from the certificate holder's Rules Submission (601a.2). Every rule the available text
    does not fix is required; each optional wager is offered only with its table."""

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
    # Table procedure (read by the round engine, controller.engine.spec.TableOptions). Dealing from the hand is the
    # only published method (679a.9), so there is no fallback dealing method to configure.
    decks: Literal["one_deck", "two_decks"] = Field(
        "one_deck",
        description="one deck and a cover card, or two decks alternating every round (679a.3 is not "
        "available; as the Rules Submission says)",
    )
    cards_preinspected: bool = Field(
        True,
        description="decks arrive preinspected and reshuffled under 603a.16(u)/(v); false: the dealer inspects "
        "at opening and the floorperson verifies (679a.4 is not available)",
    )
    shuffler_counts: bool = Field(
        True,
        description="the automated shuffler counts the cards and indicates whether 52 are present (679a.9(d)); "
        "false: the dealer counts the stub every stub_count_every rounds (679a.9(d)-(f))",
    )
    stub_count_every: int = Field(5, ge=1, le=5, description="rounds between stub counts, at most 5 (679a.9(d))")
    deck_change_hours: float | None = Field(
        None,
        gt=0,
        le=4,
        description="change the decks after this many hours; default 4, the cards being dealt from the hand",
    )
    idle_inspection_minutes: int | None = Field(
        30, gt=0, description="no gaming activity this long: the cards are inspected again; null to turn off"
    )
    abandoned_wagers: Literal["lose", "hold"] = Field(
        "lose", description="wagers of a player who leaves during a round: treated as losing or held"
    )

    @model_validator(mode="before")
    @classmethod
    def _required(cls, data: Any) -> Any:
        if isinstance(data, dict):
            missing = [f"{k} is required: {why}" for k, why in REQUIRED.items() if k not in data]
            if missing:
                raise ValueError("; ".join(missing))
        return data

    _check_odds = field_validator("ante_odds", "play_odds")(_odds)

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
            _odds_table(self.prime_paytable, ["same_color"], "prime_paytable")
        self._pair_bonus()
        self._bad_beat()
        if self.all_six_paytable is not None:
            _odds_table(self.all_six_paytable, SIX_CLASSES, "all_six_paytable")
            if not self.all_six_paytable:
                raise ValueError("all_six_paytable is empty: give its rows or leave it out to not offer the wager")
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
        _odds_table(self.pair_bonus_paytable, THREE_CLASSES, "pair_bonus_paytable")
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
        _odds_table(self.bad_beat_paytable, THREE_CLASSES, "bad_beat_paytable")
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
        for w in OPTIONAL:
            if s.wagers.get(w) and not rules.offers(w):
                raise _fail(
                    f"{at}.wagers.{w}",
                    f"this table does not offer the wager: remove it or give {w}_paytable in the config's [game]",
                )
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


def qualifies(rules: ThreeCardPrimeRules, dealer: Sequence[str]) -> bool:
    """679a.1: queen high or better; hand_order keeps high card as the lowest class."""
    cls = rank_three(dealer).name.lower()
    return cls != "high_card" or max(rank_value(c) for c in dealer) >= QUEEN


def settle(rules: ThreeCardPrimeRules, r: ThreeCardPrimeRound) -> tuple[list[Settled], dict[str, Cents]]:
    """Every wager of the round, seats counterclockwise from the dealer's right (679a.11 not available), and the
    meters, which no 679a wager moves."""
    validate(rules, r)
    dealer_key = rules.key(r.dealer)
    qualified = qualifies(rules, r.dealer)
    out: list[Settled] = []
    for s in sorted(r.seats, key=lambda x: x.seat, reverse=True):
        out.extend(_main(rules, s, dealer_key, qualified))
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


def settle_round(rules: ThreeCardPrimeRules, r: ThreeCardPrimeRound) -> list[Settled]:
    return settle(rules, r)[0]


def _main(
    rules: ThreeCardPrimeRules, s: ThreeCardPrimeSeat, dealer_key: tuple[int, tuple[int, ...]], qualified: bool
) -> list[Settled]:
    ante, play = s.wagers["ante"], s.wagers.get("play", 0)
    rule = "679a.7(d)(1)"
    hand = rank_three(s.cards).name.lower()
    if s.folded:
        return [lose(s.seat, "ante", ante, "679a.1", hand=hand, note="the player folded (made no Play Wager)")]
    odds = {"ante": Odds.parse(rules.ante_odds), "play": Odds.parse(rules.play_odds)}
    amounts = {"ante": ante, "play": play}
    if not qualified:
        choice = {"ante": rules.dealer_not_qualified.ante, "play": rules.dealer_not_qualified.play}
        note = "the dealer did not qualify (679a.1); dealer_not_qualified"
        return [
            win(s.seat, w, amounts[w], odds[w], rule, hand=hand, paytable=SUBMISSION, note=note)
            if choice[w] == "win"
            else push(s.seat, w, amounts[w], rule, hand=hand, note=note)
            for w in ("ante", "play")
        ]
    mine = rules.key(s.cards)
    if mine > dealer_key:
        return [win(s.seat, w, amounts[w], odds[w], rule, hand=hand, paytable=SUBMISSION) for w in ("ante", "play")]
    if mine == dealer_key:
        return [push(s.seat, w, amounts[w], rule, hand=hand, note="tie with the dealer") for w in ("ante", "play")]
    out = [lose(s.seat, w, amounts[w], rule, hand=hand) for w in ("ante", "play")]
    if rules.bad_beat_paytable and rules.bad_beat_minimum:
        row = rules.bad_beat_paytable.get(hand)
        if row is not None:
            bb = Odds.parse(row)
            out.append(
                win_fixed(
                    s.seat,
                    "bad_beat_bonus",
                    0,
                    bb.winnings(play),
                    "679a.1",
                    hand=hand,
                    odds=str(bb),
                    paytable=f"{SUBMISSION} bad_beat_paytable",
                    note=f"on the Play Wager of {play}: the dealer qualified and beat the player",
                )
            )
    return out


def _optional(
    rules: ThreeCardPrimeRules, r: ThreeCardPrimeRound, s: ThreeCardPrimeSeat, w: str, amount: Cents
) -> Settled:
    rule = WAGER_RULE[w]
    if w == "prime":
        colors = {c[1] in RED for c in s.cards}
        hand = ("red" if True in colors else "black") if len(colors) == 1 else "mixed_colors"
        row = (rules.prime_paytable or {}).get("same_color") if len(colors) == 1 else None
        table = f"{SUBMISSION} prime_paytable"
    elif w == "pair_bonus":
        extra = r.pair_bonus_community_card if rules.pair_bonus_layout == "community_card" else s.fourth_card
        assert extra is not None  # validate() requires it
        best = max(combinations([*s.cards, extra], 3), key=rules.key)
        hand = rank_three(best).name.lower()
        row = (rules.pair_bonus_paytable or {}).get(hand)
        table = f"{SUBMISSION} pair_bonus_paytable ({rules.pair_bonus_layout})"
    else:
        hand = rank_six([*s.cards, *r.dealer]).name
        row = (rules.all_six_paytable or {}).get(hand)
        table = f"{SUBMISSION} all_six_paytable"
    if row is None:
        return lose(s.seat, w, amount, rule, hand=hand, paytable=table)
    return win(s.seat, w, amount, Odds.parse(row), rule, hand=hand, paytable=table)
