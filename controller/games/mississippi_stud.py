"""Chapter 655a, Mississippi Stud: what the chapter fixes, as data and pure functions.

The round's flow lives in controller.engine; this module states the chapter's seats, wagers, streets,
paytables and the settlement of each wager, each with its citation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from controller.core.money import Cents, Odds
from controller.core.paytable import Award, MeterShare, Paytable, table
from controller.core.rankings import Five, Six, Three, best_five, rank_six, rank_three
from controller.core.settlement import ChapterRules

CHAPTER = "655a"
NAME = "Mississippi Stud"
MAX_SEATS = 6  # 655a.2(a)
PLAYER_CARDS = 2  # 655a.10(b)
COMMUNITY_CARDS = 3  # 655a.10(c)
SIX_CARD_BONUS_CARDS = 4  # 655a.10(c)
STREET_MULTIPLES = (1, 2, 3)  # 655a.11(b), (d), (f)

Outcome = Literal["win", "push", "lose"]


@dataclass(frozen=True, slots=True)
class Street:
    spot: str  # wager-station spot, see drivers.interfaces.STREET_SPOTS
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

# 655a.12(a): Ante, 3rd, 4th and 5th Street Wagers. A pair of 6s-10s pushes (listed as "Push").
ANTE_AND_STREETS = table(
    "655a.12(a)",
    None,
    {
        Five.ROYAL_FLUSH: "500 to 1",
        Five.STRAIGHT_FLUSH: "100 to 1",
        Five.FOUR_OF_A_KIND: "40 to 1",
        Five.FULL_HOUSE: "10 to 1",
        Five.FLUSH: "6 to 1",
        Five.STRAIGHT: "4 to 1",
        Five.THREE_OF_A_KIND: "3 to 1",
        Five.TWO_PAIR: "2 to 1",
        Five.PAIR: "1 to 1",  # jacks or better only; see settle_hand
    },
)

AGGREGATE_PAYOUT_LIMIT: Cents = 5_000_000  # 655a.12(b): $50,000 or more, see payout_limit

_3CB_COMMON: dict[Three, str] = {
    Three.STRAIGHT_FLUSH: "40 to 1",
    Three.THREE_OF_A_KIND: "30 to 1",
    Three.PAIR: "1 to 1",
}

# 655a.12(d): Three Card Bonus, paytables A-D.
THREE_CARD_BONUS: dict[str, Paytable] = {
    letter: table("655a.12(d)", letter, {**_3CB_COMMON, **rows})
    for letter, rows in dict[str, dict[Three, str]](
        {
            "A": {Three.MINI_ROYAL: "40 to 1", Three.STRAIGHT: "6 to 1", Three.FLUSH: "4 to 1"},
            "B": {Three.MINI_ROYAL: "40 to 1", Three.STRAIGHT: "5 to 1", Three.FLUSH: "4 to 1"},
            "C": {Three.MINI_ROYAL: "50 to 1", Three.STRAIGHT: "5 to 1", Three.FLUSH: "4 to 1"},
            "D": {Three.MINI_ROYAL: "50 to 1", Three.STRAIGHT: "6 to 1", Three.FLUSH: "3 to 1"},
        }
    ).items()
}


def _six(rows: dict[Six, str]) -> dict[Six, str]:
    return {Six.ROYAL_FLUSH: "1,000 to 1", Six.STRAIGHT_FLUSH: "200 to 1", **rows}


# 655a.12(f): Six Card Bonus, paytables A-E. Only E lists the six-card royal flush; under A-D such a
# hand is still a royal flush (655a.6(d)(2)) and pays as one. The diamonds row of E is keyed apart in
# SIX_CARD_ROYAL_DIAMONDS because the class alone does not carry the suit.
SIX_CARD_BONUS: dict[str, Paytable] = {
    letter: table("655a.12(f)", letter, _six(rows))
    for letter, rows in {
        "A": {
            Six.FOUR_OF_A_KIND: "50 to 1",
            Six.FULL_HOUSE: "25 to 1",
            Six.FLUSH: "20 to 1",
            Six.STRAIGHT: "10 to 1",
            Six.THREE_OF_A_KIND: "5 to 1",
        },
        "B": {
            Six.FOUR_OF_A_KIND: "50 to 1",
            Six.FULL_HOUSE: "25 to 1",
            Six.FLUSH: "15 to 1",
            Six.STRAIGHT: "10 to 1",
            Six.THREE_OF_A_KIND: "5 to 1",
        },
        "C": {
            Six.FOUR_OF_A_KIND: "100 to 1",
            Six.FULL_HOUSE: "20 to 1",
            Six.FLUSH: "15 to 1",
            Six.STRAIGHT: "9 to 1",
            Six.THREE_OF_A_KIND: "8 to 1",
        },
        "D": {
            Six.FOUR_OF_A_KIND: "100 to 1",
            Six.FULL_HOUSE: "20 to 1",
            Six.FLUSH: "15 to 1",
            Six.STRAIGHT: "10 to 1",
            Six.THREE_OF_A_KIND: "7 to 1",
        },
        "E": {
            Six.SIX_CARD_ROYAL_FLUSH: "20,000 to 1",
            Six.FOUR_OF_A_KIND: "50 to 1",
            Six.FULL_HOUSE: "20 to 1",
            Six.FLUSH: "15 to 1",
            Six.STRAIGHT: "10 to 1",
            Six.THREE_OF_A_KIND: "5 to 1",
        },
    }.items()
}
SIX_CARD_ROYAL_DIAMONDS = {"E": table("655a.12(f)", "E", {Six.SIX_CARD_ROYAL_FLUSH: "200,000 to 1"})}


@dataclass(frozen=True, slots=True)
class WagerResult:
    """One wager settled. paid: winnings on top of the wager; returned: wager given back;
    collected: wager taken. Exactly one of returned/collected is the wager amount."""

    wager: str
    amount: Cents
    outcome: Outcome
    odds: str | None
    paid: Cents
    returned: Cents
    collected: Cents

    def as_payload(self) -> dict[str, object]:
        return {
            "wager": self.wager,
            "amount": self.amount,
            "outcome": self.outcome,
            "odds": self.odds,
            "paid": self.paid,
            "returned": self.returned,
            "collected": self.collected,
        }


def _result(wager: str, amount: Cents, outcome: Outcome, odds: str | None, paid: Cents) -> WagerResult:
    if outcome == "lose":
        return WagerResult(wager, amount, outcome, odds, 0, 0, amount)
    return WagerResult(wager, amount, outcome, odds, paid, amount, 0)


@dataclass(frozen=True, slots=True)
class HandSettlement:
    hand: str
    rule: str  # 655a.11(h)(1), (2) or (3)
    results: tuple[WagerResult, ...]
    limited: bool  # the 655a.12(b) aggregate limit cut the payout


def payout_limit(min_ante: Cents) -> Cents:
    """655a.12(b): $50,000, or what one patron could win in a round betting the minimum, if greater.

    Betting the minimum means the minimum Ante; the most it can win is a royal flush with every
    street at three times the Ante (655a.11(b), (d), (f)).
    """
    top = ANTE_AND_STREETS.rows[Five.ROYAL_FLUSH]
    most_at_minimum = top.winnings(min_ante * (1 + 3 * len(STREETS)))
    return max(AGGREGATE_PAYOUT_LIMIT, most_at_minimum)


def settle_hand(
    player: Sequence[str], community: Sequence[str], wagers: dict[str, Cents], limit: Cents
) -> HandSettlement:
    """655a.11(h): settle the Ante and the Street Wagers of a seat that did not fold."""
    hand = best_five([*player, *community])
    names = [w for w in ("ante", *(s.spot for s in STREETS)) if wagers.get(w)]
    if hand.cls is Five.HIGH_CARD or (hand.cls is Five.PAIR and (hand.pair_rank or 0) <= 5):
        return HandSettlement(
            hand.name, "655a.11(h)(1)", tuple(_result(w, wagers[w], "lose", None, 0) for w in names), False
        )
    if hand.cls is Five.PAIR and (hand.pair_rank or 0) <= 10:
        return HandSettlement(
            hand.name, "655a.11(h)(2)", tuple(_result(w, wagers[w], "push", "push", 0) for w in names), False
        )
    odds = ANTE_AND_STREETS.rows[hand.cls]
    results = [_result(w, wagers[w], "win", str(odds), odds.winnings(wagers[w])) for w in names]
    total = sum(r.paid for r in results)
    limited = total > limit
    if limited:
        # The limit caps the aggregate; cut from the last wager backwards so the Ante is paid first.
        excess = total - limit
        for i in range(len(results) - 1, -1, -1):
            cut = min(excess, results[i].paid)
            r = results[i]
            results[i] = WagerResult(r.wager, r.amount, r.outcome, r.odds, r.paid - cut, r.returned, 0)
            excess -= cut
    name = "pair_of_jacks_or_better" if hand.cls is Five.PAIR else hand.name
    return HandSettlement(name, "655a.11(h)(3)", tuple(results), limited)


@dataclass(frozen=True, slots=True)
class BonusSettlement:
    hand: str
    rule: str
    paytable: str
    result: WagerResult


def _bonus(wager: str, hand: str, amount: Cents, paytable: Paytable, odds: Odds | None, rule: str) -> BonusSettlement:
    """A bonus wager wins at its paytable's odds for the hand (rule + "(i)") or loses (rule + "(ii)")."""
    if odds is None:
        return BonusSettlement(hand, f"{rule}(ii)", paytable.citation, _result(wager, amount, "lose", None, 0))
    return BonusSettlement(
        hand, f"{rule}(i)", paytable.citation, _result(wager, amount, "win", str(odds), odds.winnings(amount))
    )


