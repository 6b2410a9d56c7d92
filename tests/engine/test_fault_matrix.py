"""Chapter x fault x phase: every irregularity the chapter names, where it can occur, gets the chapter's
remedy with its citation, for every chapter the live engine runs (controller.games.registry.SPECS).

Each chapter is played only with the dealing methods its spec supports (`supported_methods`; all three when the
spec does not say), and a fault only where it can occur with them: no shoe fault for a chapter dealt from the
hand, no community-card exposure for a chapter without community cards. Chapters of which only part is published
(679a, 684a) cite what their spec answers: the named section, or "(not available ...)" for a step whose section
is not published (see EXPECTED in tests/engine/chapter_faults.py).
"""

from __future__ import annotations

import pytest

from controller.core.cards import STANDARD_DECK
from controller.engine.commands import DeviceCommand, DispenseStack
from controller.engine.inputs import CloseTable, Confirm, CountEntered, Input, MarkOutOfOrder, OpenTable
from controller.engine.round import RoundEngine
from controller.engine.spec import DealingMethod
from controller.engine.state import Phase, TableState
from controller.games.registry import SPECS
from drivers.interfaces import DeviceFault, DeviceOffline, FaceUpCard, ShuffleCompleted, StackDispensed
from tests.engine.chapter_faults import (
    STUB_SECTIONS,
    cite,
    counting,
    methods,
    on,
    remedy,
    returned_everything,
    stub_count_due,
    table,
)
from tests.engine.conftest import PureTable, example_rules

CHAPTERS = sorted(SPECS)


def chapters_dealt_by(*wanted: DealingMethod) -> list[str]:
    """The chapters whose spec supports one of these dealing methods."""
    return [c for c in CHAPTERS if set(methods(c)) & set(wanted)]


def first_method(chapter: str, *preferred: DealingMethod) -> DealingMethod:
    return next(m for m in preferred if m in methods(chapter))


def has_community_cards(chapter: str) -> bool:
    spec, rules = SPECS[chapter], example_rules(chapter)
    wagers = {n: {o.spot: o.min_cents for o in spec.offers(rules)} for n in (1, 2)}
    plan = spec.plan(rules, methods(chapter)[0], [1, 2], wagers)
    return any(t.split("#")[0] == "community" for t in plan.targets)


def fresh(chapter: str) -> PureTable:
    """A table not yet opened."""
    return PureTable(
        RoundEngine(SPECS[chapter], example_rules(chapter), methods(chapter)[0], counting(chapter)), TableState("t1")
    )


def deal(t: PureTable) -> None:
    """ "No more bets", and by hand the dealer's "dealt" once the cards are on the layout."""
    t.press("no_more_bets")
    if t.state.phase is Phase.DEALT:
        t.press("dealt")


AUTOMATED = chapters_dealt_by("automated_shoe")
EVERY_METHOD = [(c, m) for c in CHAPTERS for m in methods(c)]


@pytest.mark.parametrize("chapter", chapters_dealt_by("automated_shoe", "manual_shoe"))
def test_one_face_up_card_is_discarded_two_void(chapter: str) -> None:
    """A card found face up as a shoe deals it (from the hand: the next test)."""
    for n, expect in ((1, "card.face_up_discarded"), (2, "round.voided")):
        t = table(chapter, first_method(chapter, "automated_shoe", "manual_shoe"))
        if t.engine.method == "manual_shoe":
            t.press("no_more_bets")
            for _ in range(n):
                card, t.shoe = t.shoe[0], t.shoe[1:]
                t.feed(FaceUpCard("shoe", card=card))
        else:

            def face_up(c: DeviceCommand, t: PureTable = t) -> list[Input]:
                card, t.shoe = t.shoe[0], t.shoe[1:]
                return [FaceUpCard("shoe", card=card), *PureTable.perfect_devices(t, c)]

            on(t, "dispense_stack", face_up, times=n)
            t.press("no_more_bets")
        e = remedy(t.events, expect)
        assert e.rule == cite(chapter, "13(a)")
        if n == 2:
            returned_everything(t, e)


