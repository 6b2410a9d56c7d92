"""Chapter x fault x phase: every irregularity the chapter names, where it can occur, gets the chapter's
remedy with its citation, for every chapter the live engine runs (controller.games.specs.SPECS)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from controller.cards import STANDARD_DECK
from controller.engine.inputs import CloseTable, Command, Confirm, Input, MarkOutOfOrder, OpenTable
from controller.engine.round import RoundEngine
from controller.engine.state import Phase, TableState
from controller.events import DomainEvent
from controller.games.specs import SPECS
from drivers.interfaces import DeviceFault, DeviceOffline, FaceUpCard, ShuffleCompleted, StackDispensed
from tests.engine.conftest import PureTable, enter_player, example_rules, open_table

CHAPTERS = sorted(SPECS)


def table(chapter: str, method: str = "automated_shoe") -> PureTable:
    t = open_table(SPECS[chapter], example_rules(chapter), method)  # type: ignore[arg-type]
    enter_player(t, 1)
    enter_player(t, 2)
    return t


def fresh(chapter: str) -> PureTable:
    """A table not yet opened."""
    return PureTable(RoundEngine(SPECS[chapter], example_rules(chapter)), TableState("t1"))


def on(t: PureTable, verb: str, answer: Callable[[Command], list[Input]], times: int = 1) -> None:
    """Answer the next `times` commands with this verb differently; the rest as perfect devices do."""
    left = {"n": times}
    orig = t.answer

    def answer_(c: Command) -> list[Input]:
        if c.verb == verb and left["n"] > 0:
            left["n"] -= 1
            return answer(c)
        return orig(c)

    t.answer = answer_  # type: ignore[method-assign]


def remedy(events: list[DomainEvent], type_: str) -> DomainEvent:
    return next(e for e in events if e.type == type_)


def returned_everything(t: PureTable, void: DomainEvent) -> None:
    accepted: dict[str, dict[str, int]] = {}
    for e in t.events:
        if e.type == "wager.accepted" and e.round_id == void.round_id:
            accepted.setdefault(str(e.payload["seat"]), {})[e.payload["spot"]] = e.payload["amount"]
    assert void.payload["returned"] == accepted


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_one_face_up_card_is_discarded_two_void(chapter: str) -> None:
    for n, expect in ((1, "card.face_up_discarded"), (2, "round.voided")):
        t = table(chapter)

        def face_up(c: Command, t: PureTable = t) -> list[Input]:
            card, t.shoe = t.shoe[0], t.shoe[1:]
            return [FaceUpCard("shoe", card=card), *PureTable.answer(t, c)]

        on(t, "dispense_stack", face_up, times=n)
        t.press("no_more_bets")
        e = remedy(t.events, expect)
        assert e.rule == f"{chapter}.13(a)"
        if n == 2:
            returned_everything(t, e)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_drawn_in_error_is_used_as_the_next_card(chapter: str) -> None:
    t = table(chapter, "manual_shoe")
    t.press("no_more_bets")
    t.draw(1)
    assert [(e.type, e.rule) for e in t.press("drawn_in_error")] == [("card.drawn_in_error", f"{chapter}.13(b)")]


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("extra", [-1, 1])
def test_wrong_number_of_cards_voids(chapter: str, extra: int) -> None:
    t = table(chapter)

    def wrong(c: Command, t: PureTable = t) -> list[Input]:
        stack, t.shoe = t.shoe[: c.cards + extra], t.shoe[c.cards + extra:]
        return [StackDispensed("shoe", cards=tuple(stack))]

    on(t, "dispense_stack", wrong)
    t.press("no_more_bets")
    void = remedy(t.events, "round.voided")
    assert void.rule == f"{chapter}.13(c)"
    returned_everything(t, void)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_community_card_exposed_voids(chapter: str) -> None:
    t = table(chapter)
    t.press("no_more_bets")
    assert t.state.phase is Phase.DECISION
    void = remedy(t.press("community_exposed"), "round.voided")
    assert void.rule == f"{chapter}.13(d)"


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("code", ["jam", "stopped", "incomplete"])
def test_shuffler_fault_reshuffles(chapter: str, code: str) -> None:
    t = fresh(chapter)
    on(t, "shuffle", lambda c: [DeviceFault("shuffler", code=code)])
    t.feed(OpenTable())
    assert [e.rule for e in t.events if e.type == "shuffle.failed"] == [f"{chapter}.13(e)"]
    assert t.types().count("shuffle.started") == 2 and t.state.phase is Phase.BETTING


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("code", ["jam", "stopped", "empty"])
def test_shoe_fault_while_dealing_voids(chapter: str, code: str) -> None:
    t = table(chapter)
    on(t, "dispense_stack", lambda c: [DeviceFault("shoe", code=code)])
    t.press("no_more_bets")
    void = remedy(t.events, "round.voided")
    assert void.rule == f"{chapter}.13(f)"
    returned_everything(t, void)
    assert t.state.phase is Phase.BETTING  # reshuffled; the next round may be played


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_foreign_card_voids(chapter: str) -> None:
    t = table(chapter)
    on(t, "dispense_stack", lambda c: [DeviceFault("shoe", code="foreign_card", detail="read 'joker'")])
    t.press("no_more_bets")
    assert remedy(t.events, "round.voided").rule == f"{chapter}.13(c)"


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("count", [51, 53])
def test_shuffler_miscount_removes_the_deck(chapter: str, count: int) -> None:
    t = open_table(SPECS[chapter], example_rules(chapter), decks=[list(STANDARD_DECK)])
    t.press("no_more_bets")  # nobody is playing: the round is refused
    on(t, "shuffle", lambda c: [ShuffleCompleted("shuffler", card_count=count)])
    t.feed(CloseTable())
    t.feed(OpenTable())
    e = remedy(t.events, "deck.removed")
    assert e.rule == f"{chapter}.5(b)" and e.payload["card_count"] == count
    assert t.state.phase is Phase.BLOCKED and "deck_removed" in t.state.blocks


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_shoe_offline_before_dealing_blocks_until_marked(chapter: str) -> None:
    t = table(chapter)
    e = remedy(t.feed(DeviceOffline("shoe", reason="unplugged")), "device.unusable")
    assert e.rule == f"{chapter}.13(g)"
    refused = remedy(t.press("no_more_bets"), "no_more_bets.refused")
    assert refused.rule == f"{chapter}.13(g)" and t.state.phase is Phase.BETTING
    assert t.types(t.draw(1)) == []  # no fallback before the mark (nothing is drawn: the deal has not begun)
    marked = remedy(t.feed(MarkOutOfOrder("shoe")), "device.out_of_order")
    assert marked.rule == f"{chapter}.13(g)" and marked.payload["takes_over"] == "manual_shoe"
    t.press("no_more_bets")
    assert t.state.phase is Phase.DEALING
    t.draw()
    assert t.state.phase in (Phase.DECISION, Phase.SHUFFLING, Phase.BETTING)
    assert any(e.type == "card.dealt" for e in t.events)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_shoe_offline_while_dealing_voids_and_blocks(chapter: str) -> None:
    t = table(chapter)
    on(t, "dispense_stack", lambda c: [DeviceOffline("shoe", reason="unplugged")])
    t.press("no_more_bets")
    void = remedy(t.events, "round.voided")
    assert void.rule == f"{chapter}.13(f)"
    returned_everything(t, void)
    assert t.state.phase is Phase.BLOCKED and "device:shoe" in t.state.blocks


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_shuffler_offline_while_shuffling_blocks_then_manual_shuffle_after_the_mark(chapter: str) -> None:
    t = fresh(chapter)
    on(t, "shuffle", lambda c: [DeviceOffline("shuffler", reason="unplugged")])
    t.feed(OpenTable())
    assert t.state.phase is Phase.BLOCKED and "device:shuffler" in t.state.blocks
    refused = remedy(t.feed(Confirm("dealer", "shuffled")), "input.refused")
    assert refused.rule == f"{chapter}.13(g)"
    t.feed(MarkOutOfOrder("shuffler"))
    assert t.state.phase is Phase.SHUFFLING and t.events[-1].payload["device"] == "manual"
    done = remedy(t.feed(Confirm("dealer", "shuffled")), "shuffle.completed")
    assert done.rule == f"{chapter}.5(c)(2)" and t.state.phase is Phase.BETTING