def settle_three_card_bonus(community: Sequence[str], amount: Cents, paytable: Paytable) -> BonusSettlement:
    """655a.11(i)(2): the three community cards form a pair or better, or the wager loses."""
    hand = rank_three(community)
    return _bonus("three_card_bonus", hand.name.lower(), amount, paytable, paytable.odds_for(hand), "655a.11(i)(2)")


def settle_six_card_bonus(
    player: Sequence[str], bonus_cards: Sequence[str], amount: Cents, letter: str
) -> BonusSettlement:
    """655a.11(i)(4): two player cards and the four bonus cards; three-of-a-kind or better wins."""
    hand = rank_six([*player, *bonus_cards])
    paytable = SIX_CARD_BONUS[letter]
    if hand.cls is Six.SIX_CARD_ROYAL_FLUSH and hand.suit == "d" and letter in SIX_CARD_ROYAL_DIAMONDS:
        paytable = SIX_CARD_ROYAL_DIAMONDS[letter]
    cls = hand.cls
    if cls is Six.SIX_CARD_ROYAL_FLUSH and paytable.odds_for(cls) is None:
        cls = Six.ROYAL_FLUSH  # paytables A-D have no six-card row: it is a royal flush (655a.6(d)(2))
    return _bonus("six_card_bonus", cls.name.lower(), amount, paytable, paytable.odds_for(cls), "655a.11(i)(4)")


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
    ante_min_cents: int = Field(500, gt=0)
    ante_max_cents: int = Field(10_000, gt=0)
    three_card_bonus_paytable: Literal["A", "B", "C", "D"] | None = Field(
        None, description="655a.12(d) paytable letter; leave out to not offer the wager"
    )
    three_card_bonus_min_cents: int = Field(100, gt=0)
    three_card_bonus_max_cents: int = Field(2_500, gt=0)
    six_card_bonus_paytable: Literal["A", "B", "C", "D", "E"] | None = Field(
        None, description="655a.12(f) paytable letter; leave out to not offer the wager"
    )
    six_card_bonus_min_cents: int = Field(100, gt=0)
    six_card_bonus_max_cents: int = Field(2_500, gt=0)
    progressive_paytable: Literal["A", "B", "C", "D"] | None = Field(
        None, description="655a.12(c)(1) paytable letter of the Progressive Payout Wager; leave out to not offer it"
    )
    progressive_wager_cents: int = Field(
        100, description="the Progressive Payout Wager amount in cents: 100 or 500, as 655a.12(c)(5) schedules envy"
    )
    five_card_hand_bonus: bool = Field(False, description="offer the Five Card Hand Bonus Wager (655a.7(d)(5))")
    five_card_hand_bonus_wager_cents: int = Field(100, gt=0, description="the Five Card Hand Bonus Wager amount")
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
        for name in ("ante", "three_card_bonus", "six_card_bonus"):
            lo, hi = getattr(self, f"{name}_min_cents"), getattr(self, f"{name}_max_cents")
            if lo > hi:
                raise ValueError(f"{name}_min_cents ({lo}) is above {name}_max_cents ({hi}): swap them")
        return self


