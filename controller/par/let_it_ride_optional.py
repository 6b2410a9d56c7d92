"""Chapter 643a, Let It Ride Poker: the exact return of each optional wager the configuration offers (643a.11(f)):
the Three Card and Five Card Bonus Wagers, the Three-Card and Five-Card Progressive Payout Wagers with their envy
bonuses, the Five Card Hand Bonus. Each depends on the cards alone, never on a decision: let_it_ride.py's analysis
of the Let It Ride Wagers sets them beside the main game."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from enum import IntEnum
from fractions import Fraction
from math import comb

from controller.core.invariant import present
from controller.core.money import Odds
from controller.core.rankings import Five, Three
from controller.games.let_it_ride import paytables
from controller.games.let_it_ride.paytables import Amount, MeterShare, ThreeCardProgressiveHand
from controller.games.let_it_ride.rules import LetItRideRules
from controller.par import deals, fixed, hand_bonus
from controller.par.sheet import Row, WagerSheet, net_per_unit


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
    letter = present(rules.three_card_progressive_paytable, "the 643a.12(d)(1) paytable of an offered wager")
    table = paytables.THREE_CARD_PROGRESSIVE[letter]
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
