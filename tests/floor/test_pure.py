"""The floor's pure parts: the seq ranges and gaps against a set model (hypothesis), the expected frequencies from
the class counts, and the 95 % range a paytable row's hits are tested against."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from floor.report.expected import (
    FIVE_CARD_COUNTS,
    FIVE_CARD_HANDS,
    POCKET_COUNTS,
    ExactFrequencies,
    binomial_range,
    three_card_counts,
)
from floor.seqtrack import SeqRanges, opened_and_filled


@given(st.lists(st.lists(st.integers(1, 60), max_size=12), max_size=8))
def test_ranges_and_gaps_match_a_set_of_seqs(batches: list[list[int]]) -> None:
    ranges, seen = SeqRanges(), set[int]()
    for batch in batches:
        before = ranges.gaps()
        ranges = SeqRanges.from_json(ranges.with_seqs(batch).to_json())
        seen |= set(batch)
        missing = {s for s in range(1, max(seen, default=0) + 1) if s not in seen}
        assert {s for a, b in ranges.gaps() for s in range(a, b + 1)} == missing
        assert ranges.highest == max(seen, default=0)
        through = 0
        while through + 1 in seen:
            through += 1
        assert ranges.through == through
        opened, filled = opened_and_filled(before, ranges.gaps())
        for a, b in filled:
            assert all(s in seen for s in range(a, b + 1))
        for a, b in opened:
            assert all(s not in seen for s in range(a, b + 1))


def test_the_expected_frequencies_come_from_the_published_class_counts() -> None:
    counts = three_card_counts()
    assert sum(counts.values()) == 22_100
    assert counts["mini_royal"] == 4 and counts["straight_flush"] == 44 and counts["pair"] == 3_744
    assert sum(FIVE_CARD_COUNTS.values()) == FIVE_CARD_HANDS
    assert sum(POCKET_COUNTS.values()) == 6 + 12 + 36 + 72
    exact = ExactFrequencies()
    assert exact.expected("643a", "three_card_progressive", "mini_royal_spades") == Fraction(1, 22_100)
    assert exact.expected("643a", "three_card_progressive", "mini_royal") == Fraction(3, 22_100)
    assert exact.expected("643a", "bet", "pair") == Fraction(1_098_240 * 5 // 13, 2_598_960)
    assert exact.expected("655a", "progressive", "royal_flush") == Fraction(4, 2_598_960)
    # A main-game row of a game where players fold: the players' strategy decides it, so no figure is invented.
    assert exact.expected("655a", "ante", "pair") is None

    class Sheet:
        def expected(self, chapter: str, wager: str, row: str) -> Fraction | None:
            return Fraction(1, 3) if (chapter, wager) == ("655a", "ante") else None

    assert ExactFrequencies(Sheet()).expected("655a", "ante", "pair") == Fraction(1, 3)


def test_the_95_percent_range_holds_a_rare_rows_single_hit_and_flags_a_gross_excess() -> None:
    assert binomial_range(73, 0.001965) == (0, 1)  # one flush in 73 Five Card Bonus wagers is no alarm
    low, high = binomial_range(100_000, 0.01)
    assert low < 1_000 < high and (low, high) == (938, 1_062)
    assert binomial_range(0, 0.5) == (0, 0)
