"""679a's optimal play-or-fold as data (controller.par.three_card_prime.Strategy): the threshold the sheet prints
under the Rules Submission's own ranking, the strategy the demo's optimal players follow, and the refusal left for a
chapter with no analysis."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from controller.config.table import TableConfig, load_config
from controller.core.cards import STANDARD_DECK
from controller.core.settlement import ChapterRules
from controller.games.three_card_prime.rules import ThreeCardPrimeRules
from controller.par import combos, three_card_prime
from controller.par.analyse import optimal_strategy, par_sheet
from controller.people.demo import RandomPolicy
from controller.people.optimal import NoStrategy, OptimalPolicy, check_optimal
from controller.people.policy import DecisionRequest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def config() -> TableConfig:
    return load_config(ROOT / "configs" / "three-card-prime.toml")


def _cards(*names: str) -> list[int]:
    return [STANDARD_DECK.index(n) for n in names]


def test_the_strategy_is_the_sheets_q64_threshold_under_the_submissions_ranking(config: TableConfig) -> None:
    rules = config.game
    assert isinstance(rules, ThreeCardPrimeRules)
    strategy = optimal_strategy(rules)
    assert isinstance(strategy, three_card_prime.Strategy)
    ranked = three_card_prime.rank_all(rules)
    # The sheet: "play with Qc 6c 4d (by rank) or better"; the strategy plays exactly the hands ranked as high.
    q64 = int(ranked.strength[combos.index_unsorted(np.array([_cards("Qc", "6c", "4d")]))[0]])
    assert (strategy.plays == (ranked.strength >= q64)).all()
    assert strategy.decide(_cards("Qs", "6h", "4d")) and not strategy.decide(_cards("Qs", "6h", "3d"))
    assert strategy.decide(_cards("2c", "2d", "3h"))  # any pair plays
    main = par_sheet("t", rules).wager("ante")
    played = {d.action: d.share for d in main.decisions}["play"]
    assert played * 22_100 == int(strategy.plays.sum())
    with pytest.raises(ValueError, match="player's three"):
        strategy.decide(_cards("Qs", "6h", "4d", "2c"))


def test_seeded_optimal_players_play_as_the_strategy_says(config: TableConfig) -> None:
    assert isinstance(config.game, ThreeCardPrimeRules)
    policy = OptimalPolicy(RandomPolicy(random.Random(1)), config)
    strategy = check_optimal(config.game)
    assert isinstance(strategy, three_card_prime.Strategy)
    rng = random.Random(679)
    decided = {"play": 0, "fold": 0}
    for n in range(400):
        # Every other player placed a Pair Bonus Wager and sees its fourth card after the three (679a.9(b)).
        cards = rng.sample(range(52), 4 if n % 2 else 3)
        request = DecisionRequest(
            "play", "play", "wager_or_fold", (500,), tuple(STANDARD_DECK[c] for c in cards), (("ante", 500),)
        )
        answer = policy.decide(1, 1, request)
        assert answer == (500 if strategy.decide(cards[:3]) else "fold")
        decided["fold" if answer == "fold" else "play"] += 1
    assert decided["fold"] > 50 and decided["play"] > 50  # both decisions were exercised


def test_a_chapter_without_an_analysis_has_no_strategy_and_says_which_do() -> None:
    # Every configurable chapter has an analysis, so rules of a chapter with none are the base model itself.
    rules = ChapterRules(chapter="999a", seats=7)
    assert optimal_strategy(rules) is None
    with pytest.raises(NoStrategy, match=r"chapter 999a has no optimal strategy yet.*679a Three Card Prime.*random"):
        check_optimal(rules)
