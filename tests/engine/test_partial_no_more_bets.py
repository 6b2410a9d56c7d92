"""After "no more bets" (679a.9(a)(3), 684a.10(a)(2)) no wager but the decision's may be made, increased or withdrawn
(679a.7(c); 684a's 684a.7 is not available, so the announcement of 684a.10(a)(2) is what closes the wagers): each
attempt is refused under that citation and the round's wagers stay as they were at the lock-out."""

from __future__ import annotations

import pytest

from tests.engine.chapter_faults import table

# chapter -> the lock-out's rule, the rule a late wager is refused under
LATE = {"679a": ("679a.9(a)(3)", "679a.7(c)"), "684a": ("684a.10(a)(2)", "684a.10(a)(2)")}


@pytest.mark.parametrize("chapter", sorted(LATE))
def test_a_wager_made_increased_or_withdrawn_after_no_more_bets_is_refused(chapter: str) -> None:
    lock, refused_under = LATE[chapter]
    t = table(chapter)  # seats 1 and 2 hold every wager offered, at the minimum
    assert t.state.round is not None
    before = dict(t.state.round.seat(1).wagers)
    assert [(e.type, e.rule) for e in t.press("no_more_bets")][:1] == [("no_more_bets", lock)]
    spot = next(iter(before))
    for amount in (before[spot] * 2, 0):  # increased, withdrawn
        out = t.wager(1, spot, amount)
        assert [(e.type, e.rule) for e in out] == [("wager.rejected", refused_under)], out
    out = t.wager(3, spot, 500)  # made by a seat with no wager
    assert [(e.type, e.rule) for e in out] == [("wager.rejected", refused_under)]
    assert t.state.round is not None and t.state.round.seat(1).collected | t.state.round.seat(1).wagers == before
    assert 3 not in t.state.round.players
