"""The simulation cross-check (docs/par.md, "Proof"): seeded rounds under the optimal strategy, settled by the real
settlement code (the chapter's record model and settle function, what `tablectl settle` runs), land within the 99.9 %
confidence interval of the par sheet's exact house edge, for the main game and every optional wager offered; and
every round's main-game result equals, to the cent, what the par analysis pays for that hand and those decisions.

Bounded by default (8,000 rounds a game, a second or two; Cajun Stud with all four optional wagers and two pair paid
3 to 2): the fewest rounds whose interval still catches a paytable row paid one unit wrong in the wagers CAUGHT names
(the test checks it); `pytest -m campaign tests/par` plays 2,000,000 rounds a game (about five minutes each on the
2-core machine).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from controller.config.table import load_config
from controller.par import crosscheck, mississippi_stud
from controller.par.estimate import Z_999
from controller.par.sheet import WagerSheet
from tests.par.sheets import CONFIGS, sheet_of

# One worker runs the module, with the other par modules: each game's sheet analysed once (tests/par/sheets.py).
pytestmark = pytest.mark.xdist_group("par_sheets")

# The at-limit sheets are the same wagers at the maximum bet, where a simulation at the minimum does not reach.
AT_LIMIT = {"ante_at_limit", "bet_at_limit"}
Z_95 = 1.6449  # one-sided: the interval leaves out a house edge that far off 95 times in 100
# A paytable row paid one unit more or less moves the house edge by at least the row's probability p (more where the
# row pays raises too). The 99.9 % interval leaves that edge out, 95 times in 100, once p >= (Z_999 + Z_95) * sd /
# sqrt(rounds): so the rounds a wager needs are ((Z_999 + Z_95) * sd / p) ** 2, p its most frequent paying row's. At
# 8,000 rounds these are caught (the most any needs: Let It Ride's Three Card Bonus, 7,328). 20,000 rounds, the
# bound before, caught no more: the next wager, Let It Ride's Bet, needs 24,534; the main games of 655a and 683a about
# 240,000 (a pair of jacks paid 1 to 1, p 0.099, sd 9.8), the progressives and the Five Card Hand Bonus millions.
# Every row of every wager is also checked round by round, to the cent, against settlement (crosscheck.run).
CAUGHT = {
    "mississippi-stud-five-card-hand-bonus": {"three_card_bonus"},
    "let-it-ride-five-card-hand-bonus": {"three_card_bonus"},
    "three-card-prime": {"ante", "prime", "pair_bonus"},
    "cajun-stud": {"board_bonus"},
    "chapter-684a": {"ante"},
}


def _rounds(campaign: bool) -> int:
    return 2_000_000 if campaign else 8_000


def _top_row(wager: WagerSheet) -> Fraction:
    """The probability of the wager's most frequent paying row."""
    return max((r.probability for r in wager.rows if r.contribution > 0), default=Fraction(0))


def _rounds_to_catch_one_unit(wager: WagerSheet) -> float:
    p, variance = _top_row(wager), wager.variance
    if not p or variance is None:
        return math.inf
    return ((Z_999 + Z_95) * math.sqrt(float(variance)) / float(p)) ** 2


@pytest.mark.campaign
# The Five Card Hand Bonus configs offer every optional wager of their chapter (both Let It Ride progressives, the
# Mississippi Stud progressive, Three and Six Card Bonus), the Five Card Hand Bonus with its Magic Card and Lucky Bonus.
@pytest.mark.parametrize(
    "config",
    [
        "mississippi-stud-five-card-hand-bonus",
        "let-it-ride-five-card-hand-bonus",
        "three-card-prime",
        "cajun-stud",
        "chapter-684a",
    ],
)
def test_settlement_lands_within_the_confidence_interval_of_the_exact_house_edge(config: str, campaign: bool) -> None:
    cfg, sheet = sheet_of(CONFIGS / f"{config}.toml")
    check = crosscheck.run(cfg.game, _rounds(campaign), seed=18)
    # Every wager of the sheet was played, so none escapes the check.
    assert set(check.estimates) == {w.wager for w in sheet.wagers} - AT_LIMIT
    for name, estimate in check.estimates.items():
        exact = sheet.wager(name)
        assert exact.variance is not None
        # A progressive taking two sizes plays each in turn.
        assert estimate.rounds in (_rounds(campaign), _rounds(campaign) // 2)
        deviation = estimate.deviation(exact.house_edge, exact.variance)
        assert estimate.agrees(exact.house_edge, exact.variance), (
            f"{config} {name}: simulated house edge {estimate.house_edge:.5f} is {deviation:.2f} standard errors "
            f"from the exact {float(exact.house_edge):.5f}"
        )
    # The interval is a real check: the rounds played leave out, for these wagers, the edge a row paid one unit wrong
    # would give (_rounds_to_catch_one_unit), and this seeded sample does.
    caught = {n for n, e in check.estimates.items() if e.rounds >= _rounds_to_catch_one_unit(sheet.wager(n))}
    assert caught >= CAUGHT[config], f"{config}: {_rounds(campaign)} rounds no longer catch {CAUGHT[config] - caught}"
    for name in caught:
        exact, p = sheet.wager(name), _top_row(sheet.wager(name))
        for wrong in (exact.house_edge - p, exact.house_edge + p):
            assert not check.estimates[name].agrees(wrong, exact.variance), f"{config} {name}: {wrong} not told apart"


def test_the_exact_variance_is_what_rounds_show() -> None:
    """The variance the interval uses (the sheet's standard deviation) against the spread of simulated rounds, on a
    wager whose rare wins a sample of this size sees (the Three Card Bonus: 40 to 1 at most)."""
    cfg, sheet = sheet_of(CONFIGS / "mississippi-stud.toml")
    estimate = crosscheck.run(cfg.game, 20_000, seed=5).estimates["three_card_bonus"]
    sampled = estimate.stderr * math.sqrt(estimate.rounds)
    assert sampled == pytest.approx(sheet.wager("three_card_bonus").standard_deviation, rel=0.05)


def test_a_payoff_that_differs_from_settlement_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-round check can fail: an analysis that paid a pair of jacks 2 to 1 would be told apart at once."""
    real = mississippi_stud.payoffs

    def doctored(ante_cents: int | None, limit_cents: int | None) -> np.typing.NDArray[np.int64]:
        table = real(ante_cents, limit_cents).copy()
        table[:, 2] *= 2  # OUTCOMES[2]: a pair of jacks or better
        return table

    monkeypatch.setattr(mississippi_stud, "payoffs", doctored)
    cfg = load_config(CONFIGS / "mississippi-stud.toml")
    with pytest.raises(AssertionError, match="the par sheet and settlement disagree"):
        crosscheck.run(cfg.game, 2_000, seed=1)
