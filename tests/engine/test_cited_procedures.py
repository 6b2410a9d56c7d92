"""The common procedure of every chapter, each chapter's subsection named: the engine asks for a step in the common
numbering (`.8(f)`), each chapter numbers it its own way (683a.8(e)), and these tables are typed in from the texts
(shared/regulations), so a chapter's citation that drifts from its text fails here. `tablectl rules` (docs/rules.md)
reads them as the tests that name those subsections; tests/engine/test_fault_matrix.py plays the same steps for every
registered chapter without naming them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Unpack

import pytest

from controller.core.cards import STANDARD_DECK
from controller.engine.inputs import Confirm, CountEntered, MarkOutOfOrder, OpenTable, PlayerLeft, Tick
from controller.engine.round import RoundEngine
from controller.engine.spec import DealingMethod
from controller.engine.state import Phase, TableState
from controller.games.registry import SPECS
from drivers.interfaces import DeviceFault
from tests.engine.chapter_faults import counting, on, remedy, returned_everything, stub_count_due, table
from tests.engine.conftest import OptionChanges, PureTable, example_rules

# (chapter, method) -> the stub to the discard rack, the count, 52 present, not 52 (643a.8(e)-(h), 643a.9(c)-(f),
# 643a.10(c)-(f); 655a the same letters; 683a.8(d)-(g), 683a.9(c)-(f), 683a.10(c)(2)-(f); 679a.9(c)-(f);
# 684a.10(c)-(f)).
STUB: dict[tuple[str, DealingMethod], tuple[str, str, str, str]] = {
    ("643a", "manual_shoe"): ("643a.8(e)", "643a.8(f)", "643a.8(g)", "643a.8(h)"),
    ("643a", "hand"): ("643a.9(c)", "643a.9(d)", "643a.9(e)", "643a.9(f)"),
    ("643a", "automated_shoe"): ("643a.10(c)", "643a.10(d)", "643a.10(e)", "643a.10(f)"),
    ("655a", "manual_shoe"): ("655a.8(e)", "655a.8(f)", "655a.8(g)", "655a.8(h)"),
    ("655a", "hand"): ("655a.9(c)", "655a.9(d)", "655a.9(e)", "655a.9(f)"),
    ("655a", "automated_shoe"): ("655a.10(c)", "655a.10(d)", "655a.10(e)", "655a.10(f)"),
    ("683a", "manual_shoe"): ("683a.8(d)", "683a.8(e)", "683a.8(f)", "683a.8(g)"),
    ("683a", "hand"): ("683a.9(c)", "683a.9(d)", "683a.9(e)", "683a.9(f)"),
    ("683a", "automated_shoe"): ("683a.10(c)(2)", "683a.10(d)", "683a.10(e)", "683a.10(f)"),
    ("679a", "hand"): ("679a.9(c)", "679a.9(d)", "679a.9(e)", "679a.9(f)"),
    ("684a", "automated_shoe"): ("684a.10(c)", "684a.10(d)", "684a.10(e)", "684a.10(f)"),
}

# The chapters whose text publishes the whole procedure: chapter -> one deck, two decks, preinspected, inspection,
# the shuffler's count, the manual shuffle, an idle table, a shuffler jam, out of order, drawn in error, a player who
# leaves, the most seats.
FULL = ("643a", "655a", "683a")
OPENING: dict[str, tuple[str, str, str, str]] = {
    "643a": ("643a.3(a)", "643a.3(b)", "643a.4(e)", "643a.4(a)"),
    "655a": ("655a.3(a)", "655a.3(b)", "655a.4(e)", "655a.4(a)"),
    "683a": ("683a.3(a)", "683a.3(b)", "683a.4(e)", "683a.4(a)"),
}
SHUFFLE: dict[str, tuple[str, str, str, str, str]] = {
    "643a": ("643a.5(b)", "643a.5(c)(2)", "643a.5(f)", "643a.13(e)", "643a.13(g)"),
    "655a": ("655a.5(b)", "655a.5(c)(2)", "655a.5(f)", "655a.13(e)", "655a.13(g)"),
    "683a": ("683a.5(b)", "683a.5(c)(2)", "683a.5(f)", "683a.13(e)", "683a.13(g)"),
}
AT_THE_LAYOUT: dict[str, tuple[str, str, str, int]] = {
    "643a": ("643a.13(b)", "643a.7(b)", "643a.2(a)", 7),
    "655a": ("655a.13(b)", "655a.7(b)", "655a.2(a)", 6),
    "683a": ("683a.13(b)", "683a.7(b)", "683a.2(a)", 6),
}


def fresh(chapter: str, **options: Unpack[OptionChanges]) -> PureTable:
    engine = RoundEngine(SPECS[chapter], example_rules(chapter), options=counting(chapter, **options))
    return PureTable(engine, TableState("t1"))


@pytest.mark.parametrize(("chapter", "method"), sorted(STUB))
def test_the_stub_is_discarded_counted_or_the_round_void_under_its_own_subsection(
    chapter: str, method: DealingMethod
) -> None:
    """643a.8(e)-(h), 655a.9(c)-(f), 683a.8(d)-(g), 683a.10(c)(2), 679a.9(c)-(f), 684a.10(c)-(f), ... (STUB)."""
    discard, count, whole, incorrect = STUB[(chapter, method)]
    t = table(chapter, method)
    t.press("no_more_bets")
    t.draw()
    if t.state.phase is Phase.DEALT:
        t.press("dealt")
    assert remedy(t.events, "stub.discarded").rule == discard
    for misdeal in (None, True, False):
        t = stub_count_due(chapter, method)  # a shuffler that does not count, the count due every round
        asked = remedy(t.events, "stub_count.requested")
        assert asked.rule == count and asked.sealed is not None
        expected = int(asked.sealed["expected"])
        if misdeal is None:
            counted = t.feed(CountEntered("stub", expected))
            assert [(e.type, e.rule) for e in counted][:2] == [("stub.counted", whole), ("stub.discarded", whole)]
            continue
        assert remedy(t.feed(CountEntered("stub", expected - 1)), "stub_count.mismatch").rule == incorrect
        out = t.feed(Confirm("dealer", "misdeal" if misdeal else "no_misdeal"))
        assert remedy(out, "round.voided").rule == incorrect
        assert ("deck.removed" in t.types(out)) is not misdeal
        returned_everything(t, remedy(out, "round.voided"))


@pytest.mark.parametrize("chapter", FULL)
def test_the_opening_names_its_decks_and_its_inspection(chapter: str) -> None:
    """.3(a) or (b), .4(e) or (a): 683a.3(a), 683a.4(e); 655a.3(b), 655a.4(a); ... (OPENING)."""
    one, two, preinspected, inspection = OPENING[chapter]
    t = fresh(chapter)
    opened = remedy(t.feed(OpenTable()), "table.opened")
    assert (opened.payload["decks_rule"], opened.payload["inspection_rule"]) == (one, preinspected)
    t = fresh(chapter, decks="two_decks", cards_preinspected=False)
    out = t.feed(OpenTable())
    assert (
        remedy(out, "table.opened").payload["decks_rule"],
        remedy(out, "table.opened").payload["inspection_rule"],
    ) == (
        two,
        inspection,
    )
    assert remedy(out, "cards.inspection_requested").rule == inspection and t.state.phase is Phase.OPENING
    assert remedy(t.feed(Confirm("dealer", "cards_inspected")), "cards.inspected").rule == inspection
    verified = t.feed(Confirm("floorperson", "cards_inspected"))
    assert remedy(verified, "cards.inspection_verified").rule == inspection
    assert "shuffle.started" in t.types(verified)


@pytest.mark.parametrize("chapter", FULL)
def test_the_shuffle_its_count_a_jam_an_idle_table_and_a_manual_shuffle(chapter: str) -> None:
    """.5(b), .5(c)(2), .5(f), .13(e), .13(g): 683a.5(b), 683a.5(c), 683a.5(f), 683a.13(e), 683a.13(g) (SHUFFLE)."""
    count, manual, idle, jam, out_of_order = SHUFFLE[chapter]
    t = fresh(chapter)
    on(t, "shuffle", lambda c: [DeviceFault("shuffler", code="jam")])
    assert remedy(t.feed(OpenTable()), "shuffle.failed").rule == jam
    t = fresh(chapter)
    t.decks = [list(STANDARD_DECK[:51])]  # a card missing: the counting shuffler counts 51
    assert remedy(t.feed(OpenTable()), "deck.removed").rule == count
    start = datetime(2026, 1, 1, tzinfo=UTC)
    t = fresh(chapter)
    t.feed(Tick(start))
    t.feed(OpenTable())
    assert remedy(t.feed(Tick(start + timedelta(minutes=31))), "cards.inspection_due").rule == idle
    marked = t.feed(MarkOutOfOrder("shuffler"))
    assert remedy(marked, "device.out_of_order").rule == out_of_order
    t.feed(Confirm("dealer", "cards_inspected"))
    done = remedy(t.feed(Confirm("dealer", "shuffled")), "shuffle.completed")
    assert done.rule == manual and done.payload["device"] == "manual"


@pytest.mark.parametrize("chapter", FULL)
def test_at_the_layout_a_card_drawn_in_error_a_player_who_leaves_and_the_seats(chapter: str) -> None:
    """.13(b), .7(b), .2(a): 683a.13(b), 683a.7(b), 683a.2(a), ... (AT_THE_LAYOUT)."""
    drawn, leaves, seats_rule, seats = AT_THE_LAYOUT[chapter]
    t = table(chapter, "manual_shoe")
    refused = t.wager(seats + 1, SPECS[chapter].main_wagers[0], 500)
    assert [(e.type, e.rule) for e in refused] == [("wager.rejected", seats_rule)]
    t.press("no_more_bets")
    t.draw(1)
    assert [(e.type, e.rule) for e in t.press("drawn_in_error")] == [("card.drawn_in_error", drawn)]
    t.draw()
    assert [e.rule for e in t.feed(PlayerLeft(2)) if e.type == "wagers.abandoned"] == [leaves]
