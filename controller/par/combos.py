"""Every k-card set of a deck as an array, in colexicographic order, and the index of a set in that order.

Colex order makes a set's index a sum of binomials, C(c1, 1) + C(c2, 2) + ... for c1 < c2 < ..., so an analysis
can find the row of "these four cards" among all four-card sets with one gather instead of a search.
"""

from __future__ import annotations

from functools import cache
from math import comb

import numpy as np
import numpy.typing as npt

CardArray = npt.NDArray[np.int8]
IndexArray = npt.NDArray[np.int64]

DECK = 52


@cache
def combinations(k: int, n: int = DECK) -> CardArray:
    """All C(n, k) sets of k of the cards 0..n-1, one per row, ascending within a row, rows in colex order."""
    if k == 0:
        return np.zeros((1, 0), dtype=np.int8)
    prev = combinations(k - 1, n)
    blocks = []
    for top in range(k - 1, n):
        head = prev[: comb(top, k - 1)]
        block = np.empty((len(head), k), dtype=np.int8)
        block[:, :-1] = head
        block[:, -1] = top
        blocks.append(block)
    out = np.concatenate(blocks)
    out.flags.writeable = False
    return out


@cache
def _binomials(n: int = DECK) -> IndexArray:
    """_binomials()[i, c] = C(c, i)."""
    table = np.array([[comb(c, i) for c in range(n + 1)] for i in range(8)], dtype=np.int64)
    table.flags.writeable = False
    return table


def index_of(sets: npt.NDArray[np.integer]) -> IndexArray:
    """The colex index of each row of `sets` (cards in ascending order within a row)."""
    binomials = _binomials()
    cards = sets.astype(np.int64, copy=False)
    out = np.zeros(len(cards), dtype=np.int64)
    for i in range(cards.shape[1]):
        out += binomials[i + 1][cards[:, i]]
    return out


def index_unsorted(sets: npt.NDArray[np.integer]) -> IndexArray:
    """index_of() for rows in any order."""
    return index_of(np.sort(sets, axis=1))
