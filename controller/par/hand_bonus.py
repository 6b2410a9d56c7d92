"""The Five Card Hand Bonus Wager (655a.7(d)(5), 655a.12(e); 643a.7(i), 643a.12(f)) with its Magic Card and Lucky
Bonus, exactly.

The hand pays on the player's five cards whatever the player decides, so its rows come from the class counts of all
2,598,960 five-card hands; the royal flush and straight flush pay a share of the meter, so the return is a line in
the meter. The Magic Card and the Lucky Bonus are drawn by the table game system (655a.1, 643a.1) as settlement
reads them (controller.core.rng, controller.engine.accounts.draw_bonuses): the Magic Card is one card of the 52,
chosen uniformly and independently of the shuffle, so it is among the player's five cards with probability exactly
5/52 whatever those cards are; the Lucky Bonus position is one of the table's betting positions, occupied or not,
chosen uniformly, so it is the player's with probability exactly 1/seats. Both are independent of the hand and of
each other, which makes the variance exact too.

Both are "an additional payout" (655a.1, 643a.1) that the dealer settles after "Verify that the hand is a winning
hand" (655a.11(i)(3)(i), 643a.11(f)(3)(v)(A)), and settlement pays them only with a winning Five Card Hand Bonus hand
(flush or better, 655a.12(e)(1), 643a.12(f)(1)), besides the hand's own award (their rows stake nothing and pay the
whole "N for 1"). The sheet follows it: a bonus row is the chance of a winning hand AND the draw, so the hit frequency
is the hand's alone. Paid on the draw alone the wager would return about three times what it takes (a house edge of
about -215 % at a 655a table): that reading was refused (docs/par.md), and a note on the sheet says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from math import comb

from controller.core.money import Odds
from controller.core.rankings import Five
from controller.par import deals, fixed
from controller.par.sheet import Row, WagerSheet, net_per_unit

LEVEL = "five_card_hand_bonus"
# Each chapter's text for "paid with a winning hand only": the definition ("an additional payout") and the dealer's
# verification of the winning hand before any Magic Card or Lucky Bonus payout.
WINNING_HAND_ONLY = {"655a": "655a.1, 655a.11(i)(3)(i)", "643a": "643a.1, 643a.11(f)(3)(v)(A)"}
CARDS_IN_HAND = 5  # 655a.1: the player's two cards and three community cards; 643a.1: three and two


@dataclass(frozen=True, slots=True)
class Extra:
    """A Magic Card or Lucky Bonus award: its chance and the whole sum paid per unit wagered ("N for 1")."""

    name: str
    pays: str
    probability: Fraction
    paid: Fraction


def magic_card(odds: Odds, citation: str) -> Extra:
    """The Magic Card among the player's five cards: 5 of the 52 equally likely draws, for every hand (paid with a
    winning one only: `sheet`)."""
    return Extra("magic_card_bonus", f"{odds} on a win ({citation})", Fraction(CARDS_IN_HAND, 52), _whole(odds))


def lucky_bonus(odds: Odds, citation: str, seats: int) -> Extra:
    """The Lucky Bonus position the player's: 1 of the table's `seats` equally likely betting positions."""
    return Extra("lucky_bonus", f"{odds} on a win, 1 in {seats} ({citation})", Fraction(1, seats), _whole(odds))


def _whole(odds: Odds) -> Fraction:
    # Settlement pays odds.winnings(wager) + wager on a row that stakes nothing: the whole "N for 1" sum.
    return net_per_unit(odds) + 1 if odds.kind == "for" else net_per_unit(odds)


def sheet(
    citation: str,
    rule: str,
    awards: Mapping[Five, Odds | int],
    wager_cents: int,
    meter_cents: int,
    seed: str,
    rate: Fraction | None,
    extras: tuple[Extra, ...],
) -> WagerSheet:
    """The wager at `wager_cents` with the meter at `meter_cents`. `awards` maps a hand class to its odds, or to the
    percentage of the meter it pays (the whole sum the player receives, the wager included, as settlement pays it)."""
    total = comb(52, 5)
    outcomes = _outcomes(awards, rule, total)
    losing = outcomes[-1].count
    # Paid only with a winning hand (655a.11(i)(3)(i), 643a.11(f)(3)(v)(A)), the draw independent of the cards.
    hand_wins = Fraction(total - losing, total)
    extra_rows = tuple(
        Row(x.name, x.pays, x.probability * hand_wins, x.probability * hand_wins * x.paid) for x in extras
    )
    base = fixed.sheet(
        LEVEL,
        "Five Card Hand Bonus Wager" + (" with " + " and ".join(_title(x) for x in extras) if extras else ""),
        citation,
        outcomes,
        total,
        "exact: every one of the 2,598,960 five-card hands; the Magic Card and Lucky Bonus from how they are drawn",
        wager_cents,
        {LEVEL: meter_cents},
        {LEVEL: (meter_cents, seed, rate)},
        extra_rows=extra_rows,
    )
    hand_rows = base.rows[: len(outcomes)]
    second = _second_moment(hand_rows, hand_wins, extras)
    notes = list(base.notes)
    progressive = base.progressive
    if progressive is not None and any(v is not None and v < 0 for v in progressive.break_even.values()):
        notes.append("no break-even meter: the wager returns more than it takes at any meter, the meter at 0 included")
        progressive = replace(progressive, break_even=dict.fromkeys(progressive.break_even))
    if extras:
        hand_mean = sum((r.contribution for r in hand_rows), Fraction(0))
        on_the_draw_alone = -(hand_mean + sum((x.probability * x.paid for x in extras), Fraction(0)))
        notes.append(
            f"the Magic Card and Lucky Bonus are paid only with a winning hand ({WINNING_HAND_ONLY[citation[:4]]}: "
            "an additional payout, the winning hand verified first); paid on the draw alone the house edge would be "
            f"{float(on_the_draw_alone):.6%}, a wager returning more than it takes, so that reading was refused "
            "(docs/par.md)"
        )
    return replace(
        base,
        hit_frequency=hand_wins,
        second_moment=second,
        variance_known=True,
        progressive=progressive,
        notes=tuple(notes),
    )


def _outcomes(awards: Mapping[Five, Odds | int], rule: str, total: int) -> list[fixed.Outcome]:
    """Each paying hand class, best first, then the losing hands (always last)."""
    counts = deals.class_counts(5)
    outcomes: list[fixed.Outcome] = []
    losing = total
    for cls in reversed(Five):
        award = awards.get(cls)
        if award is None:
            continue
        n = int(counts[cls])
        losing -= n
        if isinstance(award, int):
            outcomes.append(fixed.Outcome(cls.name.lower(), f"{award}% of meter", n, level=LEVEL, meter_percent=award))
        else:
            outcomes.append(fixed.Outcome(cls.name.lower(), str(award), n, net_per_unit(award)))
    outcomes.append(fixed.Outcome("lose", f"loses ({rule})", losing, Fraction(-1)))
    return outcomes


def _second_moment(hand_rows: tuple[Row, ...], hand_wins: Fraction, extras: tuple[Extra, ...]) -> Fraction:
    """E[net^2] exactly: net = hand + W x sum of B_x x paid_x, W the hand winning and B_x independent Bernoulli
    draws."""
    hand_square = sum((r.contribution**2 / r.probability for r in hand_rows if r.probability), Fraction(0))
    # E[hand's net | the hand wins] x P(win): what the hand nets on the hands that also carry the bonuses.
    hand_when_winning = sum((r.contribution for r in hand_rows if r.name != "lose"), Fraction(0))
    second = hand_square
    for i, x in enumerate(extras):
        second += hand_wins * x.probability * x.paid**2 + 2 * hand_when_winning * x.probability * x.paid
        second += sum(
            (2 * hand_wins * x.probability * x.paid * y.probability * y.paid for y in extras[i + 1 :]), Fraction(0)
        )
    return second


def _title(x: Extra) -> str:
    return "Magic Card" if x.name == "magic_card_bonus" else "Lucky Bonus"