@pytest.mark.parametrize("chapter", chapters_dealt_by("hand"))
def test_a_face_up_card_in_a_deal_from_the_hand_is_not_used_two_void(chapter: str) -> None:
    """.13(a) names "the shoe or the deck": dealing from the hand the dealer reports the card found face up in the deck
    (the panel's `face_up`); it is set aside and every later card of the shuffler's order is dealt one place earlier,
    so the layout the controller settles is the one on the table. A second voids the round."""
    for n, expect in ((1, "card.face_up_discarded"), (2, "round.voided")):
        t = table(chapter, "hand")
        t.press("no_more_bets")
        assert t.state.phase is Phase.DEALT and t.state.round is not None
        order = list(t.state.deck_order)
        laid = {s: list(st.cards) for s, st in t.state.round.seats.items()}
        # The second card of the deal and, for a void, the third: both would otherwise have gone to the layout.
        for card in order[1 : 1 + n]:
            t.feed(FaceUpCard("dealer_panel", card=card))
        e = remedy(t.events, expect)
        assert e.rule == cite(chapter, "13(a)")
        if n == 2:
            returned_everything(t, e)
            continue
        used = [c for c in order if c != order[1]]
        r = t.state.round
        assert r is not None and order[1] not in r.dealt and r.discarded == [order[1]]
        assert r.dealt == used[: len(r.dealt)]
        assert {s: list(st.cards) for s, st in r.seats.items()} != laid
        t.press("dealt")
        assert remedy(t.events, "stub.discarded").payload["count"] == 52 - len(r.dealt) - 1


@pytest.mark.parametrize("chapter", chapters_dealt_by("manual_shoe", "hand"))
def test_drawn_in_error_is_used_as_the_next_card(chapter: str) -> None:
    method = first_method(chapter, "manual_shoe", "hand")
    t = table(chapter, method)
    t.press("no_more_bets")
    if method == "manual_shoe":
        t.draw(1)
    else:
        assert t.state.phase is Phase.DEALT
    assert [(e.type, e.rule) for e in t.press("drawn_in_error")] == [("card.drawn_in_error", cite(chapter, "13(b)"))]


@pytest.mark.parametrize("chapter", AUTOMATED)
@pytest.mark.parametrize("extra", [-1, 1])
def test_wrong_number_of_cards_voids(chapter: str, extra: int) -> None:
    t = table(chapter, "automated_shoe")

    def wrong(c: DeviceCommand, t: PureTable = t) -> list[Input]:
        assert isinstance(c, DispenseStack)
        stack, t.shoe = t.shoe[: c.cards + extra], t.shoe[c.cards + extra :]
        return [StackDispensed("shoe", cards=tuple(stack))]

    on(t, "dispense_stack", wrong)
    t.press("no_more_bets")
    void = remedy(t.events, "round.voided")
    assert void.rule == cite(chapter, "13(c)")
    returned_everything(t, void)


@pytest.mark.parametrize(("chapter", "method"), EVERY_METHOD)
@pytest.mark.parametrize("misdeal", [True, False])
def test_stub_miscount_voids(chapter: str, method: DealingMethod, misdeal: bool) -> None:
    """A wrong stub count voids the round: as a misdeal (every wager returned) or, not misdealt, with the deck
    removed (e.g. 679a.9(f) dealt from the hand, 684a.10(f) from the automated shoe)."""
    incorrect = STUB_SECTIONS[method][2]
    t = stub_count_due(chapter, method)
    stub = remedy(t.events, "stub_count.requested").sealed
    assert stub is not None
    mismatch = remedy(t.feed(CountEntered("stub", int(stub["expected"]) - 1)), "stub_count.mismatch")
    assert mismatch.rule == cite(chapter, incorrect)
    void = remedy(t.feed(Confirm("dealer", "misdeal" if misdeal else "no_misdeal")), "round.voided")
    assert void.rule == cite(chapter, incorrect)
    returned_everything(t, void)
    if misdeal:
        assert t.state.phase is Phase.BETTING  # reshuffled; the next round may be played
    else:
        assert remedy(t.events, "deck.removed").rule == cite(chapter, incorrect)
        assert t.state.phase is Phase.BLOCKED and "deck_removed" in t.state.blocks


@pytest.mark.parametrize(("chapter", "method"), EVERY_METHOD)
def test_stub_counted_right_completes_the_deal(chapter: str, method: DealingMethod) -> None:
    t = stub_count_due(chapter, method)
    stub = remedy(t.events, "stub_count.requested").sealed
    assert stub is not None
    counted = remedy(t.feed(CountEntered("stub", int(stub["expected"]))), "stub.counted")
    assert counted.rule == cite(chapter, STUB_SECTIONS[method][1])
    assert t.state.phase in (Phase.DECISION, Phase.SHUFFLING, Phase.BETTING)


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if has_community_cards(c)])
def test_community_card_exposed_voids(chapter: str) -> None:
    t = table(chapter)
    deal(t)
    assert t.state.phase is Phase.DECISION
    void = remedy(t.press("community_exposed"), "round.voided")
    assert void.rule == cite(chapter, "13(d)")


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if not has_community_cards(c)])
def test_a_community_exposure_is_ignored_without_community_cards(chapter: str) -> None:
    """684a.10(b) deals no community card; 679a's example deals Pair Bonus fourth cards, not the 679a.9(g) one."""
    t = table(chapter)
    deal(t)
    ignored = t.press("community_exposed")
    assert [e.type for e in ignored] == ["input.ignored"] and t.state.phase is Phase.DECISION


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_dealers_wrong_card_count_voids(chapter: str) -> None:
    """.13(c): a player or the community area dealt an incorrect number of cards, reported by the dealer on the panel
    (e.g. 643a.13(c), 683a.13(c); 679a.9(f) and 684a.10(f), their misdeal, where .13 is not published)."""
    t = table(chapter)
    deal(t)
    void = remedy(t.press("wrong_card_count"), "round.voided")
    assert void.rule == cite(chapter, "13(c)")
    returned_everything(t, void)