# -- 655a.12(c): the Progressive Payout Wager -----------------------------------------------------------------


def _progressive(rows: dict[Five, str | MeterShare]) -> dict[Five, Award]:
    return {hand: Odds.parse(v) if isinstance(v, str) else v for hand, v in rows.items()}


_PROGRESSIVE_LOWER: dict[Five, str | MeterShare] = {
    Five.FULL_HOUSE: "50 for 1",
    Five.FLUSH: "40 for 1",
    Five.STRAIGHT: "30 for 1",
}
PROGRESSIVE: dict[str, dict[Five, Award]] = {
    "A": _progressive(
        {
            Five.ROYAL_FLUSH: MeterShare("progressive", 100),
            Five.STRAIGHT_FLUSH: MeterShare("progressive", 10),
            Five.FOUR_OF_A_KIND: "300 for 1",
            **_PROGRESSIVE_LOWER,
            Five.THREE_OF_A_KIND: "9 for 1",
        }
    ),
    "B": _progressive(
        {
            Five.ROYAL_FLUSH: MeterShare("mega", 100),
            Five.STRAIGHT_FLUSH: MeterShare("major", 100),
            Five.FOUR_OF_A_KIND: "300 for 1",
            **_PROGRESSIVE_LOWER,
            Five.THREE_OF_A_KIND: "9 for 1",
        }
    ),
    "C": _progressive(
        {
            Five.ROYAL_FLUSH: MeterShare("mega", 100),
            Five.STRAIGHT_FLUSH: MeterShare("major", 100),
            Five.FOUR_OF_A_KIND: MeterShare("minor", 100),
            **_PROGRESSIVE_LOWER,
            Five.THREE_OF_A_KIND: "10 for 1",
        }
    ),
    "D": _progressive(
        {
            Five.ROYAL_FLUSH: MeterShare("mega", 100),
            Five.STRAIGHT_FLUSH: MeterShare("major", 100),
            Five.FOUR_OF_A_KIND: MeterShare("minor", 100),
            **_PROGRESSIVE_LOWER,
            Five.THREE_OF_A_KIND: "9 for 1",
        }
    ),
}
# 655a.12(c)(3): seed and reseed per level as a multiple of the Progressive Payout Wager ("$10,000 for 1").
PROGRESSIVE_SEED_FOR_1: dict[str, dict[str, int]] = {
    "A": {"progressive": 10_000},
    "B": {"mega": 10_000, "major": 1_000},
    "C": {"mega": 10_000, "major": 1_000, "minor": 250},
    "D": {"mega": 10_000, "major": 1_000, "minor": 250},
}
# 655a.12(c)(5): Envy Bonus per Envy Bonus Qualifying Hand, by the receiving player's Progressive Payout Wager.
ENVY_BONUS: dict[Cents, dict[Five, Cents]] = {
    100: {Five.ROYAL_FLUSH: 100_000, Five.STRAIGHT_FLUSH: 30_000},
    500: {Five.ROYAL_FLUSH: 500_000, Five.STRAIGHT_FLUSH: 150_000},
}

# -- 655a.12(e): the Five Card Hand Bonus Wager, its Magic Card and Lucky Bonus ---------------------------------

FIVE_CARD_HAND_BONUS: dict[Five, Award] = _progressive(
    {
        Five.ROYAL_FLUSH: MeterShare("five_card_hand_bonus", 100),
        Five.STRAIGHT_FLUSH: MeterShare("five_card_hand_bonus", 10),
        Five.FOUR_OF_A_KIND: "500 for 1",
        Five.FULL_HOUSE: "100 for 1",
        Five.FLUSH: "50 for 1",
    }
)
MAGIC_CARD = Odds.parse("20 for 1")  # 655a.12(e)(3)
LUCKY_BONUS = Odds.parse("5 for 1")  # 655a.12(e)(3)
FIVE_CARD_HAND_BONUS_SEED_FOR_1 = 10_000  # 655a.12(e)(4)
FIVE_CARD_HAND_BONUS_RESEED: Cents = 0  # 655a.12(e)(4)
