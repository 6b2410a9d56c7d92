"""Chapter 655a: the settlement of a hand's Ante and Street Wagers (655a.11(h)) and of the Three Card and Six Card
Bonus Wagers (655a.11(i)(2), (4)), as pure functions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from controller.core.money import Cents, Odds
from controller.core.paytable import Paytable
from controller.core.rankings import Five, Six, best_five, rank_six, rank_three
from controller.games.mississippi_stud.paytables import (
    AGGREGATE_PAYOUT_LIMIT,
    ANTE_AND_STREETS,
    SIX_CARD_BONUS,
    SIX_CARD_ROYAL_DIAMONDS,
)
from controller.games.mississippi_stud.rules import STREETS

Outcome = Literal["win", "push", "lose"]


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
    """A seat's Ante and Street Wagers settled on its five-card hand (655a.11(h)), within the 655a.12(b) limit."""

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
    """A Three Card or Six Card Bonus Wager settled against its paytable (655a.11(i)(2), (4))."""

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
