"""Players who follow the optimal strategy the par analysis found (`tablectl demo --players optimal`, docs/par.md).

They bet as the random players do (their chapter's demo players: which seats play, which optional wagers), so the
only difference is how they decide: Mississippi Stud's streets (655a.11(b), (d), (f)), Cajun Stud's Raise Wagers
(683a.11(b), (d), (f)), Let It Ride's Bet Number 1 and 2 (643a.11(c), (d)), Three Card Prime's Play Wager
(679a.7(d)(1)) and 684a's Raise Wager (684a.1) by the strategy of controller.par,
computed once per process (a few seconds), on the cards the player sees and the wagers on the layout. The demo then
shows the hold a table of careful players gives.
"""

from __future__ import annotations

from typing import Literal

from controller.config.table import TableConfig
from controller.core.cards import STANDARD_DECK
from controller.core.settlement import ChapterRules
from controller.par import chapter_684a, let_it_ride, three_card_prime
from controller.par.analyse import Strategy, optimal_strategy
from controller.people.policy import Answer, DecisionRequest, Policy

Players = Literal["random", "optimal"]
PLAYERS: tuple[Players, ...] = ("random", "optimal")
_INDEX = {card: i for i, card in enumerate(STANDARD_DECK)}  # the par analyses' card numbering
_LIR_BETS = ("bet_1", "bet_2", "bet_3")
# The spots of the Ante and the wagers a stud strategy adds to it: 655a's Streets, 683a's Raise Wagers.
_STUD_MAIN = ("ante", "street_3", "street_4", "street_5", "raise_1", "raise_2", "raise_3")


class NoStrategy(ValueError):
    """The chapter has no optimal strategy in this release; the message says which chapters have one."""


def check_optimal(rules: ChapterRules) -> Strategy:
    """The optimal strategy controller.par found for the game of `rules` (computed once, a few seconds); NoStrategy
    for a chapter without one."""
    strategy = optimal_strategy(rules)
    if strategy is None:
        raise NoStrategy(
            f"chapter {rules.chapter} has no optimal strategy yet (the par analyses give one for 655a Mississippi "
            "Stud, 683a Cajun Stud, 643a Let It Ride, 679a Three Card Prime and 684a): use --players random"
        )
    return strategy


class OptimalPolicy:
    """Another policy's wagers (the random players'); the optimal decision on every street or bet."""

    def __init__(self, betting: Policy, config: TableConfig) -> None:
        # Computed now, before the table opens, so that no decision waits seconds for it.
        self.strategy = check_optimal(config.game)
        self._random = betting

    def wagers(self, round_no: int, config: TableConfig) -> dict[int, dict[str, int]]:
        return self._random.wagers(round_no, config)

    def decide(self, round_no: int, seat: int, request: DecisionRequest) -> Answer:
        cards = [_INDEX[c] for c in request.cards]
        wagers = dict(request.wagers)
        if isinstance(self.strategy, let_it_ride.Strategy):
            # Bet Number 3 always rides; a bet withdrawn is off the layout (643a.11(c)).
            riding = sum(1 for b in _LIR_BETS if b in wagers and b != request.spot)
            return "ride" if self.strategy.rides(cards, riding) else "withdraw"
        ante = wagers.get("ante", 0)
        if not ante:
            return "fold"
        if isinstance(self.strategy, three_card_prime.Strategy):
            # 679a.7(d)(1): a Play Wager equal to the Ante on the player's three cards (the cards after them, a Pair
            # Bonus fourth card, are not what the strategy decides on), or a fold.
            plays = self.strategy.decide(cards[:3])
            return ante if plays and ante in request.allowed else "fold"
        if isinstance(self.strategy, chapter_684a.Strategy):
            # 684a.1: a Raise Wager of the multiple the strategy names for the five cards, or a fold.
            raised = self.strategy.decide(cards) * ante
            return raised if raised and raised in request.allowed else "fold"
        units = sum(wagers.get(spot, 0) for spot in _STUD_MAIN) // ante
        multiple = self.strategy.decide(cards, units)
        answer = multiple * ante
        # The strategy folds (0) or names a multiple 655a.11 allows; an amount the table would refuse folds instead.
        return answer if multiple and answer in request.allowed else "fold"

    def late_wager(self, round_no: int, config: TableConfig) -> tuple[int, str, int] | None:
        return self._random.late_wager(round_no, config)

    def stub_count(self, round_no: int) -> None:
        return None
