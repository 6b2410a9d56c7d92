"""Chapter 683a, Cajun Stud: the exact return of the Ante and Raise Wagers under the optimal strategy, and of every
optional wager the configuration offers (Pocket Bonus, Board Bonus, Lo Ball, All-Six Bonus).

683a.11 asks for a Raise Wager of one, two or three times the Ante, or a fold, three times: on the player's two
cards (683a.11(b)), then with the first community card face up (683a.11(c), (d)), then the second (683a.11(e), (f));
683a.11(h) pays the five cards. What the player knows at each decision is only the set of cards seen, so the game is
solved by the solver Mississippi Stud uses (controller.par.stud): backward induction over every 4-, 3- and 2-card set
and each amount already wagered, and a forward pass over all 155,937,600 deals that must agree. The All-Six Bonus
cards (683a.8(c)) are unseen by the player until settlement, so they change no decision and no probability.

683a.12(a) pays two pair 3 to 2 under paytables B and C, so the main game is summed in half-Antes: every sum stays an
integer and every figure an exact rational. With the 683a.12(f) payout limit it is summed in cents.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum
from fractions import Fraction
from functools import cache
from math import comb

import numpy as np
import numpy.typing as npt

from controller.core.invariant import InvariantBroken, present
from controller.core.money import Odds
from controller.core.rankings import Five, Six, Three
from controller.games.cajun_stud.paytables import (
    ALL_SIX_BONUS,
    ANTE_AND_RAISE,
    BOARD_BONUS,
    LO_BALL,
    POCKET_BONUS,
    ChapterPaytable,
)
from controller.games.cajun_stud.rankings import AllSix, AnteHand, LoBall, Pocket
from controller.games.cajun_stud.rules import CajunStudRules
from controller.par import combos, deals, patterns, stud
from controller.par.evaluator import hand_class, pair_rank
from controller.par.mississippi_stud import third_street_groups
from controller.par.patterns import MS_FIFTH, MS_FOURTH
from controller.par.sheet import Row, StrategyTable, WagerSheet, net_per_unit
from controller.par.stud import FOLD, LOSE, Strategy

IntArray = npt.NDArray[np.int64]

HALF_ANTES = 2  # the per-Ante analysis counts in half-Antes: 3 to 2 on two pair stays whole
# Outcomes of a hand played to the end (683a.11(h)), in the order of the columns of the count tables.
PAID: tuple[AnteHand, ...] = tuple(h for h in AnteHand if h >= AnteHand.PAIR_OF_JACKS_OR_BETTER)
POINTS = {
    1: "first Raise Wager (683a.11(b))",
    2: "second Raise Wager (683a.11(d))",
    3: "third Raise Wager (683a.11(f))",
}


def outcome_names(letter: str) -> list[tuple[str, str]]:
    """(name, pays) per outcome column: lose, push, then each paying row of 683a.12(a) paytable `letter`."""
    table = ANTE_AND_RAISE[letter]
    return [
        ("lose", "loses (683a.11(h)(2))"),
        ("pair_of_6s_to_10s", "push (683a.12(a))"),
        *((h.name.lower(), str(table.row(h))) for h in PAID),
    ]


def payoffs(letter: str, ante_cents: int | None = None, limit_cents: int | None = None) -> IntArray:
    """payoffs[w, o]: the net result of w Antes' worth of Ante and Raise Wagers on outcome o, in half-Antes when
    ante_cents is None, else in cents with the 683a.12(f) aggregate limit on what is paid."""
    # Five.TWO_PAIR .. ROYAL_FLUSH are AnteHand.TWO_PAIR .. ROYAL_FLUSH: controller.par.stud's columns 3 .. 10.
    unit = HALF_ANTES if ante_cents is None else ante_cents
    table = np.zeros((11, 2 + len(PAID)), dtype=np.int64)
    for w in range(1, 11):
        table[w, LOSE] = -w * unit
        for o, hand in enumerate(PAID, start=2):
            row = ANTE_AND_RAISE[letter].row(hand)
            if not isinstance(row, Odds):  # every Ante and Raise row pays odds (683a.12(a))
                raise InvariantBroken(f"683a.12(a) paytable {letter}, {hand.name}: odds, not {row}")
            won = net_per_unit(row) * w * unit
            if won.denominator != 1:
                raise ValueError(f"{row} on {w * unit} is not a whole number of units")  # a bug, never the input
            table[w, o] = int(won) if limit_cents is None else min(int(won), limit_cents)
    return table


@dataclass(frozen=True)
class MainGame:
    sheet: WagerSheet
    strategy: Strategy  # third/fourth/fifth: the first, second and third Raise Wager decisions
    strategy_tables: tuple[StrategyTable, ...]


@cache
def analyse_main(
    letter: str, ante_cents: int | None = None, limit_cents: int | None = None, ties: stud.Ties = "less"
) -> MainGame:
    """The Ante and Raise Wagers under 683a.12(a) paytable `letter` and the strategy that maximises the player's
    expected result (per Ante, or in cents at `ante_cents` with the payout limit), solved by controller.par.stud as
    Mississippi Stud is; `ties` as there ("less": fold or the smaller Raise on an exact tie, "more": the larger).
    Made once a process for each set of arguments (its strategy read-only, controller.par.stud)."""
    labels = stud.Labels(
        outcomes=tuple(outcome_names(letter)),
        points=(POINTS[1], POINTS[2], POINTS[3]),
        fold="forfeits the Ante and the Raise Wagers made (683a.11(b), (d), (f))",
        title="Ante and Raise Wagers, optimal strategy",
        paytable=ANTE_AND_RAISE[letter].citation,
        notes=()
        if ante_cents is None
        else (f"at an Ante of {ante_cents} cents with the 683a.12(f) payout limit of {limit_cents} cents",),
    )
    unit = HALF_ANTES if ante_cents is None else ante_cents
    solved = stud.solve(payoffs(letter, ante_cents, limit_cents), unit, labels, ties)
    return MainGame(solved.sheet, solved.strategy, strategy_tables(solved.strategy, solved.reached))


# -- the strategy in words --------------------------------------------------------------------------------------

_RANKS = "23456789TJQKA"


def _hand_order(name: str) -> tuple[int, int, bool]:
    return (-_RANKS.index(name[0]), -_RANKS.index(name[1]), name[2:] == "o")


def strategy_tables(strategy: Strategy, reached: tuple[set[int], set[int]]) -> tuple[StrategyTable, ...]:
    """The first Raise Wager for every starting hand; the second and third by the patterns players know (a pair of
    6s or better is at least a push here too, so Mississippi Stud's patterns fit), once per amount already wagered
    that the strategy reaches: folding forfeits what is on the layout, so more on it raises on less."""
    groups = third_street_groups(strategy)
    first = tuple(
        f"{'fold' if m == FOLD else f'raise {m}x'}: {' '.join(sorted(groups[m], key=_hand_order))}"
        for m in (3, 2, 1, FOLD)
        if groups.get(m)
    )
    actions = {FOLD: "fold", 1: "raise 1x", 2: "raise 2x", 3: "raise 3x"}
    later: list[StrategyTable] = []
    for label, k, table, at, found in (
        (
            "Second Raise Wager (683a.11(d)): the two cards and the first community card",
            3,
            strategy.fourth,
            0,
            MS_FOURTH,
        ),
        ("Third Raise Wager (683a.11(f)): the two cards and two community cards", 4, strategy.fifth, 1, MS_FIFTH),
    ):
        which = patterns.classify(patterns.features(k), found)
        everything = np.ones(len(which), dtype=bool)
        for w in sorted(reached[at]):
            said = patterns.rules(patterns.names(found), which, table[:, w], actions, everything)
            later.append(StrategyTable(f"{label}, {w} Antes wagered (Ante and Raise Wagers so far)", tuple(said)))
    return (StrategyTable("First Raise Wager (683a.11(b)): the player's two cards", first), *later)


# -- the optional wagers ----------------------------------------------------------------------------------------


def _by_rows(
    wager: str,
    title: str,
    table: ChapterPaytable,
    counts: dict[IntEnum, int],
    total: int,
    lose_rule: str,
    method: str,
    extra: tuple[tuple[str, str, int, Fraction], ...] = (),
) -> WagerSheet:
    """A wager settled by its row of a 683a.12 table (as settlement's _by_row does): odds win, "Push" and "Loss" rows
    are what they say, and a hand on no row loses."""
    named = list(extra)
    losing = 0
    for hand in sorted(counts, reverse=True):
        n, row = counts[hand], table.row(hand)
        if isinstance(row, Odds):
            named.append((hand.name.lower(), str(row), n, net_per_unit(row)))
        elif row == "push":
            named.append((hand.name.lower(), "push", n, Fraction(0)))
        else:
            losing += n
    named.append(("lose", f"loses ({lose_rule})", losing, Fraction(-1)))
    if sum(n for _, _, n, _ in named) != total:
        raise AssertionError(f"{wager}: the rows do not count every hand once")  # a bug, never the input
    rows = tuple(Row(name, pays, Fraction(n, total), Fraction(n, total) * net) for name, pays, n, net in named if n)
    return WagerSheet(
        wager,
        title,
        table.citation,
        "per unit wagered",
        -sum((r.contribution for r in rows), Fraction(0)),
        rows,
        sum((r.probability for r in rows if r.contribution > 0), Fraction(0)),
        method,
    )


def pocket_bonus(letter: str) -> WagerSheet:
    """683a.11(i)(1): the player's two cards, 683a.6(c), paytable 683a.12(b) `letter`."""
    two = combos.combinations(2).astype(np.int64)
    ranks, suits = two % 13, two // 13
    low, high = ranks.min(axis=1), ranks.max(axis=1)
    ace_face = (high == 12) & (low >= 9) & (low <= 11)  # an ace with a jack, queen or king
    cls = np.where(
        low == high,
        np.where(high == 12, Pocket.PAIR_OF_ACES, Pocket.PAIR),
        np.where(ace_face, np.where(suits[:, 0] == suits[:, 1], Pocket.SUITED_ACE, Pocket.UNSUITED_ACE), 0),
    )
    counts: dict[IntEnum, int] = {h: int((cls == h).sum()) for h in Pocket}
    return _by_rows(
        "pocket_bonus",
        "Pocket Bonus Wager",
        POCKET_BONUS[letter],
        counts,
        comb(52, 2),
        "683a.11(i)(1)(i)",
        "exact: every one of the 1,326 two-card hands",
    )


def board_bonus(letter: str) -> WagerSheet:
    """683a.11(i)(2): the three community cards, 683a.6(d), paytable 683a.12(c) `letter`."""
    counts = deals.three_card_counts()
    return _by_rows(
        "board_bonus",
        "Board Bonus Wager",
        BOARD_BONUS[letter],
        {c: int(counts[c]) for c in Three},
        comb(52, 3),
        "683a.11(i)(2)(i)",
        "exact: every one of the 22,100 three-card hands",
    )


def lo_ball(letter: str) -> WagerSheet:
    """683a.11(i)(3): the five cards form no 683a.6(b) hand and are named by their highest card (an ace plays high
    but in a straight, 683a.6(a)), paytable 683a.12(d) `letter`."""
    values = deals.five_card_values()
    cls = hand_class(values)
    top = pair_rank(values)  # the first tie-break rank: a high-card hand's highest card
    counts: dict[IntEnum, int] = {LoBall.FORMS_POKER_HAND: int((cls != Five.HIGH_CARD).sum())}
    for hand in LoBall:
        if hand is not LoBall.FORMS_POKER_HAND:
            counts[hand] = int(((cls == Five.HIGH_CARD) & (top == hand.value)).sum())
    return _by_rows(
        "lo_ball",
        "Lo Ball Wager",
        LO_BALL[letter],
        counts,
        comb(52, 5),
        "683a.11(i)(3)(i)",
        "exact: every one of the 2,598,960 five-card hands",
    )


def all_six_bonus(letter: str) -> WagerSheet:
    """683a.11(i)(4): the player's two cards and the four All-Six Bonus cards, any 6 of the deck, 683a.6(e),
    paytable 683a.12(e) `letter`. A six-card royal flush (9 to A of a suit, 683a.6(e)(1)) holds a royal flush: under
    A-D, which list no six-card row, it pays as one (as settlement pays it)."""
    table = ALL_SIX_BONUS[letter]
    by_five = _six_card_classes()
    counts: dict[IntEnum, int] = {AllSix(int(c)): int(n) for c, n in enumerate(by_five)}
    if table.row(AllSix.SIX_CARD_ROYAL_FLUSH_DIAMONDS) is not None:
        counts[AllSix.ROYAL_FLUSH] -= 4  # one six-card royal per suit (683a.6(e)(1))
        counts[AllSix.SIX_CARD_ROYAL_FLUSH_DIAMONDS] = 1
        counts[AllSix.SIX_CARD_ROYAL_FLUSH_HEARTS_SPADES_OR_CLUBS] = 3
    if Six.ROYAL_FLUSH.value != AllSix.ROYAL_FLUSH.value:  # the counts above are indexed by both
        raise InvariantBroken("Six and AllSix number their shared hands differently")
    return _by_rows(
        "all_six_bonus",
        "All-Six Bonus Wager",
        table,
        counts,
        comb(52, 6),
        "683a.11(i)(4)(i)",
        "exact: every one of the 20,358,520 six-card sets",
    )


@cache
def _six_card_classes() -> IntArray:
    """The best-five class counts of all 20,358,520 six-card sets, once per process (every letter reads them)."""
    return deals.class_counts(6)


OPTIONAL = {
    "pocket_bonus": pocket_bonus,
    "board_bonus": board_bonus,
    "lo_ball": lo_ball,
    "all_six_bonus": all_six_bonus,
}


def analyse(rules: CajunStudRules) -> tuple[MainGame, list[WagerSheet], list[str]]:
    """Every wager the configuration offers; the names of those not analysed, with why (none)."""
    main = analyse_main(rules.ante_paytable)
    side: list[WagerSheet] = []
    if rules.payout_limit_cents is not None:
        limit = analyse_main(rules.ante_paytable, rules.ante_max_cents, rules.payout_limit_cents)
        if limit.sheet.house_edge != main.sheet.house_edge:
            side.append(replace(limit.sheet, wager="ante_at_limit", title="Ante and Raise Wagers at the maximum Ante"))
    letters = rules.optional_letters()
    for wager in rules.optional_wagers:
        # CajunStudRules refuses an offered wager without its letter
        letter = present(letters[wager], f"the paytable letter of the offered {wager}")
        side.append(OPTIONAL[wager](letter))
    return main, side, []
