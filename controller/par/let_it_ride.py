"""Chapter 643a, Let It Ride Poker: the exact return of the Let It Ride Wagers under the optimal strategy, and of
every optional wager the configuration offers.

Bet Number 3 always rides; Bet Number 1 may be withdrawn on the player's three cards (643a.11(c)), Bet Number 2 on
those and the first community card (643a.11(d)). The hand paid is the five cards, so each decision depends only on
the set of cards seen: for each of the 22,100 three-card and 270,725 four-card sets, with how many bets ride.
Integer sums throughout (whole multiples of a bet, or cents under the 643a.12(g) payout limit): exact rationals.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache
from math import comb

import numpy as np
import numpy.typing as npt

from controller.core.rankings import Five
from controller.games.let_it_ride import paytables
from controller.games.let_it_ride.rules import LetItRideRules
from controller.par import deals, patterns
from controller.par.evaluator import hand_class, pair_rank
from controller.par.let_it_ride_optional import (
    five_card_bonus,
    five_card_hand_bonus,
    five_card_progressive,
    three_card_bonus,
    three_card_progressive,
)
from controller.par.sheet import Decision, Row, StrategyTable, WagerSheet, net_per_unit

IntArray = npt.NDArray[np.int64]
LOSE = 0
_AFTER_THREE = 49 * 48


def outcomes(letter: str) -> tuple[tuple[str, str], ...]:
    table = paytables.LET_IT_RIDE[letter]
    return (
        ("lose", "loses (643a.11(e))"),
        ("pair_of_tens_or_better", str(table.rows[Five.PAIR])),
        *((c.name.lower(), str(table.rows[c])) for c in list(Five)[2:]),
    )


def outcome_of_hands() -> IntArray:
    """643a.12(a): 1 for a pair of tens or better, 2.. for two pair and up, 0 for a losing hand."""
    values = deals.five_card_values()
    cls = hand_class(values).astype(np.int64)
    out = np.where(cls >= Five.TWO_PAIR, cls, LOSE)
    return np.where((cls == Five.PAIR) & (pair_rank(values) >= 10), 1, out)


def payoffs(letter: str, bet_cents: int | None, limit_cents: int | None) -> IntArray:
    """payoffs[r, o]: the net result of r riding bets on outcome o (per bet, or cents at bet_cents with the limit)."""
    table = paytables.LET_IT_RIDE[letter]
    unit = 1 if bet_cents is None else bet_cents
    out = np.zeros((4, 10), dtype=np.int64)
    for r in range(1, 4):
        out[r, LOSE] = -r * unit
        for o, cls in enumerate(list(Five)[1:], start=1):
            won = int(net_per_unit(table.rows[cls]) * r * unit)
            out[r, o] = won if limit_cents is None or bet_cents is None else min(won, limit_cents)
    return out


@dataclass(frozen=True)
class Strategy:
    """bet1[s3]: 1 to let Bet Number 1 ride on three-card set s3; bet2[s4, r]: 1 to let Bet Number 2 ride on
    four-card set s4 with r bets riding (1 or 2). Set indices are colex (controller.par.combos)."""

    bet1: npt.NDArray[np.int8]
    bet2: npt.NDArray[np.int8]

    def __post_init__(self) -> None:
        # Shared: analyse_main is made once a process, and every sheet and simulated player reads it.
        self.bet1.flags.writeable = self.bet2.flags.writeable = False

    def rides(self, cards: list[int], riding: int) -> bool:
        from controller.par.combos import index_unsorted

        index = int(index_unsorted(np.array([cards]))[0])
        return bool(self.bet1[index]) if len(cards) == 3 else bool(self.bet2[index, riding])


@dataclass(frozen=True)
class MainGame:
    sheet: WagerSheet
    strategy: Strategy
    strategy_tables: tuple[StrategyTable, ...]


def _backward(
    pay: IntArray, counts4: IntArray, ch3: IntArray
) -> tuple[IntArray, npt.NDArray[np.int8], npt.NDArray[np.int8]]:
    """Backward induction: Bet Number 2 on every four-card set (643a.11(d)) with one or two bets riding, then Bet
    Number 1 on every three-card set (643a.11(c)): the summed results and the choices (1 rides, 0 withdraws)."""
    v4 = np.zeros((comb(52, 4), 3), dtype=np.int64)
    d4 = np.zeros((comb(52, 4), 3), dtype=np.int8)
    for r in (1, 2):
        keep, ride = counts4 @ pay[r], counts4 @ pay[r + 1]
        d4[:, r] = ride > keep  # on a tie the bet is withdrawn: the same return, less at risk
        v4[:, r] = np.maximum(keep, ride)
    withdraw, ride = v4[ch3, 1].sum(axis=1), v4[ch3, 2].sum(axis=1)
    d3 = (ride > withdraw).astype(np.int8)
    return np.maximum(withdraw, ride), d3, d4


# Made once a process for each set of arguments (the strategy's arrays are read-only): every sheet and player shares it.
@cache
def analyse_main(letter: str, bet_cents: int | None = None, limit_cents: int | None = None) -> MainGame:
    pay = payoffs(letter, bet_cents, limit_cents)
    unit = 1 if bet_cents is None else bet_cents
    named = outcomes(letter)
    counts4 = deals.counts_by_four(outcome_of_hands(), len(named))
    n3, n4 = comb(52, 3), comb(52, 4)
    ch3 = deals.children(3)
    v3, d3, d4 = _backward(pay, counts4, ch3)
    total = n3 * _AFTER_THREE
    expected = Fraction(int(v3.sum()), total * unit)
    reach4 = np.zeros((n4, 3), dtype=np.int64)
    for choice in (0, 1):
        chosen = d3 == choice
        reach4[:, 1 + choice] += np.bincount(ch3[chosen].ravel(), minlength=n4)
    hits = np.zeros(len(named), dtype=np.int64)
    won = [0] * len(named)
    squared = 0  # sum over deals of the net result squared, for the variance
    wagered = 0
    shares = {("bet1", 0): int((d3 == 0).sum()) * _AFTER_THREE, ("bet1", 1): int((d3 == 1).sum()) * _AFTER_THREE}
    for r in (1, 2):
        for choice in (0, 1):
            chosen = d4[:, r] == choice
            riding = r + choice
            by_outcome = reach4[chosen, r] @ counts4[chosen]
            shares[("bet2", choice)] = shares.get(("bet2", choice), 0) + int(by_outcome.sum())
            hits += by_outcome
            wagered += int(by_outcome.sum()) * riding
            for o in range(len(named)):
                won[o] += int(by_outcome[o]) * int(pay[riding, o])
                squared += int(by_outcome[o]) * int(pay[riding, o]) ** 2
    rows = tuple(
        Row(name, pays, Fraction(int(hits[o]), total), Fraction(won[o], total * unit))
        for o, (name, pays) in reversed(list(enumerate(named)))
    )
    if sum(r.contribution for r in rows) != expected:
        raise AssertionError("the forward pass disagrees with the backward induction")
    points = {"bet1": "Bet Number 1 (643a.11(c))", "bet2": "Bet Number 2 (643a.11(d))"}
    decisions = tuple(
        Decision(points[bet], "let it ride" if choice else "withdraw", Fraction(shares[(bet, choice)], total))
        for bet in ("bet1", "bet2")
        for choice in (1, 0)
    )
    sheet = WagerSheet(
        wager="bet",
        title="Let It Ride Wagers (Bet Number 1, 2 and 3), optimal strategy",
        paytable=paytables.LET_IT_RIDE[letter].citation,
        unit="per bet (one of the three equal bets)",
        house_edge=-expected,
        rows=rows,
        hit_frequency=sum((r.probability for r in rows[:-1]), Fraction(0)),
        method="exact: backward induction over every 3- and 4-card set and all 51,979,200 deals",
        average_wager=Fraction(wagered, total),
        decisions=decisions,
        second_moment=Fraction(squared, total * unit * unit),
        notes=()
        if bet_cents is None
        else (f"at bets of {bet_cents} cents with the 643a.12(g) payout limit of {limit_cents} cents",),
    )
    strategy = Strategy(d3, d4)
    return MainGame(sheet, strategy, strategy_tables(strategy))


_RANKS = "23456789TJQKA"


def _describe(cards: list[int]) -> str:
    return " ".join(_RANKS[c % 13] + "cdhs"[c // 13] for c in cards)


def strategy_tables(strategy: Strategy) -> tuple[StrategyTable, ...]:
    """The sets the strategy lets ride on, grouped as players learn them (by the pattern of ranks and suits)."""
    from controller.par.combos import combinations

    groups: dict[str, int] = {}
    for index, cards in enumerate(combinations(3).tolist()):
        if strategy.bet1[index]:
            groups[_pattern(cards)] = groups.get(_pattern(cards), 0) + 1
    first = tuple(f"let it ride on {pattern} ({n} of 22,100 sets)" for pattern, n in sorted(groups.items()))
    f = patterns.features(4)
    which = patterns.classify(f, patterns.LIR_SECOND)
    everything = np.ones(len(which), dtype=bool)
    actions = {1: "let it ride", 0: "withdraw"}
    second = []
    # Bet Number 3 and, if it rides, Bet Number 1 are on the layout: the rule is the same either way (the hand pays
    # each riding bet alike), which the second table shows when it is not.
    for riding in (2, 1):
        said = patterns.rules(patterns.names(patterns.LIR_SECOND), which, strategy.bet2[:, riding], actions, everything)
        second.append((riding, tuple(said)))
    tables = [
        StrategyTable(
            "Bet Number 1 (643a.11(c)): the player's three cards", (*first, "otherwise withdraw Bet Number 1")
        ),
    ]
    if second[0][1] == second[1][1]:
        tables.append(
            StrategyTable("Bet Number 2 (643a.11(d)): the three cards and the first community card", second[0][1])
        )
    else:
        tables.extend(
            StrategyTable(f"Bet Number 2 (643a.11(d)), {riding} bets riding", said) for riding, said in second
        )
    return tuple(tables)


def _pattern(cards: list[int]) -> str:
    ranks = sorted((c % 13 for c in cards), reverse=True)
    suited = len({c // 13 for c in cards}) == 1
    if len(set(ranks)) < 3:
        pair = max(r for r in ranks if ranks.count(r) > 1)
        return "three of a kind" if len(set(ranks)) == 1 else ("a pair of tens or better" if pair >= 8 else "a pair")
    return ("suited " if suited else "") + "".join(_RANKS[r] for r in ranks)


def analyse(
    rules: LetItRideRules, meters: dict[str, int], others: int = 0
) -> tuple[MainGame, list[WagerSheet], list[str]]:
    main = analyse_main(rules.let_it_ride_paytable)
    side: list[WagerSheet] = []
    if rules.payout_limit_cents is not None:
        limited = analyse_main(rules.let_it_ride_paytable, rules.bet_max_cents, rules.payout_limit_cents)
        side.append(replace(limited.sheet, wager="bet_at_limit", title="Let It Ride Wagers at the maximum bet"))
    if rules.five_card_bonus and rules.five_card_bonus_paytable:
        side.append(five_card_bonus(rules.five_card_bonus_paytable, rules.five_card_bonus_wager_cents))
    if rules.three_card_bonus and rules.three_card_bonus_paytable:
        side.append(three_card_bonus(rules.three_card_bonus_paytable))
    if rules.three_card_progressive and rules.three_card_progressive_paytable:
        side.extend(three_card_progressive(rules, meters, others))
    if rules.five_card_progressive:
        side.extend(five_card_progressive(rules, meters, others))
    if rules.five_card_hand_bonus:
        side.extend(five_card_hand_bonus(rules, meters))
    return main, side, []