def test_which_chapters_have_community_cards() -> None:
    assert {c for c in CHAPTERS if has_community_cards(c)} >= {"643a", "655a", "683a"}
    assert not has_community_cards("679a")  # its example deals Pair Bonus fourth cards (679a.9(b)), not 9(g)
    assert not has_community_cards("684a")


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("code", ["jam", "stopped", "incomplete"])
def test_shuffler_fault_reshuffles(chapter: str, code: str) -> None:
    t = fresh(chapter)
    on(t, "shuffle", lambda c: [DeviceFault("shuffler", code=code)])
    t.feed(OpenTable())
    assert [e.rule for e in t.events if e.type == "shuffle.failed"] == [cite(chapter, "13(e)")]
    assert t.types().count("shuffle.started") == 2 and t.state.phase is Phase.BETTING


@pytest.mark.parametrize("chapter", AUTOMATED)
@pytest.mark.parametrize("code", ["jam", "stopped", "empty"])
def test_shoe_fault_while_dealing_voids(chapter: str, code: str) -> None:
    t = table(chapter, "automated_shoe")
    on(t, "dispense_stack", lambda c: [DeviceFault("shoe", code=code)])
    t.press("no_more_bets")
    void = remedy(t.events, "round.voided")
    assert void.rule == cite(chapter, "13(f)")
    returned_everything(t, void)
    if code == "empty":
        assert t.state.phase is Phase.BETTING  # reshuffled, which refills the shoe; the next round may be played
    else:  # held until it is back (.13(g)): tests/engine/test_fault_while_dealing.py
        assert t.state.phase is Phase.BLOCKED and "device:shoe" in t.state.blocks


@pytest.mark.parametrize("chapter", chapters_dealt_by("hand"))
@pytest.mark.parametrize("code", ["jam", "stopped", "empty", "foreign_card"])
def test_no_shoe_fault_touches_a_round_dealt_from_the_hand(chapter: str, code: str) -> None:
    t = table(chapter, "hand")
    t.press("no_more_bets")
    assert t.state.phase is Phase.DEALT
    t.feed(DeviceFault("shoe", code=code))
    t.feed(DeviceOffline("shoe", reason="unplugged"))
    assert "round.voided" not in t.types() and "device:shoe" not in t.state.blocks
    # Offline, a fallback shoe is held and said so (`device/shoe` reads unusable), blocking no round.
    held = ["offline (unplugged)"] if t.engine.options.fallback_dealing_method is not None else []
    assert [e.payload["reason"] for e in t.events if e.type == "device.unusable"] == held
    t.press("dealt")
    # mypy keeps the phase narrowed by the assert above across the inputs fed since (python/mypy#17537)
    assert t.state.phase is Phase.DECISION  # type: ignore[comparison-overlap]


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_foreign_card_voids(chapter: str) -> None:
    t = table(chapter, "automated_shoe")
    on(t, "dispense_stack", lambda c: [DeviceFault("shoe", code="foreign_card", detail="read 'joker'")])
    t.press("no_more_bets")
    assert remedy(t.events, "round.voided").rule == cite(chapter, "13(c)")


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("count", [51, 53])
def test_shuffler_miscount_removes_the_deck(chapter: str, count: int) -> None:
    t = PureTable(
        RoundEngine(SPECS[chapter], example_rules(chapter), methods(chapter)[0], counting(chapter)),
        TableState("t1"),
        [list(STANDARD_DECK)],
    )
    t.feed(OpenTable())
    t.press("no_more_bets")  # nobody is playing: the round is refused
    on(t, "shuffle", lambda c: [ShuffleCompleted("shuffler", card_count=count)])
    t.feed(CloseTable())
    t.feed(OpenTable())
    e = remedy(t.events, "deck.removed")
    assert e.rule == cite(chapter, "5(b)") and e.payload["card_count"] == count
    assert t.state.phase is Phase.BLOCKED and "deck_removed" in t.state.blocks


