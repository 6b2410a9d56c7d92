"""684a's settlement as the par analysis weighs it: what one deal pays per Ante by the dealer's bucket, the player's
five-card class and the Raise multiple (Terms, from the configured rules), and the lowest hand the dealer qualifies
with. chapter_684a.py solves and evaluates the strategy on these."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import comb

import numpy as np

from controller.core.cards import STANDARD_DECK
from controller.core.money import Odds
from controller.core.rankings import Five, best_five
from controller.games.chapter_684a.rules import Chapter684aRules
from controller.par import combos, dealer_counts
from controller.par.sheet import net_per_unit

HANDS = comb(52, 5)


DEALS = HANDS * dealer_counts.DEALER_HANDS


POINT = "Raise Wager (684a.1)"


@dataclass(frozen=True)
class Terms:
    """What one deal pays per Ante, by the dealer's bucket, the player's five-card class (rankings.Five) and the Raise
    multiple m: the 684a settlement (`terms_of`), or another player-vs-dealer game's for a published-figure check."""

    multiples: tuple[int, ...]
    fold: Fraction  # all the wagers placed before the deal, lost
    win: tuple[tuple[Fraction, ...], ...]  # [class][multiple]: the player beats a qualified dealer
    lose: tuple[Fraction, ...]  # [multiple]: a qualified dealer beats the player
    not_qualified: tuple[tuple[Fraction, ...], ...]  # [class][multiple]: the dealer does not qualify
    odds_part: tuple[Fraction, ...] = ()  # [class]: the Odds Wager's share of `win`, for its paytable's rows
    odds_part_not_qualified: tuple[Fraction, ...] = ()


def terms_of(rules: Chapter684aRules, odds_per_ante: Fraction = Fraction(1)) -> Terms:
    """684a settlement (controller.games.chapter_684a.settle._main) as nets per Ante."""
    ante = net_per_unit(Odds.parse(rules.ante_odds))
    raise_ = net_per_unit(Odds.parse(rules.raise_odds))
    odds = [odds_per_ante * net_per_unit(Odds.parse(rules.odds_paytable[c.name.lower()])) for c in Five]
    nq = rules.dealer_not_qualified
    ms = tuple(rules.raise_multiples)
    odds_nq = [o if nq.odds == "paytable" else Fraction(0) for o in odds]
    return Terms(
        ms,
        -(1 + odds_per_ante),
        tuple(tuple(ante + m * raise_ + o for m in ms) for o in odds),
        tuple(-1 - m - (odds_per_ante if rules.odds_when_player_loses == "lose" else Fraction(0)) for m in ms),
        tuple(
            tuple(
                (ante if nq.ante == "win" else Fraction(0)) + (m * raise_ if nq.raise_ == "win" else Fraction(0)) + o
                for m in ms
            )
            for o in odds_nq
        ),
        tuple(odds),
        tuple(odds_nq),
    )


def qualify_rank(rules: Chapter684aRules) -> int:
    """The lowest dense rank the dealer qualifies with, by settlement's own test on one hand of every value; refused
    if the qualifying hands are not every hand from there up (then no threshold would do)."""
    r = dealer_counts.ranked()
    first = np.zeros(len(r.values), dtype=np.int64)
    first[r.rank[::-1]] = np.arange(len(r.rank))[::-1]
    hands = combos.combinations(5)[first]
    met = np.array([rules.dealer_qualifies.met_by(best_five([STANDARD_DECK[c] for c in h])) for h in hands])
    lowest = int(np.argmax(met)) if met.any() else len(met)
    if not met[lowest:].all():
        raise AssertionError("dealer_qualifies is not a threshold in the hand order")  # met_by compares in order
    return lowest
