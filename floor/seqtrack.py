"""Which seqs of each table the archive holds, as ranges, and the gaps between them (pure).

A table's seq counts from 1 without gaps across its restarts (docs/mqtt.md), so any seq missing below the
highest archived one is an event the floor has not got: a gap. Most gaps are brief (an event still in flight, a
table replaying after an outage); one that stays means an event was lost on the way and is reported until filled.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

Range = tuple[int, int]  # first, last (both included)


def _merge(ranges: Iterable[Range]) -> list[Range]:
    out: list[Range] = []
    for first, last in sorted(ranges):
        if out and first <= out[-1][1] + 1:
            if last > out[-1][1]:
                out[-1] = (out[-1][0], last)
        else:
            out.append((first, last))
    return out


@dataclass
class SeqRanges:
    """The seqs archived for one table."""

    ranges: list[Range] = field(default_factory=list)

    def with_seqs(self, seqs: Iterable[int]) -> SeqRanges:
        return SeqRanges(_merge([*self.ranges, *((s, s) for s in seqs)]))

    @property
    def through(self) -> int:
        """The highest seq with every seq from 1 up to it archived (0 when seq 1 is missing)."""
        return self.ranges[0][1] if self.ranges and self.ranges[0][0] == 1 else 0

    @property
    def highest(self) -> int:
        return self.ranges[-1][1] if self.ranges else 0

    def gaps(self) -> list[Range]:
        """The missing ranges below the highest archived seq."""
        out: list[Range] = []
        expected = 1
        for first, last in self.ranges:
            if first > expected:
                out.append((expected, first - 1))
            expected = last + 1
        return out

    def holds(self, seq: int) -> bool:
        return any(first <= seq <= last for first, last in self.ranges)

    def to_json(self) -> list[list[int]]:
        return [[a, b] for a, b in self.ranges]

    @classmethod
    def from_json(cls, data: object) -> SeqRanges:
        if not isinstance(data, list):
            return cls()
        return cls(_merge((int(a), int(b)) for a, b in data))


def opened_and_filled(before: list[Range], after: list[Range]) -> tuple[list[Range], list[Range]]:
    """Gaps newly missing (in `after`, not within any gap of `before`) and gaps of `before` now wholly filled."""

    def within(g: Range, pool: list[Range]) -> bool:
        return any(a <= g[0] and g[1] <= b for a, b in pool)

    def overlaps(g: Range, pool: list[Range]) -> bool:
        return any(not (g[1] < a or b < g[0]) for a, b in pool)

    opened = [g for g in after if not within(g, before)]
    filled = [g for g in before if not overlaps(g, after)]
    return opened, filled
