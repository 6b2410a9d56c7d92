"""Deck life, opening and idle inspections, stub counts, chip-count reconciliation, devices out of order and
abandoned wagers (655a.3, .4, .5(f), .7(b), .8(b), .8(f)-(h), .10(d)-(f), .13(g)), by example."""

from __future__ import annotations

from datetime import timedelta

from controller.core.events import DomainEvent
from controller.engine.inputs import (
    Confirm,
    CountEntered,
    FloorpersonDecision,
    MarkOutOfOrder,
    PlayerLeft,
    ReleaseHeld,
    Tick,
)
from controller.engine.state import Phase
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.spec import MississippiStudSpec
from tests.engine.conftest import PureTable, decide_all
from tests.engine.mississippi_table import make


class Counted(MississippiStudSpec):
    progressive_wagers: tuple[str, ...] = ("three_card_bonus",)

    def counted_wagers(self, rules: MississippiStudRules) -> dict[str, str | None]:
        return {"three_card_bonus": "655a.8(b)"}  # as on a table game system


def tick(t: PureTable, **delta: float) -> list[DomainEvent]:
    assert t.state.now is not None
    return t.feed(Tick(t.state.now + timedelta(**delta)))


def play_round(t: PureTable, seat: int = 1) -> list[DomainEvent]:
    t.wager(seat, "ante", 500)
    return decide_all(t, t.press("no_more_bets"))


def test_opening_inspection_by_dealer_then_floorperson_before_the_first_shuffle() -> None:
    t = make(cards_preinspected=False)
    assert t.state.phase is Phase.OPENING and t.types()[-1] == "cards.inspection_requested"
    assert "shuffle" not in [c.verb for c in t.commands]
    assert t.types(t.feed(Confirm("floorperson", "cards_inspected"))) == ["input.refused"]  # dealer first
    t.feed(Confirm("dealer", "cards_inspected"))
    assert t.state.phase is Phase.OPENING
    done = t.feed(Confirm("floorperson", "cards_inspected"))
    assert [(e.type, e.rule) for e in done][:2] == [
        ("cards.inspection_verified", "655a.4(a)"),
        ("table.block_cleared", None),
    ]
    # mypy keeps the phase narrowed by the assert above across the inputs fed since (python/mypy#17537)
    assert t.state.phase is Phase.BETTING  # type: ignore[comparison-overlap]


def test_preinspected_decks_open_straight_to_the_shuffle() -> None:
    t = make(cards_preinspected=True)
    assert t.state.phase is Phase.BETTING


def test_deck_change_due_after_8_hours_from_a_shoe_blocks_until_verified() -> None:
    t = make(idle_inspection_minutes=None)
    assert tick(t, hours=7, minutes=59) == []
    play_round(t)
    due = tick(t, minutes=1)
    assert [(e.type, e.rule) for e in due][:1] == [("deck.change_due", "655a.3(c)(2)")]
    assert t.state.phase is Phase.BLOCKED  # betting was open with nothing on the layout: it closes
    assert t.types(t.wager(1, "ante", 500)) == ["wager.rejected"]
    assert t.types(t.feed(Confirm("dealer", "deck_verified"))) == ["input.refused"]
    t.feed(Confirm("floorperson", "deck_verified"))
    # mypy keeps the phase narrowed by the assert above across the inputs fed since (python/mypy#17537)
    assert t.state.phase is Phase.BETTING and "deck_change_due" not in t.state.blocks  # type: ignore[comparison-overlap]
    assert t.state.decks["A"].since == t.state.now


def test_deck_change_due_after_4_hours_dealt_by_hand_waits_for_the_round_in_progress() -> None:
    t = make("hand", idle_inspection_minutes=None)
    tick(t, hours=3)
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    due = tick(t, hours=1)
    assert [(e.type, e.rule) for e in due] == [("deck.change_due", "655a.3(c)(1)")]
    assert t.state.phase is Phase.DEALT  # the round in progress goes on
    decide_all(t, t.press("dealt"))
    # mypy keeps the phase narrowed by the assert above across the inputs fed since (python/mypy#17537)
    assert t.types()[-2:] == ["round.completed", "table.blocked"] and t.state.phase is Phase.BLOCKED  # type: ignore[comparison-overlap]


def test_two_decks_alternate_and_each_is_tracked() -> None:
    t = make(decks="two_decks")
    decks = []
    for _ in range(3):
        assert t.state.round is not None
        decks.append(t.state.round.deck)
        play_round(t)
    assert decks == ["A", "B", "A"]
    assert (t.state.decks["A"].rounds, t.state.decks["B"].rounds) == (2, 1)


