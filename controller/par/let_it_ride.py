"""Chapter 643a, Let It Ride Poker: the exact return of the Let It Ride Wagers under the optimal strategy, and of
every optional wager the configuration offers.

Bet Number 3 always rides; Bet Number 1 may be withdrawn on the player's three cards (643a.11(c)), Bet Number 2 on
those and the first community card (643a.11(d)). The hand paid is the five cards, so each decision depends only on
the set of cards seen: for each of the 22,100 three-card and 270,725 four-card sets, with how many bets ride.
Integer sums throughout (whole multiples of a bet, or cents under the 643a.12(g) payout limit): exact rationals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import IntEnum
from fractions import Fraction
from math import comb

import numpy as np
import numpy.typing as npt

from controller.core.money import Odds
from controller.core.rankings import Five, Three
from controller.games.let_it_ride import paytables
from controller.games.let_it_ride.paytables import Amount, MeterShare, ThreeCardProgressiveHand
from controller.games.let_it_ride.rules import LetItRideRules
from controller.par import deals, fixed, hand_bonus, patterns
from controller.par.evaluator import hand_class, pair_rank
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

    def rides(self, cards: list[int], riding: int) -> bool:
        from controller.par.combos import index_unsorted

        index = int(index_unsorted(np.array([cards]))[0])
        return bool(self.bet1[index]) if len(cards) == 3 else bool(self.bet2[index, riding])


@dataclass(frozen=True)
class MainGame:
    sheet: WagerSheet
    strategy: Strategy
    strategy_tables: tuple[StrategyTable, ...]


def analyse_main(letter: str, bet_cents: int | None = None, limit_cents: int | None = None) -> MainGame:
    pay = payoffs(letter, bet_cents, limit_cents)
    unit = 1 if bet_cents is None else bet_cents
    named = outcomes(letter)
    counts4 = deals.counts_by_four(outcome_of_hands(), len(named))
    n3, n4 = comb(52, 3), comb(52, 4)
    v4 = np.zeros((n4, 3), dtype=np.int64)
    d4 = np.zeros((n4, 3), dtype=np.int8)
    for r in (1, 2):
        keep, ride = counts4 @ pay[r], counts4 @ pay[r + 1]
        d4[:, r] = ride > keep  # on a tie the bet is withdrawn: the same return, less at risk
        v4[:, r] = np.maximum(keep, ride)
    ch3 = deals.children(3)
    withdraw, ride = v4[ch3, 1].sum(axis=1), v4[ch3, 2].sum(axis=1)
    d3 = (ride > withdraw).astype(np.int8)
    v3 = np.maximum(withdraw, ride)
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


# -- optional wagers --------------------------------------------------------------------------------------------


def three_card_bonus(letter: str) -> WagerSheet:
    """643a.11(f)(2), paytable 643a.12(c) `letter` on the player's three cards; under A-C a mini-royal pays as the
    straight flush it is (643a.6(c)(1))."""
    table = paytables.THREE_CARD_BONUS[letter]
    counts = deals.three_card_counts()
    out: list[fixed.Outcome] = []
    lose = 0
    for cls in reversed(Three):
        odds = table.rows.get(cls) or (table.rows.get(Three.STRAIGHT_FLUSH) if cls is Three.MINI_ROYAL else None)
        if odds is None:
            lose += int(counts[cls])
        else:
            out.append(fixed.Outcome(cls.name.lower(), str(odds), int(counts[cls]), net_per_unit(odds)))
    out.append(fixed.Outcome("lose", "loses", lose, Fraction(-1)))
    return fixed.sheet(
        "three_card_bonus", "Three Card Bonus Wager", table.citation, out, 22_100, "exact: every three-card hand"
    )


def five_card_bonus(letter: str, wager_cents: int) -> WagerSheet:
    """643a.11(f)(1), paytable 643a.12(b) `letter`: fixed sums on the five-card hand (a pair: tens or better)."""
    table = paytables.FIVE_CARD_BONUS[letter]
    counts = deals.class_counts(5)
    tens_or_better = int(counts[Five.PAIR]) * 5 // 13
    out: list[fixed.Outcome] = []
    lose = 0
    for cls in reversed(Five):
        n = tens_or_better if cls is Five.PAIR else int(counts[cls])
        award = table.rows.get(cls)
        if cls is Five.PAIR:
            lose += int(counts[cls]) - n
        if not isinstance(award, Amount) or award.cents == 0:
            lose += n
            continue
        label = "pair_of_tens_or_better" if cls is Five.PAIR else cls.name.lower()
        # 643a.12(b)'s amounts are the whole sum paid for the wager ("for 1"), as settlement pays them: $2 on a $1
        # wager is $1 won; an amount equal to the wager hands it back (a push).
        out.append(fixed.Outcome(label, f"{award} for 1", n, Fraction(award.cents - wager_cents, wager_cents)))
    out.append(fixed.Outcome("lose", "loses", lose, Fraction(-1)))
    return fixed.sheet(
        "five_card_bonus",
        "Five Card Bonus Wager",
        table.citation,
        out,
        comb(52, 5),
        f"exact: every five-card hand, at the one wager of {wager_cents} cents",
    )


def _rate(rate: float | None) -> Fraction | None:
    return None if rate is None else Fraction(str(rate)) / 100


def _envy(
    schedules: Mapping[int, paytables.AwardTable], size: int, by_hand: Mapping[IntEnum, int], total: int, others: int
) -> tuple[Row, ...]:
    """The envy bonuses (643a.12(d)(5), (e)(5)) a wager of `size` cents earns from `others` other players, per unit
    wagered. Exact by linearity of expectation: each other player holds a qualifying hand with its own chance whatever
    the cards the players share, and each qualifying hand pays once (643a.11(f)(3)(iii)(E), (iv)(E))."""
    if not others:
        return ()
    table = schedules[size]
    per_other = Fraction(0)
    hands = 0
    for hand, n in by_hand.items():
        award = table.award_for(hand)
        if isinstance(award, Amount):
            per_other += Fraction(n, total) * Fraction(award.cents, size)
            hands += n
    # Its probability is one other player's chance of a qualifying hand; the contribution counts them all.
    return (
        Row("envy_bonus", f"{others} other player(s), {table.citation}", Fraction(hands, total), per_other * others),
    )


def three_card_progressive(rules: LetItRideRules, meters: dict[str, int], others: int = 0) -> list[WagerSheet]:
    """643a.11(f)(3)(iii)(D), paytable 643a.12(d)(1): per accepted wager size; a mini-royal in spades apart; the
    Three-Card Envy Bonus for `others` other players."""
    assert rules.three_card_progressive_paytable is not None
    table = paytables.THREE_CARD_PROGRESSIVE[rules.three_card_progressive_paytable]
    counts = deals.three_card_counts()
    by_hand: dict[IntEnum, int] = {
        ThreeCardProgressiveHand.MINI_ROYAL_SPADES: 1,
        ThreeCardProgressiveHand.MINI_ROYAL: int(counts[Three.MINI_ROYAL]) - 1,
        ThreeCardProgressiveHand.STRAIGHT_FLUSH: int(counts[Three.STRAIGHT_FLUSH]),
        ThreeCardProgressiveHand.THREE_OF_A_KIND: int(counts[Three.THREE_OF_A_KIND]),
        ThreeCardProgressiveHand.STRAIGHT: int(counts[Three.STRAIGHT]),
    }
    figures = rules.meter("three_card_progressive")
    return [
        _meter_sheet(
            "three_card_progressive",
            "Three-Card Progressive Payout Wager",
            table,
            by_hand,
            22_100,
            size,
            meters,
            figures.initial_cents or 0,
            _rate(figures.rate_percent),
            "every three-card hand",
            _envy(paytables.THREE_CARD_ENVY, size, by_hand, 22_100, others),
        )
        for size in rules.three_card_progressive_wagers_cents
    ]


def five_card_progressive(rules: LetItRideRules, meters: dict[str, int], others: int = 0) -> list[WagerSheet]:
    """643a.11(f)(3)(iv), the one table of 643a.12(e)(1), on the five-card hand; the Five-Card Envy Bonus for `others`
    other players."""
    counts = deals.class_counts(5)
    by_hand: dict[IntEnum, int] = {cls: int(counts[cls]) for cls in Five}
    figures = rules.meter("five_card_progressive")
    return [
        _meter_sheet(
            "five_card_progressive",
            "Five-Card Progressive Payout Wager",
            paytables.FIVE_CARD_PROGRESSIVE,
            by_hand,
            comb(52, 5),
            size,
            meters,
            figures.initial_cents or 0,
            _rate(figures.rate_percent),
            "every five-card hand",
            _envy(paytables.FIVE_CARD_ENVY, size, by_hand, comb(52, 5), others),
        )
        for size in rules.five_card_progressive_wagers_cents
    ]


def _meter_sheet(
    wager: str,
    title: str,
    table: paytables.AwardTable,
    by_hand: Mapping[IntEnum, int],
    total: int,
    size: int,
    meters: dict[str, int],
    initial: int,
    rate: Fraction | None,
    hands: str,
    envy: tuple[Row, ...],
) -> WagerSheet:
    out: list[fixed.Outcome] = []
    lose = total - sum(by_hand.values())
    for hand, n in sorted(by_hand.items(), key=lambda kv: -int(kv[0])):
        award = table.award_for(hand)
        if award is None:
            lose += n
        elif isinstance(award, MeterShare):
            out.append(fixed.Outcome(hand.name.lower(), str(award), n, level=wager, meter_percent=award.percent))
        elif isinstance(award, Odds):
            out.append(fixed.Outcome(hand.name.lower(), str(award), n, net_per_unit(award)))
    out.append(fixed.Outcome("lose", "loses", lose, Fraction(-1)))
    seeds = {wager: (initial, f"initial {initial} cents, rate of progression {rate and float(rate * 100)} %", rate)}
    notes = () if envy else ("envy bonuses: none without other players; `tablectl par --others N` adds them",)
    sheet = fixed.sheet(wager, title, table.citation, out, total, f"exact: {hands}", size, meters, seeds, notes, envy)
    return replace(sheet, wager=f"{wager}@{size}")


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


def five_card_hand_bonus(rules: LetItRideRules, meters: dict[str, int]) -> list[WagerSheet]:
    """643a.11(f)(3)(v) at 643a.12(f)(1), flush or better on the five cards (643a.7(i)); the Magic Card and Lucky
    Bonus of 643a.12(f)(3) where the Rules Submission pays them. The meter is one amount whatever the wager
    (643a.12(f)(4)), so the return per unit depends on the size: a sheet at the smallest and the largest accepted."""
    figures = rules.meter(hand_bonus.LEVEL)
    initial = figures.initial_cents or 0
    awards: dict[Five, Odds | int] = {}
    for cls in Five:
        award = paytables.FIVE_CARD_HAND_BONUS.award_for(cls)
        if isinstance(award, MeterShare):
            awards[cls] = award.percent
        elif isinstance(award, Odds):
            awards[cls] = award
    citation = paytables.HAND_BONUS_EXTRAS.citation
    extras = []
    if rules.magic_card_bonus:
        odds = paytables.HAND_BONUS_EXTRAS.rows[paytables.HandBonusExtra.MAGIC_CARD]
        extras.append(hand_bonus.magic_card(odds, citation))
    if rules.lucky_bonus:
        odds = paytables.HAND_BONUS_EXTRAS.rows[paytables.HandBonusExtra.LUCKY_BONUS]
        extras.append(hand_bonus.lucky_bonus(odds, citation, rules.seats))
    offer = next(o for o in rules.optional_offers() if o.spot == hand_bonus.LEVEL)
    rate = _rate(figures.rate_percent)
    seed = (
        f"initial {initial:,} cents, reset {figures.reset_cents or 0:,} cents, rate of progression "
        f"{figures.rate_percent} % (643a.12(f)(4))"
    )
    return [
        replace(
            hand_bonus.sheet(
                paytables.FIVE_CARD_HAND_BONUS.citation,
                "643a.11(f)(3)(v)",
                awards,
                size,
                meters.get(hand_bonus.LEVEL, initial),
                seed,
                rate,
                tuple(extras),
            ),
            wager=f"{hand_bonus.LEVEL}@{size}",
        )
        for size in sorted({offer.min_cents, offer.max_cents})
    ]
