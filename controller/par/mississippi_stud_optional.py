"""Chapter 655a, Mississippi Stud: the exact return of each optional wager the configuration offers (655a.11(i)): the
Three Card Bonus, the Six Card Bonus, the progressive payout wager and the Five Card Hand Bonus. Each depends on the
cards alone, never on a decision: mississippi_stud.py's analysis of the Ante and Street Wagers sets them beside the
main game."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from math import comb

from controller.core.paytable import MeterShare
from controller.core.rankings import Five, Six, Three
from controller.games.mississippi_stud import paytables
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.par import deals, hand_bonus
from controller.par.sheet import (
    MeterLine,
    Progressive,
    Row,
    WagerSheet,
    net_per_unit,
)


def _rows_from_counts(
    named: list[tuple[str, str, int, Fraction]], total: int
) -> tuple[tuple[Row, ...], Fraction, Fraction]:
    """Rows (name, pays, count, net per unit) -> rows, expected net return, hit frequency."""
    rows = tuple(Row(name, pays, Fraction(n, total), Fraction(n, total) * net) for name, pays, n, net in named)
    return (
        rows,
        sum((r.contribution for r in rows), Fraction(0)),
        sum((r.probability for r in rows if r.contribution > 0), Fraction(0)),
    )


def three_card_bonus(letter: str) -> WagerSheet:
    """655a.11(i)(2) on the three community cards, paytable 655a.12(d) `letter`."""
    paytable = paytables.THREE_CARD_BONUS[letter]
    counts = deals.three_card_counts()
    named = [
        (cls.name.lower(), str(paytable.rows[cls]), int(counts[cls]), net_per_unit(paytable.rows[cls]))
        for cls in reversed(Three)
        if cls in paytable.rows
    ]
    losing = sum(int(counts[c]) for c in Three if c not in paytable.rows)
    named.append(("lose", "loses (655a.11(i)(2)(ii))", losing, Fraction(-1)))
    rows, expected, hit = _rows_from_counts(named, 22_100)
    return WagerSheet(
        "three_card_bonus",
        "Three Card Bonus Wager",
        paytable.citation,
        "per unit wagered",
        -expected,
        rows,
        hit,
        "exact: every one of the 22,100 three-card hands",
    )


def six_card_bonus(letter: str) -> WagerSheet:
    """655a.11(i)(4): the player's two cards and four bonus cards, any 6 of the deck, paytable 655a.12(f) `letter`."""
    paytable = paytables.SIX_CARD_BONUS[letter]
    counts = deals.class_counts(6)
    total = comb(52, 6)
    six_card_royals = 4  # 9-T-J-Q-K-A of one suit (655a.6(d)(1)): one per suit, each also a royal flush
    by_class = {Six(int(c)): int(n) for c, n in enumerate(counts)}
    by_class[Six.ROYAL_FLUSH] -= six_card_royals
    by_class[Six.SIX_CARD_ROYAL_FLUSH] = six_card_royals
    named: list[tuple[str, str, int, Fraction]] = []
    for cls in reversed(Six):
        n = by_class[cls]
        odds = paytable.rows.get(cls)
        if cls is Six.SIX_CARD_ROYAL_FLUSH and odds is None:
            odds, n = paytable.rows[Six.ROYAL_FLUSH], n  # A-D: it pays as a royal flush (655a.6(d)(2))
            named.append(("six_card_royal_flush", f"{odds} (as a royal flush)", n, net_per_unit(odds)))
            continue
        if odds is None:
            continue
        if cls is Six.SIX_CARD_ROYAL_FLUSH and letter in paytables.SIX_CARD_ROYAL_DIAMONDS:
            diamonds = paytables.SIX_CARD_ROYAL_DIAMONDS[letter].rows[cls]
            named.append(("six_card_royal_flush_diamonds", str(diamonds), 1, net_per_unit(diamonds)))
            n -= 1
        named.append((cls.name.lower(), str(odds), n, net_per_unit(odds)))
    losing = sum(by_class[c] for c in Six if c not in paytable.rows and c is not Six.SIX_CARD_ROYAL_FLUSH)
    named.append(("lose", "loses (655a.11(i)(4)(ii))", losing, Fraction(-1)))
    rows, expected, hit = _rows_from_counts(named, total)
    return WagerSheet(
        "six_card_bonus",
        "Six Card Bonus Wager",
        paytable.citation,
        "per unit wagered",
        -expected,
        rows,
        hit,
        "exact: every one of the 20,358,520 six-card sets",
    )


