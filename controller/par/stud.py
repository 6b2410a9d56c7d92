"""The stud main game both 655a Mississippi Stud and 683a Cajun Stud play: the player's two cards, then three
community cards face up one at a time, with a decision before each (655a.11(b), (d), (f); 683a.11(b), (d), (f)):
fold, or wager one, two or three times the Ante more; the five cards are paid by the chapter's paytable.

What a player knows at each decision is only the set of cards seen, and the hand finally paid is those five cards,
so the optimal decision is a function of the set: the third for each of the 270,725 four-card sets and each amount
already wagered, the second for each of the 22,100 three-card sets, the first for each of the 1,326 two-card sets
(backward induction). A forward pass over all 155,937,600 deals then weighs each outcome, decision and amount wagered,
and must agree with the backward pass. The chapters differ only in the paytable (`payoffs`, whole numbers of the
unit the caller counts in) and in the words of the sheet (`Labels`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from math import comb
from typing import Literal

import numpy as np
import numpy.typing as npt

from controller.core.rankings import Five
from controller.par import deals
from controller.par.evaluator import hand_class, pair_rank
from controller.par.sheet import Decision, Row, WagerSheet

IntArray = npt.NDArray[np.int64]
Ties = Literal["less", "more"]

FOLD = 0
MULTIPLES = (1, 2, 3)  # 655a.11(b), (d), (f) and 683a.11(b), (d), (f): one, two or three times the Ante
# Outcome columns of a hand played to the end: lose, push (a pair of 6s to 10s), a pair of jacks or better, then two
# pair .. royal flush. 655a.11(h) and 683a.11(h) name the same hands; only what each pays differs.
LOSE, PUSH = 0, 1
OUTCOMES = 2 + len(Five) - 1
SEQUENCES_AFTER_TWO = 50 * 49 * 48  # the community cards in the order they are revealed


def outcome_of_hands() -> IntArray:
    """The outcome column (655a.11(h), 683a.11(h)) of every five-card hand, in combos' colex order."""
    values = deals.five_card_values()
    cls = hand_class(values).astype(np.int64)
    pair = pair_rank(values)
    out = np.where(cls >= Five.TWO_PAIR, cls + 1, LOSE)
    out = np.where((cls == Five.PAIR) & (pair >= 11), 2, out)
    return np.where((cls == Five.PAIR) & (pair >= 6) & (pair <= 10), PUSH, out)


@cache
def counts_by_outcome() -> IntArray:
    """counts[s, o]: of the 48 fifth cards completing four-card set s, how many make a hand of outcome column o; once
    per process (both chapters, and the payout-limit pass, read it)."""
    counts = deals.counts_by_four(outcome_of_hands(), OUTCOMES)
    counts.flags.writeable = False
    return counts


@dataclass(frozen=True)
class Strategy:
    """The optimal decisions found, as data a simulated player follows (controller.people uses `decide`).

    third[s2], fourth[s3, w], fifth[s4, w]: 0 to fold, else the multiple of the Ante to wager, for the colex index
    of the cards seen and w Antes already wagered (the Ante plus the wagers made since).
    """

    third: npt.NDArray[np.int8]
    fourth: npt.NDArray[np.int8]
    fifth: npt.NDArray[np.int8]

    def __post_init__(self) -> None:
        # Shared: a game's analyse_main is made once a process, and every sheet and simulated player reads it.
        for decided in (self.third, self.fourth, self.fifth):
            decided.flags.writeable = False

    def decide(self, cards: list[int], wagered_units: int) -> int:
        """The multiple to wager (0: fold) after seeing `cards` (2, 3 or 4 deck indices)."""
        from controller.par.combos import index_unsorted

        index = int(index_unsorted(np.array([cards]))[0])
        if len(cards) == 2:
            return int(self.third[index])
        if len(cards) == 3:
            return int(self.fourth[index, wagered_units])
        return int(self.fifth[index, wagered_units])


@dataclass(frozen=True)
class Labels:
    """How the chapter's sheet names what the solver computes."""

    outcomes: tuple[tuple[str, str], ...]  # (name, pays) per outcome column
    points: tuple[str, str, str]  # the three decisions, cited
    fold: str  # what a fold does, cited
    title: str
    paytable: str  # the citation of the paytable
    notes: tuple[str, ...] = ()  # e.g. the payout limit the figures are at
    tie_practice: str = ""  # who raises on the exact ties, if anyone is known to (said in the tie note)


@dataclass(frozen=True)
class Solved:
    sheet: WagerSheet
    strategy: Strategy
    reached: tuple[set[int], set[int]]  # the amounts wagered the strategy reaches at the second and third decisions


