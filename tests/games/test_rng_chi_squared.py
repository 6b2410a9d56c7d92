"""The table game system's random bonus draws show no bias (issue 14 item 3): Pearson's chi-squared test at the 95 %
level a gaming lab uses, over the draws the live engine makes (controller.engine.context.SecretDraws, the OS's
CSPRNG), for the Magic Card (52 cards) and the Lucky Bonus position (6 seats).

A fair generator exceeds the 95 % critical value in about one batch in twenty, so one batch cannot decide: 20 batches
are drawn and more than 5 exceedances (probability 0.0003 for a fair generator, Binomial(20, 0.05)) fail the test.
The same procedure is shown to catch a slightly biased generator, so the test can fail."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence

from controller.core.cards import STANDARD_DECK
from controller.engine.context import SecretDraws

# Upper 5 % points of the chi-squared distribution (any statistics table; scipy.stats.chi2.ppf(0.95, df)).
CRITICAL_95 = {51: 68.669, 5: 11.070}
BATCHES, ALLOWED = 20, 5
SEATS = range(1, 7)


def chi_squared(draws: Sequence[object], domain: Sequence[object]) -> float:
    counts = Counter(draws)
    assert set(counts) <= set(domain), f"drew outside the domain: {set(counts) - set(domain)}"
    expected = len(draws) / len(domain)
    return sum((counts.get(x, 0) - expected) ** 2 / expected for x in domain)


def exceedances(draw: Callable[[], object], domain: Sequence[object], per_cell: int) -> int:
    critical = CRITICAL_95[len(domain) - 1]
    n = per_cell * len(domain)
    return sum(chi_squared([draw() for _ in range(n)], domain) > critical for _ in range(BATCHES))


def test_the_magic_card_is_uniform_over_the_deck() -> None:
    draws = SecretDraws()
    assert exceedances(draws.magic_card, STANDARD_DECK, per_cell=40) <= ALLOWED


def test_the_lucky_bonus_position_is_uniform_over_the_betting_positions() -> None:
    draws = SecretDraws()
    assert exceedances(lambda: draws.lucky_seat(SEATS), list(SEATS), per_cell=100) <= ALLOWED


def test_the_procedure_catches_a_biased_generator() -> None:
    # Seat 1 drawn a quarter of the time instead of a sixth: what a modulo bias or a stuck bit could do.
    rng = random.Random(14)

    def biased() -> int:
        return 1 if rng.random() < 0.25 else rng.choice(list(SEATS)[1:])

    assert exceedances(biased, list(SEATS), per_cell=100) > ALLOWED
