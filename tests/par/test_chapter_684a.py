"""684a's exact analysis (controller.par.chapter_684a, controller.par.dealer_counts): the inclusion-exclusion dealer
counts against every dealer hand evaluated one by one, the suit classes, the strategy as data and as the demo's
optimal players follow it, and a rule set whose strategy folds checked round by round through 684a's settlement."""

from __future__ import annotations

import random
from fractions import Fraction
from math import comb
from pathlib import Path

import numpy as np
import pytest

from controller.config.table import TableConfig, load_config
from controller.core.cards import STANDARD_DECK
from controller.games.chapter_684a.rules import Chapter684aRules
from controller.par import chapter_684a, chapter_684a_terms, combos, crosscheck, dealer_counts
from controller.par.analyse import par_sheet
from controller.par.evaluator import evaluate
from controller.people.demo import RandomPolicy
from controller.people.optimal import OptimalPolicy
from controller.people.policy import DecisionRequest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def config() -> TableConfig:
    return load_config(ROOT / "configs" / "chapter-684a.toml")


def _folding(rules: Chapter684aRules) -> Chapter684aRules:
    """A Rules Submission under which many hands fold: a Raise of four Antes paid 1 to 2."""
    return Chapter684aRules.model_validate(
        {**rules.model_dump(by_alias=True), "raise_multiples": [4], "raise_odds": "1 to 2"}
    )


def test_the_suit_classes_cover_every_hand_once() -> None:
    classes = dealer_counts.player_classes()
    assert len(classes.weight) == 134_459
    assert int(classes.weight.sum()) == comb(52, 5)
    assert np.bincount(classes.of_hand).tolist() == classes.weight.tolist()


def test_inclusion_exclusion_counts_equal_every_dealer_hand_compared(config: TableConfig) -> None:
    """Brute force: for seeded player hands, all 1,533,939 dealer hands of the other 47 cards, each evaluated."""
    assert isinstance(config.game, Chapter684aRules)
    q = chapter_684a_terms.qualify_rank(config.game)
    counts = dealer_counts.buckets(q)
    classes = dealer_counts.player_classes()
    values = dealer_counts.ranked().values
    rng = np.random.default_rng(684)
    for i in rng.integers(0, len(classes.weight), 2):
        mine = classes.hands[i].astype(np.int64)
        rest = np.setdiff1d(np.arange(52), mine)
        dealer = np.searchsorted(values, evaluate(rest[combos.combinations(5, 47).astype(np.int64)]))
        own = int(classes.rank[i])
        qualified = dealer >= q
        expected = [
            int((~qualified).sum()),
            int((qualified & (dealer < own)).sum()),
            int((qualified & (dealer == own)).sum()),
            int((qualified & (dealer > own)).sum()),
        ]
        assert counts[i].tolist() == expected


def test_the_dealer_qualifies_from_ace_king_as_settlement_says(config: TableConfig) -> None:
    assert isinstance(config.game, Chapter684aRules)
    values = dealer_counts.ranked().values
    q = chapter_684a_terms.qualify_rank(config.game)
    # Ace-king with the lowest kickers is the least qualifying hand; the best ace-queen is the last that does not.
    assert chapter_684a._name(int(values[q])) == "A-K-4-3-2 high"
    assert chapter_684a._name(int(values[q - 1])) == "A-Q-J-T-9 high"


def test_the_example_rules_submission_sheet(config: TableConfig) -> None:
    """The figures docs/par.md prints for configs/chapter-684a.toml (exact, to catch drift)."""
    sheet = par_sheet(config.table_id, config.game)
    main = sheet.wager("ante")
    assert main.house_edge == Fraction(221518641, 3164004844)  # 7.0 %: a Rules Submission a lab could file
    # The weak hands raise 1x, the strong 3x, none 2x and none folds (a fold forfeits the Ante and the Odds Wager).
    shares = {d.action: d.share for d in main.decisions}
    assert shares == {
        "raise 1x": Fraction(3153, 4420),
        "raise 2x": 0,
        "raise 3x": Fraction(1267, 4420),
        "fold": 0,
    }
    assert main.average_wager == 2 + 1 * shares["raise 1x"] + 3 * shares["raise 3x"] == Fraction(7897, 2210)
    assert sum(r.probability for r in main.rows) == 1
    assert sheet.strategy[0].rules == (
        "raise 3x from a pair of 8s, T-9-2 (by rank) up, where no higher raise (but 25,344 hands from there up raise "
        "less: card removal)",
        "raise 1x from 7-5-4-3-2 high (by rank) up, where no higher raise",
        "never fold: a fold loses 2 Antes, more than raising 1x loses on any hand",
    )
    # 18 to 1 on 2 x C(26, 5) / C(52, 5) = 253/4998 of hands: 19 x 253 - 4998 = -191 per 4998 units.
    assert sheet.wager("prime").house_edge == Fraction(191, 4998)
    assert sheet.wager("all_six").house_edge == Fraction(530512, 2544815)


def test_the_strategy_folds_where_raising_loses_more_and_the_tables_say_so(config: TableConfig) -> None:
    assert isinstance(config.game, Chapter684aRules)
    main = chapter_684a.analyse_main(_folding(config.game))
    shares = {d.action: d.share for d in main.sheet.decisions}
    assert 0 < shares["fold"] < 1 and shares["fold"] + shares["raise 4x"] == 1
    rules = main.strategy_tables[0].rules
    assert rules[0] == "raise 4x with a pair of 3s, A-K-4 (by rank) or better" and rules[-1] == "fold the rest"
    # Every hand of a pair of aces raises, no hand of 7-5-4-3-2 does.
    assert main.strategy.decide([12, 25, 0, 1, 2]) == 4
    assert main.strategy.decide([5, 16, 2, 1, 0]) == 0


def test_seeded_optimal_players_decide_as_the_strategy_says(config: TableConfig) -> None:
    assert isinstance(config.game, Chapter684aRules)
    folding = config.model_copy(update={"game": _folding(config.game)})
    policy = OptimalPolicy(RandomPolicy(random.Random(1)), folding)
    strategy = chapter_684a.analyse_main(_folding(config.game)).strategy
    rng = random.Random(684)
    decided = {"fold": 0, "raise": 0}
    for _ in range(400):
        cards = rng.sample(range(52), 5)
        request = DecisionRequest(
            "raise",
            "raise",
            "wager_or_fold",
            (2000,),
            tuple(STANDARD_DECK[c] for c in cards),
            (("ante", 500), ("odds", 500)),
        )
        answer = policy.decide(1, 1, request)
        expected = 2000 if strategy.decide(cards) == 4 else "fold"
        assert answer == expected
        decided["fold" if answer == "fold" else "raise"] += 1
    assert decided["fold"] > 50 and decided["raise"] > 50  # both decisions were exercised


def test_a_folding_strategy_agrees_with_settlement_round_by_round(config: TableConfig) -> None:
    """The cross-check's per-round comparison (crosscheck.run raises on any cent of difference) over folds, raises,
    qualified and unqualified dealers; the means within their 99.9 % intervals."""
    assert isinstance(config.game, Chapter684aRules)
    rules = _folding(config.game)
    sheet = par_sheet("t", rules)
    check = crosscheck.run(rules, 5_000, seed=684)
    for name, estimate in check.estimates.items():
        exact = sheet.wager(name)
        assert estimate.agrees(exact.house_edge, exact.variance), name
