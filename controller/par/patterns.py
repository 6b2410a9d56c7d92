"""Card sets sorted into the patterns players learn a strategy by ("four to a flush", "a low pair", "an outside
straight with one high card"), so that an optimal strategy computed per set can be printed as the rules players know
(controller.par.mississippi_stud, controller.par.let_it_ride). Each pattern's line says what the strategy does on every
set of it; where it does not do one thing on them all, the line says how the sets split, rather than a rule that is
not quite true.

Vectorised over every k-card set at once (numpy): cards are STANDARD_DECK indices, rank 0..12 (2..A), suit 0..3.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from controller.par import combos

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

TEN, JACK, ACE = 8, 9, 12  # rank indices of 10, J and A


@dataclass(frozen=True)
class Features:
    """What a player sees in each k-card set, one entry per set (colex order)."""

    ranks: IntArray  # (n, k) ascending by card index, not by rank
    suited: BoolArray  # all one suit
    top_count: IntArray  # how many of the most frequent rank
    pairs: IntArray  # how many ranks appear exactly twice
    pair_rank: IntArray  # the highest rank held twice or more (-1: none)
    gaps: IntArray  # distinct ranks only: the ranks missing inside the tightest five-rank window (-1: no window fits)
    open_ended: BoolArray  # four distinct ranks in a row, neither end an ace: two cards complete the straight
    at_least_ten: IntArray  # cards of rank 10 or higher
    at_least_jack: IntArray  # cards of rank J or higher
    middle: IntArray  # cards of rank 6 to 10
    low_rank: IntArray  # the lowest rank held (an ace counts high)
    high_rank: IntArray  # the highest rank held
    points: IntArray  # Mississippi Stud's count: 2 for J or better, 1 for 6 to 10


def features(k: int) -> Features:
    sets = combos.combinations(k).astype(np.int64)
    ranks = sets % 13
    suits = sets // 13
    suited = (suits == suits[:, :1]).all(axis=1)
    counts = np.zeros((len(sets), 13), dtype=np.int64)
    np.add.at(counts, (np.arange(len(sets))[:, None], ranks), 1)
    held = counts > 0
    distinct = held.sum(axis=1) == k
    # The five-rank windows: A-2-3-4-5 (the ace low) up to 10-J-Q-K-A.
    best_gap = np.full(len(sets), 99, dtype=np.int64)
    for low in range(-1, 9):
        window = [(r + 13) % 13 for r in range(low, low + 5)]
        in_window = held[:, window]
        inside = in_window.sum(axis=1) == k
        # Gaps: the ranks missing strictly between the lowest and highest held rank of the window.
        place = np.arange(5)[None, :]
        span = np.where(in_window, place, -1).max(axis=1) - np.where(in_window, place, 9).min(axis=1)
        gap = span + 1 - k
        best_gap = np.where(distinct & inside & (gap < best_gap), gap, best_gap)
    gaps = np.where(best_gap == 99, -1, best_gap)
    # Open-ended: four in a row whose both ends can be drawn (not A-2-3-4 nor J-Q-K-A).
    open_ended = distinct & (k == 4) & (gaps == 0) & ~held[:, ACE]
    pair_rank = np.where(counts >= 2, np.arange(13)[None, :], -1).max(axis=1)
    return Features(
        ranks=ranks,
        suited=suited,
        top_count=counts.max(axis=1),
        pairs=(counts == 2).sum(axis=1),
        pair_rank=pair_rank,
        gaps=gaps,
        open_ended=open_ended,
        at_least_ten=(ranks >= TEN).sum(axis=1),
        at_least_jack=(ranks >= JACK).sum(axis=1),
        middle=((ranks >= 4) & (ranks <= TEN)).sum(axis=1),
        low_rank=ranks.min(axis=1),
        high_rank=ranks.max(axis=1),
        points=np.where(ranks >= JACK, 2, np.where(ranks >= 4, 1, 0)).sum(axis=1),
    )


Pattern = tuple[str, Callable[[Features], BoolArray]]


def classify(f: Features, patterns: Sequence[Pattern]) -> IntArray:
    """Each set's pattern: the first of `patterns` it matches, len(patterns) when none does."""
    out = np.full(len(f.ranks), len(patterns), dtype=np.int64)
    for i, (_name, matches) in reversed(list(enumerate(patterns))):
        out = np.where(matches(f), i, out)
    return out


def rules(
    names: Sequence[str],
    pattern: IntArray,
    decision: npt.NDArray[np.integer],
    actions: dict[int, str],
    among: BoolArray,
) -> list[str]:
    """One line per action with the patterns the strategy takes it on every time, then a line per pattern whose sets
    it splits (with how many sets take each action). `among`: the sets that count (those the strategy reaches)."""
    pure: dict[int, list[str]] = {}
    mixed: list[str] = []
    for i, name in enumerate(names):
        here = (pattern == i) & among
        if not here.any():
            continue
        taken = {int(a): int(n) for a, n in zip(*np.unique(decision[here], return_counts=True), strict=True)}
        if len(taken) == 1:
            pure.setdefault(next(iter(taken)), []).append(name)
        else:
            split = ", ".join(f"{actions[a]} on {n:,}" for a, n in sorted(taken.items(), reverse=True))
            mixed.append(f"{name}: it depends on the cards ({split} card sets)")
    lines = [f"{actions[a]}: {'; '.join(pure[a])}" for a in sorted(pure, reverse=True)]
    return lines + mixed