def progressive(letter: str, wager_cents: int, meters: dict[str, int], others: int) -> WagerSheet:
    """655a.11(i)(1): the five-card hand whatever the player decides, paytable 655a.12(c)(1) `letter`; the return is
    a line in each meter. Envy Bonuses (655a.12(c)(5)) are added for `others` other players: by linearity of
    expectation each other player's hand adds its own chance of a qualifying hand, whatever the shared cards."""
    table = paytables.PROGRESSIVE[letter]
    counts = deals.class_counts(5)
    total = comb(52, 5)
    levels = paytables.PROGRESSIVE_METERS[letter]
    seeds = {level: for_1 * wager_cents for level, (for_1, _rate) in levels.items()}
    at = {level: meters.get(level, seeds[level]) for level in levels}
    named: list[tuple[str, str, int, Fraction]] = []
    base = Fraction(0)
    slope: dict[str, Fraction] = dict.fromkeys(levels, Fraction(0))
    for cls in reversed(Five):
        award = table.get(cls)
        p = Fraction(int(counts[cls]), total)
        if award is None:
            base -= p
            continue
        if isinstance(award, MeterShare):
            net = Fraction(at[award.level] * award.percent, 100 * wager_cents) - 1
            slope[award.level] += p * Fraction(award.percent, 100 * wager_cents)
            base -= p
        else:
            net = net_per_unit(award)
            base += p * net
        named.append((cls.name.lower(), str(award), int(counts[cls]), net))
    losing = sum(int(counts[c]) for c in Five if c not in table)
    named.append(("lose", "loses (655a.11(i)(1))", losing, Fraction(-1)))
    envy = paytables.ENVY_BONUS.get(wager_cents, {})
    envy_per_other = sum(
        (Fraction(int(counts[c]), total) * Fraction(cents, wager_cents) for c, cents in envy.items()), Fraction(0)
    )
    rows, expected, hit = _rows_from_counts(named, total)
    if others:
        # Its probability is one other player's chance of a qualifying hand; the contribution counts them all.
        qualifying = sum(int(counts[c]) for c in envy)
        envy_row = Row(
            "envy_bonus",
            f"655a.12(c)(5), {others} other player(s)",
            Fraction(qualifying, total),
            envy_per_other * others,
        )
        rows = (*rows, envy_row)
        expected += envy_per_other * others
    prog = _meter_lines(levels, base + envy_per_other * others, slope, at, wager_cents, expected)
    return WagerSheet(
        "progressive",
        "Progressive Payout Wager",
        f"655a.12(c)(1) paytable {letter}",
        f"per {wager_cents}-cent wager",
        -expected,
        rows,
        hit,
        "exact: every one of the 2,598,960 five-card hands",
        progressive=prog,
        variance_known=not others,
    )


def _meter_lines(
    levels: Mapping[str, tuple[int, int]],
    base: Fraction,
    slope: dict[str, Fraction],
    at: dict[str, int],
    wager_cents: int,
    expected: Fraction,
) -> Progressive:
    """The return as a line in each meter (655a.12(c)(3)) from `base`, and each level's break-even with the others
    held at their values."""
    lines = tuple(
        MeterLine(
            level,
            base,
            slope[level],
            f"seed and reseed {levels[level][0]:,} for 1, primary rate {levels[level][1]} % (655a.12(c)(3))",
            Fraction(levels[level][1], 100),
        )
        for level in levels
    )
    break_even = {
        line.level: None
        if line.slope == 0
        else -(base + sum(slope[o] * at[o] for o in levels if o != line.level)) / line.slope
        for line in lines
    }
    return Progressive(
        wager_cents,
        lines,
        at,
        expected,
        break_even,
        ("meters in cents; each level's break-even holds the others at their values",),
    )


def five_card_hand_bonus(rules: MississippiStudRules, meters: dict[str, int]) -> WagerSheet:
    """655a.11(i)(3): the player's five cards at 655a.12(e)(1), the meter seeded at $10,000 for 1 of the wager
    (655a.12(e)(4)); the Magic Card and Lucky Bonus of 655a.12(e)(3) where the Rules Submission pays them."""
    size = rules.five_card_hand_bonus_wager_cents
    seed = paytables.FIVE_CARD_HAND_BONUS_SEED_FOR_1 * size
    awards = {
        cls: award.percent if isinstance(award, MeterShare) else award
        for cls, award in paytables.FIVE_CARD_HAND_BONUS.items()
    }
    extras = []
    if rules.magic_card_bonus:
        extras.append(hand_bonus.magic_card(paytables.MAGIC_CARD, "655a.12(e)(3)"))
    if rules.lucky_bonus:
        extras.append(hand_bonus.lucky_bonus(paytables.LUCKY_BONUS, "655a.12(e)(3)", rules.seats))
    return hand_bonus.sheet(
        "655a.12(e)(1)",
        "655a.11(i)(3)",
        awards,
        size,
        meters.get(hand_bonus.LEVEL, seed),
        f"seed {paytables.FIVE_CARD_HAND_BONUS_SEED_FOR_1:,} for 1, reseed "
        f"{paytables.FIVE_CARD_HAND_BONUS_RESEED}, primary rate {paytables.FIVE_CARD_HAND_BONUS_PRIMARY_PERCENT} %, "
        f"reserve {paytables.FIVE_CARD_HAND_BONUS_RESERVE_PERCENT} % (655a.12(e)(4))",
        Fraction(paytables.FIVE_CARD_HAND_BONUS_PRIMARY_PERCENT, 100),
        tuple(extras),
    )