def _choose(
    fold: IntArray | int, evs: list[IntArray], ties: Ties
) -> tuple[IntArray, npt.NDArray[np.int8], npt.NDArray[np.int8]]:
    """The best of folding and each multiple, its choice, and the choice were exact ties broken toward the larger
    wager. On an exact tie `ties` says which is taken: "less", the smaller commitment (folding first), or "more"."""
    stacked = np.stack([np.broadcast_to(np.asarray(fold, dtype=np.int64), evs[0].shape), *evs])
    less = np.argmax(stacked, axis=0).astype(np.int8)
    more = (len(stacked) - 1 - np.argmax(stacked[::-1], axis=0)).astype(np.int8)
    choice = more if ties == "more" else less
    return np.take_along_axis(stacked, choice[None].astype(np.intp), axis=0)[0], choice, more


@dataclass(frozen=True)
class _Backward:
    """The backward induction's values and choices at each decision (v: summed results; d: the choice taken, d5_more
    the choice were exact ties broken toward the larger wager) and whether an earlier decision had such a tie."""

    v3: IntArray
    d3: npt.NDArray[np.int8]
    d4: npt.NDArray[np.int8]
    d5: npt.NDArray[np.int8]
    d5_more: npt.NDArray[np.int8]
    earlier_ties: bool


def _backward(pay: IntArray, unit: int, ties: Ties, counts4: IntArray, ch2: IntArray, ch3: IntArray) -> _Backward:
    """From the last decision back to the first: at each, the best of folding and each multiple (_choose)."""
    n3, n4 = comb(52, 3), comb(52, 4)
    # Third decision: w = 3..7 Antes wagered (the Ante and two wagers), sums over the 48 last cards.
    v5 = np.zeros((n4, 8), dtype=np.int64)
    d5 = np.zeros((n4, 8), dtype=np.int8)
    d5_more = np.zeros((n4, 8), dtype=np.int8)
    for w in range(3, 8):
        v5[:, w], d5[:, w], d5_more[:, w] = _choose(-w * unit * 48, [counts4 @ pay[w + m] for m in MULTIPLES], ties)
    # Second: w = 2..4, sums over the 49 x 48 ways the last two cards come.
    v4 = np.zeros((n3, 5), dtype=np.int64)
    d4 = np.zeros((n3, 5), dtype=np.int8)
    earlier_ties = False
    for w in range(2, 5):
        evs = [v5[ch3, w + m].sum(axis=1) for m in MULTIPLES]
        v4[:, w], d4[:, w], more4 = _choose(-w * unit * 49 * 48, evs, ties)
        earlier_ties |= bool((more4 != d4[:, w]).any())
    # First: the Ante alone is wagered, sums over the 50 x 49 x 48 ways the community cards come.
    evs = [v4[ch2, 1 + m].sum(axis=1) for m in MULTIPLES]
    v3, d3, more3 = _choose(-unit * SEQUENCES_AFTER_TWO, evs, ties)
    earlier_ties |= bool((more3 != d3).any())
    return _Backward(v3, d3, d4, d5, d5_more, earlier_ties)


@dataclass(frozen=True)
class _Forward:
    """How many deals reach each state under the strategy, and what they come to: each decision's share, each
    outcome's count and winnings, the folds' loss, the total wagered and the squared results (for the variance),
    the exact ties at the third decision and what wagering on them would add."""

    decisions: dict[tuple[int, int], int]
    hits: IntArray
    won: list[int]
    fold_loss: int
    wagered: int
    squared: int
    tied: int
    more: int
    reach3: IntArray
    reach4: IntArray


def _folded(loss: int, wagered: int, squared: int, deals_here: int, w: int, unit: int) -> tuple[int, int, int]:
    """A fold with w Antes out loses them on every one of `deals_here` deals."""
    return loss + deals_here * w * unit, wagered + deals_here * w, squared + deals_here * (w * unit) ** 2