def _paying_ms(f: Features) -> BoolArray:
    out: BoolArray = (f.pair_rank >= 4) | (f.pairs == 2) | (f.top_count >= 3)
    return out


def _paying_lir(f: Features) -> BoolArray:
    out: BoolArray = (f.pair_rank >= TEN) | (f.pairs == 2) | (f.top_count >= 3)
    return out


def _points_are(p: int) -> Callable[[Features], BoolArray]:
    def test(f: Features) -> BoolArray:
        out: BoolArray = f.points == p
        return out

    return test


def _points(most: int) -> list[Pattern]:
    return [(f"{p} point{'s' if p != 1 else ''}", _points_are(p)) for p in range(most, -1, -1)]


def _anything(f: Features) -> BoolArray:
    return np.ones(len(f.ranks), dtype=bool)


# Mississippi Stud, 4th Street (655a.11(d)): the player's two cards and the first community card.
MS_FOURTH: list[Pattern] = [
    ("three of a kind", lambda f: f.top_count == 3),
    ("a pair of 6s or better", lambda f: f.pair_rank >= 4),
    ("a low pair (2s to 5s)", lambda f: f.pairs == 1),
    ("three to a royal flush", lambda f: f.suited & (f.at_least_ten == 3)),
    ("three to a straight flush, no gap, 5-6-7 or higher", lambda f: f.suited & (f.gaps == 0) & (f.low_rank >= 3)),
    (
        "three to a straight flush, one gap, a high card (J or better)",
        lambda f: f.suited & (f.gaps == 1) & (f.at_least_jack >= 1),
    ),
    (
        "three to a straight flush, two gaps, two high cards",
        lambda f: f.suited & (f.gaps == 2) & (f.at_least_jack >= 2),
    ),
    ("any other three to a straight flush", lambda f: f.suited & (f.gaps >= 0)),
    ("three suited cards, no straight flush possible", lambda f: f.suited),
    ("three to a straight, no gap, 4-5-6 or higher", lambda f: (f.gaps == 0) & (f.low_rank >= 2)),
    ("three to a straight, one gap, two middle cards (6 to 10) or better", lambda f: (f.gaps == 1) & (f.points >= 2)),
    *((f"otherwise {name}", test) for name, test in _points(6)),
]

# Mississippi Stud, 5th Street (655a.11(f)): the two cards and two community cards.
MS_FIFTH: list[Pattern] = [
    ("a paying hand (a pair of 6s or better, two pair, three of a kind or better)", _paying_ms),
    ("a low pair (2s to 5s)", lambda f: f.pairs == 1),
    ("four to a royal flush", lambda f: f.suited & (f.at_least_ten == 4)),
    ("four to a straight flush", lambda f: f.suited & (f.gaps >= 0)),
    ("four to a flush", lambda f: f.suited),
    ("four to an outside straight, 8 high or better", lambda f: f.open_ended & (f.high_rank >= 6)),
    ("four to an outside straight, 7 high or lower", lambda f: f.open_ended),
    ("four to an inside straight (or A-2-3-4, J-Q-K-A)", lambda f: f.gaps >= 0),
    *((f"otherwise {name}", test) for name, test in _points(8)),
]

# Let It Ride, Bet Number 2 (643a.11(d)): the three cards and the first community card.
LIR_SECOND: list[Pattern] = [
    ("a paying hand (a pair of 10s or better, two pair, three of a kind or better)", _paying_lir),
    ("four to a royal flush", lambda f: f.suited & (f.at_least_ten == 4)),
    ("four to a straight flush", lambda f: f.suited & (f.gaps >= 0)),
    ("four to a flush", lambda f: f.suited),
    ("four to an outside straight with a high card (10 or better)", lambda f: f.open_ended & (f.at_least_ten >= 1)),
    ("four to an outside straight with no high card", lambda f: f.open_ended),
    (
        "four to an inside straight (or A-2-3-4, J-Q-K-A) with four high cards",
        lambda f: (f.gaps >= 0) & (f.at_least_ten == 4),
    ),
    ("four to an inside straight (or A-2-3-4, J-Q-K-A) with fewer high cards", lambda f: f.gaps >= 0),
    ("a low pair (2s to 9s)", lambda f: f.pairs == 1),
    ("anything else", _anything),
]


def names(patterns: Sequence[Pattern]) -> list[str]:
    return [name for name, _ in patterns]
