"""Chapter 655a, Mississippi Stud: the exact return of the Ante and Street Wagers under the optimal strategy, and of
every optional wager the configuration offers.

The main game is solved by backward induction over card sets. What a player knows at each Street is only the set of
cards seen (two of their own, then one, two community cards), and the hand finally paid is those five cards, so the
optimal decision is a function of the set: at 5th Street (655a.11(f)) for each of the 270,725 four-card sets and
each amount already wagered, at 4th (655a.11(d)) for each of the 22,100 three-card sets, at 3rd (655a.11(b)) for
each of the 1,326 two-card sets. All sums are integers (the paytable pays whole multiples of the wager; with the
655a.12(b) payout limit, integer cents), so every figure is an exact rational.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache
from math import comb

import numpy as np
import numpy.typing as npt

from controller.core.rankings import Five
from controller.games.mississippi_stud import paytables
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.par import deals, patterns, stud
from controller.par.mississippi_stud_optional import five_card_hand_bonus, progressive, six_card_bonus, three_card_bonus
from controller.par.patterns import MS_FIFTH, MS_FOURTH
from controller.par.sheet import (
    StrategyTable,
    WagerSheet,
    net_per_unit,
)
from controller.par.stud import FOLD, LOSE, MULTIPLES, Strategy

IntArray = npt.NDArray[np.int64]

# Outcomes of a hand played to the end, in the order of the columns of the count tables (controller.par.stud).
OUTCOMES: tuple[tuple[str, str], ...] = (
    ("lose", "loses (655a.11(h)(1))"),
    ("push", "push: a pair of 6s to 10s (655a.11(h)(2))"),
    ("pair_of_jacks_or_better", str(paytables.ANTE_AND_STREETS.rows[Five.PAIR])),
    *((c.name.lower(), str(paytables.ANTE_AND_STREETS.rows[c])) for c in list(Five)[2:]),
)
_SEQUENCES_AFTER_TWO = stud.SEQUENCES_AFTER_TWO


def payoffs(ante_cents: int | None, limit_cents: int | None) -> IntArray:
    """payoffs[w, o]: the net result of w units of Ante plus Street Wagers on outcome o: in units of the Ante when
    ante_cents is None, else in cents with the 655a.12(b) aggregate limit on what is paid."""
    unit = 1 if ante_cents is None else ante_cents
    table = np.zeros((11, len(OUTCOMES)), dtype=np.int64)
    for w in range(1, 11):
        table[w, LOSE] = -w * unit
        for o, cls in enumerate(list(Five)[1:], start=2):
            won = int(net_per_unit(paytables.ANTE_AND_STREETS.rows[cls]) * w * unit)
            table[w, o] = won if limit_cents is None or ante_cents is None else min(won, limit_cents)
    return table


@dataclass(frozen=True)
class MainGame:
    sheet: WagerSheet
    strategy: Strategy
    strategy_tables: tuple[StrategyTable, ...]


@cache
def analyse_main(ante_cents: int | None = None, limit_cents: int | None = None, ties: stud.Ties = "less") -> MainGame:
    """The Ante and Street Wagers under the strategy that maximises the player's expected result (per Ante unit, or
    in cents at `ante_cents` with the payout limit), solved by controller.par.stud. Where folding and betting, or two
    multiples, have exactly the same expected result, `ties` says which is taken: "less" (the sheet's: no more at
    risk for nothing) or "more". The house edge is the same either way; the average total wager and the element of
    risk are not. Made once a process for each set of arguments: every 655a config's sheet reads the per-Ante one."""
    labels = stud.Labels(
        outcomes=OUTCOMES,
        points=("3rd Street (655a.11(b))", "4th Street (655a.11(d))", "5th Street (655a.11(f))"),
        fold="loses the Ante and the Streets wagered (655a.11(b), (d), (f))",
        title="Ante and Street Wagers, optimal strategy",
        paytable=paytables.ANTE_AND_STREETS.citation,
        notes=()
        if ante_cents is None
        else (f"at an Ante of {ante_cents} cents with the 655a.12(b) payout limit of {limit_cents} cents",),
        # Published averages (3.59 Antes, 1.37 %) raise on these ties: the same house edge, more at risk.
        tie_practice=", as published strategies do",
    )
    solved = stud.solve(payoffs(ante_cents, limit_cents), 1 if ante_cents is None else ante_cents, labels, ties)
    return MainGame(solved.sheet, solved.strategy, strategy_tables(solved.strategy))


def reach(strategy: Strategy) -> tuple[IntArray, IntArray]:
    """reach3[s3, w], reach4[s4, w]: how many ordered paths (the two cards, then each community card) reach each
    three- and four-card set with w units wagered when `strategy` is played; 0 where it never comes."""
    n3, n4 = comb(52, 3), comb(52, 4)
    ch2, ch3 = deals.children(2), deals.children(3)
    reach3 = np.zeros((n3, 5), dtype=np.int64)
    for m in MULTIPLES:
        reach3[:, 1 + m] += np.bincount(ch2[strategy.third == m].ravel(), minlength=n3)
    reach4 = np.zeros((n4, 8), dtype=np.int64)
    for w in range(2, 5):
        for m in MULTIPLES:
            chosen = (strategy.fourth[:, w] == m) & (reach3[:, w] > 0)
            weights = np.repeat(reach3[chosen, w], 49).astype(np.float64)  # exact: far below 2**53
            reach4[:, w + m] += np.rint(np.bincount(ch3[chosen].ravel(), weights, minlength=n4)).astype(np.int64)
    return reach3, reach4


