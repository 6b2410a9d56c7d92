"""Expected hit frequencies of paytable rows, and the 95 % interval a row's observed frequency is tested against.

Exact where a row's outcome does not depend on what the player decides: the wager is settled on a fixed number of
random cards whatever the player does (a bonus or progressive wager, Let It Ride's hand, which no decision changes,
643a.11), so the row's frequency is its hand class's share of all hands of that many cards, from the standard class
counts (the counts tests/rankings checks by enumeration; the three-card ones are enumerated here with the core's
own evaluator). Where it does depend (a main-game row of a game where the player may fold: 655a, 683a, 679a) the
frequency is the players' strategy's: a ParSheet supplies it (issue 18's par-sheet module fills this hook); until
then such a row shows its observed frequency with no expectation, never an invented one.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from fractions import Fraction
from functools import cache
from itertools import combinations
from typing import Protocol

from controller.core.cards import STANDARD_DECK
from controller.core.rankings import rank_three

# The 2,598,960 five-card hands by class (C(52, 5); tests/rankings/test_enumeration.py enumerates them).
FIVE_CARD_COUNTS: Mapping[str, int] = {
    "royal_flush": 4,
    "straight_flush": 36,
    "four_of_a_kind": 624,
    "full_house": 3_744,
    "flush": 5_108,
    "straight": 10_200,
    "three_of_a_kind": 54_912,
    "two_pair": 123_552,
    "pair": 1_098_240,
    "high_card": 1_302_540,
}
FIVE_CARD_HANDS = 2_598_960
# 643a.12(a), (b): a pair pays only as a pair of tens or better: T, J, Q, K or A, 5 of the 13 ranks, each rank's
# pairs equally many.
FIVE_CARD_COUNTS_643A = {**FIVE_CARD_COUNTS, "pair": FIVE_CARD_COUNTS["pair"] * 5 // 13}
# 683a.6(c), 683a.12(b): the player's two cards (C(52, 2) = 1,326): a pair of aces (6), an ace with a jack, queen
# or king of its suit (4 x 3), of another suit (4 x 3 x 3), a pair of 2s to kings (12 x 6).
POCKET_COUNTS = {"pair_of_aces": 6, "suited_ace": 12, "unsuited_ace": 36, "pair": 72}
POCKET_HANDS = 1_326


@cache
def three_card_counts() -> dict[str, int]:
    """The 22,100 three-card hands by class (655a.6(c)), enumerated with controller.core.rankings."""
    counts = Counter(rank_three(hand).name.lower() for hand in combinations(STANDARD_DECK, 3))
    return dict(counts)


def _three(row: str, spades_apart: bool = False) -> Fraction | None:
    counts = three_card_counts()
    if spades_apart and row == "mini_royal_spades":
        return Fraction(1, 22_100)  # As Ks Qs (643a.12(d)(1))
    if spades_apart and row == "mini_royal":
        return Fraction(counts["mini_royal"] - 1, 22_100)
    return Fraction(counts[row], 22_100) if row in counts else None


def _five(row: str, counts: Mapping[str, int] = FIVE_CARD_COUNTS) -> Fraction | None:
    return Fraction(counts[row], FIVE_CARD_HANDS) if row in counts else None


class ParSheet(Protocol):
    """Expected frequencies of rows that depend on the players' decisions (issue 18 provides one)."""

    def expected(self, chapter: str, wager: str, row: str) -> Fraction | None: ...


class ExactFrequencies:
    """Rows settled on random cards alone, by (chapter, wager); a ParSheet, if given, answers the rest."""

    def __init__(self, par_sheet: ParSheet | None = None) -> None:
        self.par_sheet = par_sheet

    def expected(self, chapter: str, wager: str, row: str) -> Fraction | None:
        exact = self._exact(chapter, wager, row)
        if exact is not None or self.par_sheet is None:
            return exact
        return self.par_sheet.expected(chapter, wager, row)

    @staticmethod
    def _exact(chapter: str, wager: str, row: str) -> Fraction | None:
        if chapter == "655a" and wager == "three_card_bonus":  # 655a.7(d)(4): the three community cards
            return _three(row)
        if chapter == "655a" and wager == "progressive":  # 655a.11(i)(1): the five-card hand, folded or not
            return _five(row)
        if chapter == "643a" and wager in ("three_card_bonus", "three_card_progressive"):  # the player's three
            return _three(row, spades_apart=wager == "three_card_progressive")
        if chapter == "643a" and wager in ("bet", "five_card_bonus"):  # 643a.12(a), (b): no decision changes the hand
            return _five(row, FIVE_CARD_COUNTS_643A)
        if chapter == "643a" and wager == "five_card_progressive":
            return _five(row)
        if chapter == "683a" and wager == "board_bonus":  # 683a.11(i)(2): the three community cards
            return _three(row)
        if chapter == "683a" and wager == "pocket_bonus":
            return Fraction(POCKET_COUNTS[row], POCKET_HANDS) if row in POCKET_COUNTS else None
        return None


# Wagers settled on the community cards alone: every player's wager in a round has the same outcome, so such a
# row is counted once a round (its n is the rounds with the wager), or the interval would be far too narrow.
COMMUNITY_WAGERS = frozenset({("655a", "three_card_bonus"), ("683a", "board_bonus")})

Z95 = 1.959963984540054
NORMAL_ABOVE = 30.0  # the normal approximation serves once the variance n p (1 - p) reaches this


def binomial_range(n: int, p: float, tail: float = 0.025) -> tuple[int, int]:
    """The hits a row shows in 95 % of periods of n settlements if its frequency is p: from the 2.5 % to the 97.5 %
    quantile of Binomial(n, p) (docs/floor.md). Exact for small variances, where a rare row's single hit must not
    be flagged; the normal approximation with a continuity correction above."""
    if n == 0 or p <= 0.0:
        return 0, 0
    variance = n * p * (1 - p)
    if variance >= NORMAL_ABOVE:
        sd = math.sqrt(variance)
        return max(0, math.ceil(n * p - Z95 * sd - 0.5)), min(n, math.floor(n * p + Z95 * sd + 0.5))
    log_p, log_q = math.log(p), math.log1p(-p) if p < 1 else -math.inf
    cumulative, low, k = 0.0, None, 0
    while k <= n:
        pmf = math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_p + (n - k) * log_q)
        cumulative += pmf
        if low is None and cumulative > tail:
            low = k
        if cumulative >= 1 - tail:
            return low or 0, k
        k += 1
    return low or 0, n


def wilson_interval(hits: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a frequency observed as hits/n (docs/floor.md gives the formula)."""
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)
