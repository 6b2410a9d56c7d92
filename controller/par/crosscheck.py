"""The simulation cross-check: seeded rounds played under the optimal strategy and settled by the REAL settlement code
(each chapter's record model and settlement function, what `tablectl settle` runs through
controller.games.registry), each wager's mean result with its confidence
interval, to set beside the exact figure of the par sheet. So the par sheet and the controller's settlement cannot
drift apart: a change to either that moves a return shows as an exact figure outside the interval, and every round's
main-game result is also checked, exactly, against the analysis's own payoff for that hand and those decisions.

One box per round (so rounds are independent), every optional wager the table offers on it at its smallest size,
progressive meters at the figures the sheet is evaluated at. Pure: no I/O; `progress` hears how far it got.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from controller.core.settlement import ChapterRules
from controller.games.cajun_stud.rules import CajunStudRules
from controller.games.chapter_684a.rules import Chapter684aRules
from controller.games.let_it_ride.rules import LetItRideRules
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.three_card_prime.rules import ThreeCardPrimeRules
from controller.par.crosscheck_rounds import (
    play_cajun_stud,
    play_chapter_684a,
    play_let_it_ride,
    play_mississippi_stud,
    play_three_card_prime,
)
from controller.par.estimate import CrossCheck


def run(rules: ChapterRules, rounds: int, seed: int, progress: Callable[[int], None] | None = None) -> CrossCheck:
    """Play `rounds` seeded rounds of the configured game through its settlement; ValueError for a chapter without
    an optimal strategy in this release."""
    rng = np.random.default_rng(seed)
    check = CrossCheck(rules, rounds, seed)
    if isinstance(rules, MississippiStudRules):
        play: Callable[[npt.NDArray[np.int64]], None] = play_mississippi_stud(rules, check, rng)
    elif isinstance(rules, LetItRideRules):
        play = play_let_it_ride(rules, check, rng)
    elif isinstance(rules, ThreeCardPrimeRules):
        play = play_three_card_prime(rules, check)
    elif isinstance(rules, CajunStudRules):
        play = play_cajun_stud(rules, check)
    elif isinstance(rules, Chapter684aRules):
        play = play_chapter_684a(rules, check)
    else:
        raise ValueError(f"chapter {rules.chapter}: no optimal strategy to simulate in this release")
    block = 10_000
    for start in range(0, rounds, block):
        # The first eleven cards of a shuffled deck per round: a box's cards, the community or dealer's and the bonus
        # cards (the games that need fewer take the first of them: their rounds are as they were with nine).
        deals = np.argsort(rng.random((min(block, rounds - start), 52)), axis=1)[:, :11]
        for order in deals:
            play(order)
        if progress is not None:
            progress(start + len(deals))
    return check