def _forward(pay: IntArray, unit: int, counts4: IntArray, ch2: IntArray, ch3: IntArray, back: _Backward) -> _Forward:
    """The forward pass: the deals the backward induction's choices lead to, to weigh outcomes and decisions."""
    n3, n4 = comb(52, 3), comb(52, 4)
    d3, d4, d5, d5_more = back.d3, back.d4, back.d5, back.d5_more
    decisions: dict[tuple[int, int], int] = {}
    fold_loss = wagered = squared = 0  # squared: the net result squared summed over deals, for the variance
    reach3 = np.zeros((n3, 5), dtype=np.int64)
    for m in (FOLD, *MULTIPLES):
        chosen = d3 == m
        decisions[(0, m)] = int(chosen.sum()) * SEQUENCES_AFTER_TWO
        if m == FOLD:
            fold_loss, wagered, squared = _folded(fold_loss, wagered, squared, decisions[(0, m)], 1, unit)
            continue
        reach3[:, 1 + m] += np.bincount(ch2[chosen].ravel(), minlength=n3)
    reach4 = np.zeros((n4, 8), dtype=np.int64)
    for w in range(2, 5):
        for m in (FOLD, *MULTIPLES):
            chosen = (d4[:, w] == m) & (reach3[:, w] > 0)
            deals_here = int(reach3[chosen, w].sum()) * 49 * 48
            decisions[(1, m)] = decisions.get((1, m), 0) + deals_here
            if m == FOLD:
                fold_loss, wagered, squared = _folded(fold_loss, wagered, squared, deals_here, w, unit)
                continue
            weights = np.repeat(reach3[chosen, w], 49).astype(np.float64)  # exact: far below 2**53
            reach4[:, w + m] += np.rint(np.bincount(ch3[chosen].ravel(), weights, minlength=n4)).astype(np.int64)
    hits = np.zeros(OUTCOMES, dtype=np.int64)
    won = [0] * OUTCOMES
    tied = 0  # deals reaching an exact tie at the third decision, decided toward the smaller wager
    more = 0  # what wagering on those ties would add to the total wagered
    for w in range(3, 8):
        larger = d5_more[:, w] != d5[:, w]
        tied += int(reach4[larger, w].sum()) * 48
        more += int(reach4[larger, w] @ (d5_more[larger, w].astype(np.int64) - d5[larger, w])) * 48
        for m in (FOLD, *MULTIPLES):
            chosen = (d5[:, w] == m) & (reach4[:, w] > 0)
            deals_here = int(reach4[chosen, w].sum()) * 48
            decisions[(2, m)] = decisions.get((2, m), 0) + deals_here
            if m == FOLD:
                fold_loss, wagered, squared = _folded(fold_loss, wagered, squared, deals_here, w, unit)
                continue
            by_outcome = reach4[chosen, w] @ counts4[chosen]
            hits += by_outcome
            wagered += int(by_outcome.sum()) * (w + m)
            for o in range(OUTCOMES):
                won[o] += int(by_outcome[o]) * int(pay[w + m, o])
                squared += int(by_outcome[o]) * int(pay[w + m, o]) ** 2
    return _Forward(decisions, hits, won, fold_loss, wagered, squared, tied, more, reach3, reach4)


def solve(pay: IntArray, unit: int, labels: Labels, ties: Ties = "less") -> Solved:
    """The main game under the strategy that maximises the player's expected result. `pay[w, o]` is the net result,
    in whole counting units, of w Antes' worth of wagers on outcome column o; `unit` is one Ante in those units.
    Where folding and wagering, or two multiples, have exactly the same expected result, `ties` says which is taken:
    "less" (the sheets': no more at risk for nothing) or "more". The house edge is the same either way; the average
    total wager and the element of risk are not."""
    if ties not in ("less", "more"):
        raise ValueError(f"ties={ties!r}: write 'less' or 'more'")
    counts4 = counts_by_outcome()
    ch2, ch3 = deals.children(2), deals.children(3)
    back = _backward(pay, unit, ties, counts4, ch2, ch3)
    total = comb(52, 2) * SEQUENCES_AFTER_TWO  # every deal: two player cards, then the three community cards in order
    expected = Fraction(int(back.v3.sum()), total * unit)
    fwd = _forward(pay, unit, counts4, ch2, ch3, back)
    decisions, wagered = fwd.decisions, fwd.wagered
    fold_row = Row(
        "fold",
        labels.fold,
        Fraction(sum(decisions[(k, FOLD)] for k in range(3)), total),
        Fraction(-fwd.fold_loss, total * unit),
    )
    rows = (
        *(
            Row(name, pays, Fraction(int(fwd.hits[o]), total), Fraction(fwd.won[o], total * unit))
            for o, (name, pays) in reversed(list(enumerate(labels.outcomes)))
        ),
        fold_row,
    )
    if sum(r.contribution for r in rows) != expected:
        raise AssertionError("the forward pass disagrees with the backward induction")  # a bug, never the input
    shares = tuple(
        Decision(labels.points[k], "fold" if m == FOLD else f"{m}x", Fraction(decisions[(k, m)], total))
        for k in range(3)
        for m in (FOLD, *MULTIPLES)
    )
    notes = labels.notes
    if fwd.tied and not back.earlier_ties:
        raised = Fraction(wagered + fwd.more, total)
        notes += (
            f"on {float(Fraction(fwd.tied, total)):.6%} of deals the {labels.points[2]} is an exact tie between "
            f"folding and a wager (the same expected result); this sheet folds on them. Raising on them instead"
            f"{labels.tie_practice}, the house edge is unchanged and the average total wager is {float(raised):.6f} "
            f"Antes, element of risk {float(-expected / raised):.6%} (docs/par.md)",
        )
    sheet = WagerSheet(
        wager="ante",
        title=labels.title,
        paytable=labels.paytable,
        unit="per Ante",
        house_edge=-expected,
        rows=rows,
        hit_frequency=sum((r.probability for r in rows[: OUTCOMES - 2]), Fraction(0)),
        method="exact: backward induction over every 2-, 3- and 4-card set and all 155,937,600 deals",
        average_wager=Fraction(wagered, total),
        decisions=shares,
        notes=notes,
        second_moment=Fraction(fwd.squared, total * unit * unit),
    )
    reached = ({w for w in range(2, 5) if fwd.reach3[:, w].any()}, {w for w in range(3, 8) if fwd.reach4[:, w].any()})
    return Solved(sheet, Strategy(back.d3, back.d4, back.d5), reached)