def test_idle_table_cards_reinspected_before_the_next_round() -> None:
    t = make(idle_inspection_minutes=20)
    due = tick(t, minutes=20)
    assert [(e.type, e.rule) for e in due][:1] == [("cards.inspection_due", "655a.5(f)")]
    assert t.state.phase is Phase.BLOCKED
    t.feed(Confirm("dealer", "cards_inspected"))
    # mypy keeps the phase narrowed by the assert above across the inputs fed since (python/mypy#17537)
    assert t.state.phase is Phase.BETTING  # type: ignore[comparison-overlap]
    assert t.types()[-3:-1] == ["table.block_cleared", "shuffle.started"] or "shuffle.started" in t.types()[-4:]


def test_stub_count_every_round_without_a_counting_shuffler() -> None:
    t = make("manual_shoe", shuffler_counts=False, stub_count_every=2)
    for n in (1, 2):
        t.wager(1, "ante", 500)
        t.press("no_more_bets")
        t.draw()
        if n == 1:
            assert t.state.phase is Phase.DECISION
            decide_all(t, t.events[-1:])
    assert t.state.phase is Phase.STUB_COUNT and t.types()[-1] == "stub_count.requested"
    assert t.events[-1].rule == "655a.8(f)"
    ok = t.feed(CountEntered("stub", 52 - 5))
    assert [(e.type, e.rule) for e in ok][:2] == [("stub.counted", "655a.8(g)"), ("stub.discarded", "655a.8(g)")]
    # mypy keeps the phase narrowed by the assert above across the inputs fed since (python/mypy#17537)
    assert t.state.phase is Phase.DECISION and t.state.decks["A"].rounds_since_count == 0  # type: ignore[comparison-overlap]


def stub_mismatch(misdeal: bool) -> PureTable:
    t = make(shuffler_counts=False, stub_count_every=1)
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    assert t.state.phase is Phase.STUB_COUNT and t.events[-1].rule == "655a.10(d)"
    bad = t.feed(CountEntered("stub", 45))
    assert [(e.type, e.rule) for e in bad] == [("stub_count.mismatch", "655a.10(f)")]
    t.feed(Confirm("dealer", "misdeal" if misdeal else "no_misdeal"))
    return t


def test_stub_miscount_with_a_misdeal_voids() -> None:
    t = stub_mismatch(misdeal=True)
    void = next(e for e in t.events if e.type == "round.voided")
    assert void.rule == "655a.10(f)" and void.payload["returned"] == {"1": {"ante": 500}}
    # The count did not make 52 (45 and the 5 cards dealt are 50): the reason says so, and that the dealer found the
    # cards misdealt with 52 still in the deck (655a.10(f)), never that the count made 52.
    assert void.payload["reason"] == (
        "the stub count (45) and the 5 cards dealt make 50, not 52: the dealer determined the cards were misdealt "
        "and 52 cards remain in the deck"
    )
    assert t.state.phase is Phase.BETTING


def test_stub_miscount_without_a_misdeal_voids_and_removes_the_deck() -> None:
    t = stub_mismatch(misdeal=False)
    assert [e.type for e in t.events][-3:] == ["deck.removed", "round.voided", "table.blocked"]
    assert t.state.phase is Phase.BLOCKED and "deck_removed" in t.state.blocks
    t.feed(Confirm("floorperson", "deck_verified"))
    # mypy keeps the phase narrowed by the assert above across the inputs fed since (python/mypy#17537)
    assert t.state.phase is Phase.BETTING  # type: ignore[comparison-overlap]


def reconciling() -> PureTable:
    t = make(spec=Counted())
    t.wager(1, "ante", 500)
    t.wager(1, "three_card_bonus", 100)
    t.wager(2, "ante", 500)
    t.wager(2, "three_card_bonus", 100)
    t.press("no_more_bets")
    assert t.state.phase is Phase.RECONCILING and t.events[-1].type == "chip_count.requested"
    assert t.events[-1].payload["accepted"] == 2 and "dispense_stack" not in [c.verb for c in t.commands]
    return t


def test_chip_count_equal_to_the_accepted_count_deals() -> None:
    t = reconciling()
    assert [(e.type, e.rule) for e in t.feed(CountEntered("chips", 2))][:1] == [("chip_count.reconciled", "655a.8(b)")]
    assert t.state.phase is Phase.DECISION


def test_chip_count_mismatch_blocks_until_the_floorperson_decides() -> None:
    t = reconciling()
    miss = t.feed(CountEntered("chips", 3))
    assert [(e.type, e.payload["entered"], e.payload["accepted"]) for e in miss] == [("chip_count.mismatch", 3, 2)]
    assert t.types(t.feed(CountEntered("chips", 2))) == ["input.ignored"]  # it is with the floorperson now
    t.feed(FloorpersonDecision("chip_count", "recount", "fp7"))
    assert t.types(t.feed(CountEntered("chips", 2)))[0] == "chip_count.reconciled"
    resolved = next(e for e in t.events if e.type == "chip_count.resolved")
    assert resolved.payload["entered"] == [3] and resolved.payload["floorperson"] == "fp7"