def price(strategy: Strategy) -> tuple[Fraction, Fraction]:
    """The exact expected result and average total wager per Ante (655a.12(a), no payout limit) of playing
    `strategy`, whatever it is (a published strategy, a simulated player's), by a forward pass of its own, so a
    strategy can be priced against the optimal one and the analysis's figures checked by a second route."""
    pay = payoffs(None, None)
    counts4 = stud.counts_by_outcome()
    reach3, reach4 = reach(strategy)
    won = -int((strategy.third == FOLD).sum()) * _SEQUENCES_AFTER_TWO
    wagered = -won
    for w in range(2, 5):
        folds = int(reach3[strategy.fourth[:, w] == FOLD, w].sum()) * 49 * 48
        won -= folds * w
        wagered += folds * w
    for w in range(3, 8):
        m = strategy.fifth[:, w].astype(np.int64)
        paths = reach4[:, w]
        folds = int(paths[m == FOLD].sum()) * 48
        won -= folds * w
        wagered += folds * w
        for k in MULTIPLES:
            chosen = m == k
            won += int(paths[chosen] @ (counts4[chosen] @ pay[w + k]))
            wagered += int(paths[chosen].sum()) * 48 * (w + k)
    total = comb(52, 2) * _SEQUENCES_AFTER_TWO
    return Fraction(won, total), Fraction(wagered, total)


# -- the strategy in words --------------------------------------------------------------------------------------

_RANKS = "23456789TJQKA"


def _points(rank: int) -> int:
    """The usual Mississippi Stud count: 2 points for a jack or better, 1 for a 6 to 10, 0 below."""
    return 2 if rank >= 9 else 1 if rank >= 4 else 0


def third_street_groups(strategy: Strategy) -> dict[int, list[str]]:
    """The 169 starting hands ("AKs", "T9o", "77") by the decision the strategy takes on them at 3rd Street."""
    from controller.par.combos import combinations

    groups: dict[int, list[str]] = {}
    seen: set[str] = set()
    for index, (a, b) in enumerate(combinations(2).tolist()):
        hi, lo = max(a % 13, b % 13), min(a % 13, b % 13)
        name = _RANKS[hi] + _RANKS[lo] + ("" if hi == lo else "s" if a // 13 == b // 13 else "o")
        if name not in seen:
            seen.add(name)
            groups.setdefault(int(strategy.third[index]), []).append(name)
    return groups


def strategy_tables(strategy: Strategy) -> tuple[StrategyTable, ...]:
    """3rd Street in full (every starting hand); 4th and 5th Street by the patterns players know, per amount already
    wagered (controller.par.patterns says how the card sets of a pattern split when they do)."""
    groups = third_street_groups(strategy)
    third = tuple(
        f"{'fold' if m == FOLD else f'raise {m}x'}: {' '.join(sorted(groups.get(m, []), key=_hand_order))}"
        for m in (3, 2, 1, FOLD)
        if groups.get(m)
    )
    actions = {FOLD: "fold", 1: "raise 1x", 2: "raise 2x", 3: "raise 3x"}
    later: list[StrategyTable] = []
    for label, k, table, reached, found in (
        ("4th Street (655a.11(d)): the two cards and the first community card", 3, strategy.fourth, (2, 4), MS_FOURTH),
        ("5th Street (655a.11(f)): the two cards and two community cards", 4, strategy.fifth, (3, 5, 7), MS_FIFTH),
    ):
        f = patterns.features(k)
        which = patterns.classify(f, found)
        everything = np.ones(len(which), dtype=bool)
        for w in reached:
            # What was wagered before matters: folding loses it, so more on the layout raises on less.
            said = patterns.rules(patterns.names(found), which, table[:, w], actions, everything)
            later.append(StrategyTable(f"{label}, {w} units wagered (Ante and Streets so far)", tuple(said)))
    return (StrategyTable("3rd Street (655a.11(b)): the player's two cards", third), *later)


def _hand_order(name: str) -> tuple[int, int, int]:
    return (-_RANKS.index(name[0]), -_RANKS.index(name[1]), name[2:] == "o")


def analyse(
    rules: MississippiStudRules, meters: dict[str, int], others: int = 0
) -> tuple[MainGame, list[WagerSheet], list[str]]:
    """Every wager the configuration offers; the names of those not analysed, with why."""
    main = analyse_main()
    side: list[WagerSheet] = []
    limit = analyse_main(rules.ante_max_cents, _limit(rules))
    if limit.sheet.house_edge != main.sheet.house_edge:
        side.append(replace(limit.sheet, wager="ante_at_limit", title="Ante and Street Wagers at the maximum Ante"))
    if rules.three_card_bonus_paytable:
        side.append(three_card_bonus(rules.three_card_bonus_paytable))
    if rules.six_card_bonus_paytable:
        side.append(six_card_bonus(rules.six_card_bonus_paytable))
    if rules.progressive_paytable:
        side.append(progressive(rules.progressive_paytable, rules.progressive_wager_cents, meters, others))
    if rules.five_card_hand_bonus:
        side.append(five_card_hand_bonus(rules, meters))
    return main, side, []


def _limit(rules: MississippiStudRules) -> int:
    from controller.games.mississippi_stud.hands import payout_limit

    return payout_limit(rules.ante_min_cents)
