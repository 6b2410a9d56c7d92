"""The simulation cross-check (docs/par.md, "Proof"): seeded rounds under the optimal strategy, settled by the real
settlement code (the chapter's record model and settle function, what `tablectl settle` runs), land within the 99.9 %
confidence interval of the par sheet's exact house edge, for the main game and every optional wager offered; and
every round's main-game result equals, to the cent, what the par analysis pays for that hand and those decisions.

Bounded by default (20,000 rounds a game, a few seconds; Cajun Stud with all four optional wagers and two pair paid
3 to 2); `pytest -m campaign tests/par` plays 2,000,000 rounds a game (about five minutes each on the 2-core machine).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from controller.config.table import load_config
from controller.par import crosscheck, mississippi_stud
from controller.par.analyse import par_sheet

ROOT = Path(__file__).resolve().parents[2]
# The at-limit sheets are the same wagers at the maximum bet, where a simulation at the minimum does not reach.
AT_LIMIT = {"ante_at_limit", "bet_at_limit"}


def _rounds(campaign: bool) -> int:
    return 2_000_000 if campaign else 20_000


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
    cfg = load_config(ROOT / "configs" / f"{config}.toml")
    sheet = par_sheet(cfg.table_id, cfg.game)
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


def test_the_exact_variance_is_what_rounds_show() -> None:
    """The variance the interval uses (the sheet's standard deviation) against the spread of simulated rounds, on a
    wager whose rare wins a sample of this size sees (the Three Card Bonus: 40 to 1 at most)."""
    cfg = load_config(ROOT / "configs" / "mississippi-stud.toml")
    sheet = par_sheet(cfg.table_id, cfg.game)
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
    cfg = load_config(ROOT / "configs" / "mississippi-stud.toml")
    with pytest.raises(AssertionError, match="the par sheet and settlement disagree"):
        crosscheck.run(cfg.game, 2_000, seed=1)
