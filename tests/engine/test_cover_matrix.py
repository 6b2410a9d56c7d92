"""A device marked out of order (.13(g)) in each phase of a round, for the shuffler and the shoe, on one game of each
chapter that deals from the hand and from an automated shoe: what the mark is cited under, and what becomes of the
wagers of the round it lands in (or, before any wager, of the first round after it). docs/rules.md gives the readings:

- the shoe, on an automated-shoe table falling back to the hand: before "no more bets" the round is dealt from the hand
  (no dealing procedure has begun; a card-reading shuffler gave the order); from "no more bets" to its last card the
  covered shoe "fails to deal all cards during a round of play": void under .13(f), every wager returned; covered once
  the round is dealt from the hand (DEALT, a hand-dealt table's fallback shoe), nothing of the round is touched;
- the shuffler, on a hand-dealt table falling back to the automated shoe: before its shuffle is complete the shuffle
  starts over by hand and the round is dealt from the shoe; once complete, before "no more bets", the shoe deals the
  round (the stacked deck "placed in the automated dealing shoe", .10(a)(1)); past "no more bets" the round is dealt
  from the hand from the shuffler's order (.13(e) did not happen: the shuffle completed). Covered while an
  automated-shoe table deals, the shoe deals on.

RECONCILING (the chip count before any card, .8(b), 643a.8(b)(1)) is reached only by 643a, whose Five Card Bonus on a
table game system is the only counted wager of the three chapters; DEALING only by a shoe, DEALT only by the hand."""

from __future__ import annotations

from typing import Literal

import pytest

from controller.engine.commands import DispenseStack
from controller.engine.inputs import MarkOutOfOrder
from controller.engine.spec import DealingMethod
from controller.games.let_it_ride.rules import LetItRideRules
from tests.engine.chapter_faults import cite, counting, remedy, returned_everything
from tests.engine.conftest import PureTable, example_rules
from tests.engine.covers import HAND_AND_SHOE, Paused, play_on, reading_table

Fate = tuple[Literal["void", "dealt"], str]  # void: the rule cited; dealt: the round's "no more bets" rule
PHASES = ("opening", "shuffling", "betting", "locking", "reconciling", "dealing", "dealt")

EXPECTED: dict[tuple[str, str], Fate] = {
    ("shoe", "opening"): ("dealt", "9(a)(3)"),
    ("shoe", "shuffling"): ("dealt", "9(a)(3)"),
    ("shoe", "betting"): ("dealt", "9(a)(3)"),
    ("shoe", "locking"): ("void", "13(f)"),
    ("shoe", "reconciling"): ("void", "13(f)"),
    ("shoe", "dealing"): ("void", "13(f)"),
    ("shoe", "dealt"): ("dealt", "9(a)(3)"),
    ("shuffler", "opening"): ("dealt", "10(a)(2)"),
    ("shuffler", "shuffling"): ("dealt", "10(a)(2)"),
    ("shuffler", "betting"): ("dealt", "10(a)(2)"),
    ("shuffler", "locking"): ("dealt", "9(a)(3)"),
    ("shuffler", "reconciling"): ("dealt", "9(a)(3)"),
    ("shuffler", "dealing"): ("dealt", "10(a)(2)"),
    ("shuffler", "dealt"): ("dealt", "9(a)(3)"),
}

CELLS = [
    (chapter, device, phase)
    for chapter in HAND_AND_SHOE
    for device in ("shoe", "shuffler")
    for phase in PHASES
    if phase != "reconciling" or chapter == "643a"
]


def methods_for(device: str, phase: str) -> tuple[DealingMethod, DealingMethod]:
    """(configured, fallback): the device's own table, but where the phase is reached only by the other method."""
    shoe_table: tuple[DealingMethod, DealingMethod] = ("automated_shoe", "hand")
    hand_table: tuple[DealingMethod, DealingMethod] = ("hand", "automated_shoe")
    if phase == "dealing":
        return shoe_table
    if phase == "dealt":
        return hand_table
    return shoe_table if device == "shoe" else hand_table


def counted_643a() -> LetItRideRules:
    """643a with the Five Card Bonus taken on a table game system: its chips are counted before any card."""
    base = example_rules("643a").model_dump()
    changes = {"five_card_bonus": True, "five_card_bonus_paytable": "A", "five_card_bonus_table_game_system": True}
    return LetItRideRules.model_validate({**base, **changes})


def in_phase(chapter: str, device: str, phase: str) -> tuple[PureTable, Paused]:
    method, fallback = methods_for(device, phase)
    kind = {"shuffling": "shuffle", "locking": "locks", "dealing": "stack"}.get(phase)
    rules = counted_643a() if phase == "reconciling" else None
    options = counting(chapter, fallback_dealing_method=fallback, cards_preinspected=phase != "opening")
    t, paused = reading_table(chapter, method, fallback, kind if phase == "shuffling" else None, rules, options)
    if phase in ("locking", "dealing"):
        paused.kind, paused.skip = kind, (1 if phase == "dealing" else 0)
    if phase in ("locking", "reconciling", "dealing", "dealt"):
        t.press("no_more_bets")
    assert t.state.phase.value == phase, t.state.blocks
    return t, paused


@pytest.mark.parametrize(("chapter", "device", "phase"), CELLS)
def test_a_cover_in_each_phase(chapter: str, device: str, phase: str) -> None:
    t, paused = in_phase(chapter, device, phase)
    since = len(t.events)
    asked = sum(isinstance(c, DispenseStack) for c in t.commands)
    marked = remedy(t.feed(MarkOutOfOrder(device)), "device.out_of_order")
    assert marked.rule == cite(chapter, "13(g)")
    fate, key = EXPECTED[(device, phase)]
    # Past "no more bets" the dealer is told what becomes of the round in play (the next round's is `dealing_method`).
    this_round = "void" if fate == "void" else "hand" if key == "9(a)(3)" else "automated_shoe"
    assert marked.payload.get("this_round") == (None if phase in ("opening", "shuffling", "betting") else this_round)
    play_on(t, paused, since)
    ended = next(e for e in t.events[since:] if e.type in ("round.completed", "round.voided"))
    if fate == "void":
        assert ended.type == "round.voided" and ended.rule == cite(chapter, key), ended
        returned_everything(t, ended)
        assert sum(isinstance(c, DispenseStack) for c in t.commands) == asked, "a stack asked of the covered shoe"
        return
    assert ended.type == "round.completed", ended
    of_round = [e for e in t.events if e.round_id == ended.round_id]
    assert remedy(of_round, "no_more_bets").rule == cite(chapter, key)
    assert remedy(of_round, "lockout.confirmed").rule == cite(chapter, key)
    assert "round.voided" not in t.types(of_round)
    # Dealt by the method its "no more bets" was announced under: from the hand (the shuffler's order), or the shoe.
    by_hand = key == "9(a)(3)"
    assert ("deal.awaiting_dealer" in t.types(of_round)) is by_hand
    section = f"{chapter}.9(" if by_hand else f"{chapter}.10("
    dealt = [e for e in of_round if e.type in ("cards.dealt", "community.dealt", "stub.discarded")]
    assert "stub.discarded" in t.types(dealt) and all(str(e.rule).startswith(section) for e in dealt), dealt
    if by_hand:
        assert sum(isinstance(c, DispenseStack) for c in t.commands) == asked, "a stack asked for a round dealt by hand"
    else:
        assert "cards.dealt" in t.types(of_round)