@pytest.mark.parametrize("chapter", [c for c in AUTOMATED if "manual_shoe" in methods(c)])
def test_shoe_offline_before_dealing_blocks_until_marked(chapter: str) -> None:
    t = table(chapter, "automated_shoe")
    e = remedy(t.feed(DeviceOffline("shoe", reason="unplugged")), "device.unusable")
    assert e.rule == cite(chapter, "13(g)")
    refused = remedy(t.press("no_more_bets"), "no_more_bets.refused")
    assert refused.rule == cite(chapter, "13(g)") and t.state.phase is Phase.BETTING
    assert t.types(t.draw(1)) == []  # no fallback before the mark (nothing is drawn: the deal has not begun)
    marked = remedy(t.feed(MarkOutOfOrder("shoe")), "device.out_of_order")
    assert marked.rule == cite(chapter, "13(g)") and marked.payload["takes_over"] == "manual_shoe"
    t.press("no_more_bets")
    # mypy keeps the phase narrowed by the assert above across the inputs fed since (python/mypy#17537)
    assert t.state.phase is Phase.DEALING  # type: ignore[comparison-overlap]
    t.draw()
    assert t.state.phase in (Phase.DECISION, Phase.SHUFFLING, Phase.BETTING)
    assert any(e.type == "card.dealt" for e in t.events)


@pytest.mark.parametrize("chapter", [c for c in AUTOMATED if "manual_shoe" not in methods(c)])
def test_shoe_offline_with_no_other_published_method_waits_for_the_shoe(chapter: str) -> None:
    """A chapter that publishes only the automated shoe has nothing to take over from it (.13(g))."""
    t = table(chapter, "automated_shoe")
    e = remedy(t.feed(DeviceOffline("shoe", reason="unplugged")), "device.unusable")
    assert e.rule == cite(chapter, "13(g)") and "no other dealing method" in e.payload["remedy"]
    refused = remedy(t.press("no_more_bets"), "no_more_bets.refused")
    assert refused.rule == cite(chapter, "13(g)") and t.state.phase is Phase.BETTING
    marked = remedy(t.feed(MarkOutOfOrder("shoe")), "device.out_of_order")
    assert marked.rule == cite(chapter, "13(g)") and marked.payload["takes_over"] == "no other dealing method"
    t.press("no_more_bets")
    # mypy keeps the phase narrowed by the assert above across the inputs fed since (python/mypy#17537)
    assert t.state.phase is not Phase.DEALING and "no_method" in t.state.blocks  # type: ignore[comparison-overlap]
    assert not any(e.type in ("cards.dealt", "card.dealt") for e in t.events)


@pytest.mark.parametrize("chapter", AUTOMATED)
def test_shoe_offline_while_dealing_voids_and_blocks(chapter: str) -> None:
    t = table(chapter, "automated_shoe")
    on(t, "dispense_stack", lambda c: [DeviceOffline("shoe", reason="unplugged")])
    t.press("no_more_bets")
    void = remedy(t.events, "round.voided")
    assert void.rule == cite(chapter, "13(f)")
    returned_everything(t, void)
    assert t.state.phase is Phase.BLOCKED and "device:shoe" in t.state.blocks


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if methods(c) != ("hand",)])
def test_shuffler_offline_while_shuffling_blocks_then_manual_shuffle_after_the_mark(chapter: str) -> None:
    t = fresh(chapter)
    on(t, "shuffle", lambda c: [DeviceOffline("shuffler", reason="unplugged")])
    t.feed(OpenTable())
    assert t.state.phase is Phase.BLOCKED and "device:shuffler" in t.state.blocks
    refused = remedy(t.feed(Confirm("dealer", "shuffled")), "input.refused")
    assert refused.rule == cite(chapter, "13(g)")
    t.feed(MarkOutOfOrder("shuffler"))
    # mypy keeps the phase narrowed by the assert above across the inputs fed since (python/mypy#17537)
    assert t.state.phase is Phase.SHUFFLING and t.events[-1].payload["device"] == "manual"  # type: ignore[comparison-overlap]
    done = remedy(t.feed(Confirm("dealer", "shuffled")), "shuffle.completed")
    assert done.rule == cite(chapter, "5(c)(2)") and t.state.phase is Phase.BETTING


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if methods(c) == ("hand",)])
def test_shuffler_out_of_order_stops_a_chapter_dealt_only_from_the_hand(chapter: str) -> None:
    """Dealing from the hand needs the automated shuffler (e.g. 679a.9(a)(1)); with no other published method
    the table waits for it."""
    t = fresh(chapter)
    on(t, "shuffle", lambda c: [DeviceOffline("shuffler", reason="unplugged")])
    t.feed(OpenTable())
    assert t.state.phase is Phase.BLOCKED and "device:shuffler" in t.state.blocks
    refused = remedy(t.feed(Confirm("dealer", "shuffled")), "input.refused")
    assert refused.rule == cite(chapter, "13(g)")
    marked = remedy(t.feed(MarkOutOfOrder("shuffler")), "device.out_of_order")
    assert marked.rule == cite(chapter, "13(g)")
    assert t.state.phase is Phase.BLOCKED and "no_method" in t.state.blocks
    assert "betting.opened" not in t.types()