def test_chip_count_void_reverses_progressive_contributions() -> None:
    t = reconciling()
    t.feed(CountEntered("chips", 1))
    out = t.feed(FloorpersonDecision("chip_count", "void"))
    assert [e.type for e in out][1:3] == ["round.voided", "progressive.contributions_reversed"]
    assert out[2].payload["wagers"] == {"1": {"three_card_bonus": 100}, "2": {"three_card_bonus": 100}}


def test_no_progressive_event_on_a_void_without_progressive_wagers() -> None:
    t = make()
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    assert "progressive.contributions_reversed" not in t.types(t.press("community_exposed"))


def test_abandoned_wagers_lose_or_are_held() -> None:
    for how in ("lose", "hold"):
        t = make(abandoned_wagers=how)
        t.wager(1, "ante", 500)
        t.wager(1, "three_card_bonus", 100)
        t.wager(2, "ante", 500)
        t.press("no_more_bets")
        gone = t.feed(PlayerLeft(1))  # seat 1 was deciding 3rd Street
        assert (gone[0].type, gone[0].rule, gone[0].payload["disposition"]) == ("wagers.abandoned", "655a.7(b)", how)
        assert gone[1].type == "decision.requested" and gone[1].payload["seat"] == 2
        decide_all(t, gone)
        done = next(e for e in reversed(t.events) if e.type == "round.completed")
        assert done.payload["abandoned"] == {
            "1": {"disposition": how, "wagers": {"ante": 500, "three_card_bonus": 100}}
        }
        assert not any(e.type == "hand.settled" and e.payload["seat"] == 1 for e in t.events)
        assert (t.state.held_wagers == {1: {"ante": 500, "three_card_bonus": 100}}) is (how == "hold")


def test_held_wagers_are_released_to_the_player_or_the_house_once() -> None:
    """.7(b): wagers held for a player who left leave the hold when a floorperson says where they go; the next round
    is played meanwhile, and a release of a seat with nothing held is ignored (the money moves once)."""
    for to in ("player", "house"):
        t = make(abandoned_wagers="hold")
        t.wager(1, "ante", 500)
        t.wager(1, "three_card_bonus", 100)
        t.wager(2, "ante", 500)
        t.press("no_more_bets")
        decide_all(t, t.feed(PlayerLeft(1)))
        assert t.state.held_wagers == {1: {"ante": 500, "three_card_bonus": 100}}
        released = t.feed(ReleaseHeld(1, to))
        assert [(e.type, e.rule) for e in released] == [("held_wagers.released", "655a.7(b)")]
        assert released[0].payload == {
            "seat": 1,
            "to": to,
            "wagers": {"ante": 500, "three_card_bonus": 100},
            "amount": 600,
            "remedy": "given back to the player who left" if to == "player" else "treated as losing wagers",
        }
        assert t.state.held_wagers == {}
        again = t.feed(ReleaseHeld(1, to))
        assert [e.type for e in again] == ["input.ignored"]
        assert "no wager is held for that seat" in str(again[0].payload)


def test_player_left_before_the_deal_gets_the_wagers_back() -> None:
    t = make()
    t.wager(3, "ante", 500)
    assert [(e.type, e.payload["amount"]) for e in t.feed(PlayerLeft(3))] == [("wager.returned", 500)]


def test_no_other_method_before_the_shuffler_is_marked_out_of_order() -> None:
    t = make("hand", fallback_dealing_method="manual_shoe")
    from drivers.interfaces import DeviceFault

    t.feed(DeviceFault("shuffler", code="malfunction"))
    assert t.state.phase is Phase.BLOCKED and "device:shuffler" in t.state.blocks
    assert t.types(t.feed(Confirm("dealer", "shuffled"))) == ["input.refused"]
    marked = t.feed(MarkOutOfOrder("shuffler"))
    assert marked[0].payload["takes_over"] == "manual shuffle and cut, dealing by manual_shoe"
    assert marked[0].payload["dealing_method"] == "manual_shoe"
    t.feed(Confirm("dealer", "shuffled"))
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    # mypy keeps the phase narrowed by the assert above across the inputs fed since (python/mypy#17537)
    assert t.state.phase is Phase.DEALING  # type: ignore[comparison-overlap]  # a manual shoe now, not the hand
    t.feed(MarkOutOfOrder("shuffler", out=False))
    assert t.types()[-1] == "input.refused"  # only between rounds
