"""A Cajun Stud round through the pure engine, by every dealing method: order of events, citations and
amounts, the chapter's dealing orders and its irregularities (683a.13).

Expected odds are typed in from the 683a.12 text: 2 to 1 two pair (paytable A), 1 to 1 a pair of jacks or
better, 5 to 1 a Pocket Bonus pair (A), 1 to 1 a Board Bonus pair (A), 100 to 1 All-Six four of a kind (C).
"""

from __future__ import annotations

from typing import Any, Protocol

import pytest

from controller.engine.commands import DeviceCommand
from controller.engine.inputs import Input, PlayerLeft
from controller.engine.spec import DealingMethod, RoundView, SeatView
from controller.engine.state import Phase
from controller.games.cajun_stud.record import CajunStudRound
from controller.games.cajun_stud.rules import CajunStudRules
from controller.games.cajun_stud.settle import settle_round
from controller.games.cajun_stud.spec import CajunStudSpec
from drivers.interfaces import CardDrawn, DeviceFault, FaceUpCard, StackDispensed
from tests.engine.conftest import Answer, ChapterTable, Deck, PureTable

METHODS: tuple[DealingMethod, ...] = ("automated_shoe", "manual_shoe", "hand")

SEAT1, SEAT3, SEAT5 = ["Jh", "Jd"], ["7c", "7s"], ["2h", "9d"]
ALL_SIX = ["Js", "Jc", "3d", "4d"]
COMMUNITY = ["Kc", "Kh", "5s"]


def rules(**kw: Any) -> CajunStudRules:
    base: dict[str, Any] = {
        "chapter": "683a",
        "ante_paytable": "A",
        "optional_wagers": ["pocket_bonus", "board_bonus", "lo_ball", "all_six_bonus"],
        "pocket_bonus_paytable": "A",
        "board_bonus_paytable": "A",
        "lo_ball_paytable": "A",
        "all_six_bonus_paytable": "C",
    }
    return CajunStudRules.model_validate({**base, **kw})


def order(method: str, seats: list[list[str]], all_six: list[str], community: list[str]) -> list[str]:
    """The deck's top cards in the order the method deals them."""
    if method == "automated_shoe":
        # 683a.10(b), (c): two-card stacks first, the All-Six Bonus cards from the stub after them.
        return [*(c for s in seats for c in s), *all_six, *community]
    # 683a.8(c), 683a.9(b): the All-Six Bonus cards first, then one card at a time around the table.
    return [*all_six, *(s[i] for i in range(2) for s in seats), *community]


def deal(t: PureTable, method: str) -> None:
    if method == "manual_shoe":
        t.draw()
    elif method == "hand":
        t.press("dealt")


class Table(Protocol):
    """The table fixture: a 683a table dealt by `method`, `top` the deck's first cards, rules overridden."""

    def __call__(self, method: DealingMethod, top: list[str] | None = None, **kw: object) -> PureTable: ...


@pytest.fixture
def table(chapter_table: ChapterTable, deck: Deck) -> Table:
    def make(method: DealingMethod, top: list[str] | None = None, **kw: object) -> PureTable:
        return chapter_table(CajunStudSpec(), rules(**kw), method, [deck(top)] if top else [])

    return make


def play_scripted_round(table: Table, method: DealingMethod) -> PureTable:
    t = table(method, order(method, [SEAT1, SEAT3, SEAT5], ALL_SIX, COMMUNITY))
    t.wager(1, "ante", 1000)
    t.wager(1, "all_six_bonus", 500)
    t.wager(3, "ante", 500)
    t.wager(3, "pocket_bonus", 500)
    t.wager(5, "ante", 500)
    t.wager(5, "board_bonus", 500)
    t.wager(5, "lo_ball", 500)
    t.wager(6, "pocket_bonus", 500)  # no Ante: returned at "no more bets" (683a.7(d)(1), 683a.8(c))
    t.press("no_more_bets")
    deal(t, method)
    t.wager(1, "raise_1", 3000)  # first decision: 3x, 1x, 1x
    t.wager(3, "raise_1", 500)
    t.wager(5, "raise_1", 500)
    t.wager(1, "raise_2", 1000)  # second decision: seat 3 folds, keeping its Pocket Bonus (683a.11(d))
    t.press("fold")
    t.wager(5, "raise_2", 500)
    t.wager(1, "raise_3", 2000)  # third decision
    t.wager(5, "raise_3", 500)
    return t


DEAL_EVENTS = {
    "automated_shoe": [
        ("no_more_bets", "683a.10(a)(2)"),
        ("lockout.confirmed", "683a.10(a)(2)"),
        ("deal.started", "683a.10(b)"),
        *[("cards.dealt", "683a.10(b)")] * 3,
        ("all_six_bonus.dealt", "683a.10(c)"),
        ("community.dealt", "683a.10(c)"),
        ("stub.discarded", "683a.10(c)(2)"),
    ],
    "manual_shoe": [
        ("no_more_bets", "683a.8(b)"),
        ("lockout.confirmed", "683a.8(b)"),
        ("deal.started", "683a.8(c)"),
        *[("card.dealt", "683a.8(c)")] * 13,
        ("stub.discarded", "683a.8(d)"),
    ],
    "hand": [
        ("no_more_bets", "683a.9(a)(3)"),
        ("lockout.confirmed", "683a.9(a)(3)"),
        ("deal.started", "683a.9(b)"),
        ("deal.awaiting_dealer", "683a.9(b)"),
        ("all_six_bonus.dealt", "683a.9(b)"),
        *[("cards.dealt", "683a.9(b)")] * 3,
        ("community.dealt", "683a.9(b)"),
        ("stub.discarded", "683a.9(c)"),
    ],
}


@pytest.mark.parametrize("method", METHODS)
def test_full_round_event_order_and_rules(table: Table, method: DealingMethod) -> None:
    t = play_scripted_round(table, method)
    round_events = [e for e in t.events if e.round_id == "t1-r000001"]
    assert [(e.type, e.rule) for e in round_events] == [
        ("betting.opened", "683a.7(c)"),
        ("wager.accepted", "683a.7(d)(1)"),
        ("wager.accepted", "683a.7(d)(5)"),
        ("wager.accepted", "683a.7(d)(1)"),
        ("wager.accepted", "683a.7(d)(2)"),
        ("wager.accepted", "683a.7(d)(1)"),
        ("wager.accepted", "683a.7(d)(3)"),
        ("wager.accepted", "683a.7(d)(4)"),
        ("wager.accepted", "683a.7(d)(2)"),
        ("wager.returned", "683a.7(d)(2)"),
        *DEAL_EVENTS[method],
        ("decision.requested", "683a.11(b)"),
        ("street_wager.placed", "683a.11(b)"),
        ("decision.requested", "683a.11(b)"),
        ("street_wager.placed", "683a.11(b)"),
        ("decision.requested", "683a.11(b)"),
        ("street_wager.placed", "683a.11(b)"),
        ("community.revealed", "683a.11(c)"),
        ("decision.requested", "683a.11(d)"),
        ("street_wager.placed", "683a.11(d)"),
        ("decision.requested", "683a.11(d)"),
        ("seat.folded", "683a.11(d)"),
        ("decision.requested", "683a.11(d)"),
        ("street_wager.placed", "683a.11(d)"),
        ("community.revealed", "683a.11(e)"),
        ("decision.requested", "683a.11(f)"),
        ("street_wager.placed", "683a.11(f)"),
        ("decision.requested", "683a.11(f)"),
        ("street_wager.placed", "683a.11(f)"),
        ("community.revealed", "683a.11(g)"),
        # 683a.11(h): counterclockwise from the dealer's right, one player at a time, the Ante and Raise
        # Wagers first and then the optional wagers in the order of 683a.11(i).
        ("hand.settled", "683a.11(h)(1)"),  # seat 5
        ("board_bonus.settled", "683a.11(i)(2)(ii)"),
        ("lo_ball.settled", "683a.11(i)(3)(i)"),
        ("pocket_bonus.settled", "683a.11(i)(1)(ii)"),  # seat 3 folded, its Pocket Bonus stayed in play
        ("hand.settled", "683a.11(h)(1)"),  # seat 1
        ("all_six_bonus.revealed", "683a.11(i)(4)"),
        ("all_six_bonus.settled", "683a.11(i)(4)(ii)"),
        ("round.recorded", "683a.11(j)"),  # the round as `tablectl settle` reads it
        ("round.completed", "683a.11(j)"),
    ]
    assert [e.payload["seat"] for e in round_events if e.type.endswith(".settled")] == [5, 5, 5, 3, 1, 1]
    after = t.events[t.events.index(round_events[-1]) + 1]
    assert (after.type, after.rule) == ("shuffle.started", "683a.5(a)")


@pytest.mark.parametrize("method", METHODS)
def test_full_round_amounts(table: Table, method: DealingMethod) -> None:
    t = play_scripted_round(table, method)
    by = {(e.type, e.payload.get("seat")): e.payload for e in t.events}
    assert by[("wager.returned", 6)]["amount"] == 500
    asks = [e.payload for e in t.events if e.type == "decision.requested"]
    assert asks[0] == {
        "seat": 1,
        "decision": "raise_1",
        "street": "first Raise Wager",
        "spot": "raise_1",
        "kind": "wager_or_fold",
        "allowed": [1000, 2000, 3000],
    }
    assert [p["multiple"] for p in (e.payload for e in t.events if e.type == "street_wager.placed")] == [
        3,
        1,
        1,
        1,
        1,
        2,
        1,
    ]
    # Seat 3 folded at the second decision: the Ante and the first raise go (683a.11(d)), the Pocket
    # Bonus and the cards stay.
    assert by[("seat.folded", 3)] == {
        "seat": 3,
        "street": "second Raise Wager",
        "decision": "raise_2",
        "collected": {"ante": 500, "raise_1": 500},
        "cards": "left on the table",
        "optional_wagers_pending": ["pocket_bonus"],
    }
    # Seat 1: J-J with K-K-5 is two pair, 2 to 1 on 10 + 30 + 10 + 20 dollars.
    seat1 = by[("hand.settled", 1)]
    assert (seat1["hand"], seat1["paytable"], seat1["community"]) == ("two_pair", "683a.12(a) paytable A", COMMUNITY)
    assert [(w["wager"], w["amount"], w["paid"], w["returned"]) for w in seat1["wagers"]] == [
        ("ante", 1000, 2000, 1000),
        ("raise_1", 3000, 6000, 3000),
        ("raise_2", 1000, 2000, 1000),
        ("raise_3", 2000, 4000, 2000),
    ]
    # Seat 5: 2-9 with K-K-5 is a pair of kings, 1 to 1 on 4 x 5 dollars.
    seat5 = by[("hand.settled", 5)]
    assert (seat5["hand"], seat5["paid"]) == ("pair_of_jacks_or_better", 2000)
    board = by[("board_bonus.settled", 5)]
    assert (board["hand"], board["odds"], board["paid"], board["paytable"]) == (
        "pair",
        "1 to 1",
        500,
        "683a.12(c) paytable A",
    )
    lo = by[("lo_ball.settled", 5)]
    assert (lo["outcome"], lo["collected"]) == ("lose", 500)
    pocket = by[("pocket_bonus.settled", 3)]
    assert (pocket["hand"], pocket["odds"], pocket["paid"], pocket["cards"]) == ("pair", "5 to 1", 2500, SEAT3)
    six_shown = by[("all_six_bonus.revealed", None)]
    assert six_shown["cards"] == ALL_SIX
    six = by[("all_six_bonus.settled", 1)]
    assert (six["hand"], six["odds"], six["paid"], six["paytable"]) == (
        "four_of_a_kind",
        "100 to 1",
        50_000,
        "683a.12(e) paytable C",
    )
    done = by[("round.completed", None)]
    assert done["paid"] == 14_000 + 2_000 + 500 + 2_500 + 50_000
    assert done["collected"] == 500 + 500 + 500  # seat 3's Ante and first raise, seat 5's Lo Ball
    assert done["areas"] == {"all_six_bonus": ALL_SIX, "community": COMMUNITY}


@pytest.mark.parametrize("method", METHODS)
def test_no_card_identity_in_public_payload_before_settlement(table: Table, method: DealingMethod) -> None:
    t = play_scripted_round(table, method)
    settled = next(i for i, e in enumerate(t.events) if e.type == "hand.settled")
    cards = {*SEAT1, *SEAT3, *SEAT5, *ALL_SIX, *COMMUNITY}
    for e in t.events[:settled]:
        assert not any(c in str(e.payload) for c in cards), e


@pytest.mark.parametrize("method", ["manual_shoe", "hand"])
def test_all_six_cards_come_first_from_a_manual_shoe_or_the_hand(table: Table, method: DealingMethod) -> None:
    """683a.8(c), 683a.9(b): the first four cards go to the All-Six Bonus area, then one card at a time to each player
    clockwise from the dealer's left, then the community (683a.8(d), 683a.9(c))."""
    t = table(method, ["Js", "Jc", "3d", "4d", "Ah", "2c", "Ad", "2d", "Ks", "Kh", "5s"])
    t.wager(2, "ante", 500)
    t.wager(4, "ante", 500)
    t.wager(4, "all_six_bonus", 500)
    t.press("no_more_bets")
    deal(t, method)
    r = t.state.round
    assert r is not None
    assert (r.seats[2].cards, r.seats[4].cards) == (["Ah", "Ad"], ["2c", "2d"])
    assert (r.areas["all_six_bonus"], r.areas["community"]) == (["Js", "Jc", "3d", "4d"], ["Ks", "Kh", "5s"])
    if method == "manual_shoe":
        assert [e.payload["to"] for e in t.events if e.type == "card.dealt"] == [
            *["all_six_bonus"] * 4,
            "seat:2",
            "seat:4",
            "seat:2",
            "seat:4",
            *["community"] * 3,
        ]
    assert t.types()[-2:] == ["stub.discarded", "decision.requested"]


def test_all_six_cards_come_from_the_stub_of_an_automated_shoe(table: Table) -> None:
    """683a.10(b): the two-card stacks first; 683a.10(c)(1), (2): then from the stub by hand, the four All-Six Bonus
    cards and the three community cards, and the stub to the discard rack."""
    t = table("automated_shoe", ["Ah", "Ad", "2c", "2d", "Js", "Jc", "3d", "4d", "Ks", "Kh", "5s"])
    t.wager(2, "ante", 500)
    t.wager(2, "all_six_bonus", 500)
    t.wager(4, "ante", 500)
    t.press("no_more_bets")
    r = t.state.round
    assert r is not None
    assert (r.seats[2].cards, r.seats[4].cards) == (["Ah", "Ad"], ["2c", "2d"])
    assert (r.areas["all_six_bonus"], r.areas["community"]) == (["Js", "Jc", "3d", "4d"], ["Ks", "Kh", "5s"])
    stub = [(e.type, e.rule, e.sealed) for e in t.events if e.rule and e.rule.startswith("683a.10(c)")]
    assert stub == [
        ("all_six_bonus.dealt", "683a.10(c)", {"cards": ["Js", "Jc", "3d", "4d"]}),
        ("community.dealt", "683a.10(c)", {"cards": ["Ks", "Kh", "5s"]}),
        # 683a.10(c)(2): once all three community cards are dealt, the stub goes to the discard rack.
        ("stub.discarded", "683a.10(c)(2)", None),
    ]
    assert next(e for e in t.events if e.type == "stub.discarded").payload["count"] == 52 - 11


@pytest.mark.parametrize("method", METHODS)
def test_no_all_six_cards_without_an_all_six_wager(table: Table, method: DealingMethod) -> None:
    t = table(method, ["Ah", "Ad", "Ks", "Kh", "5s"])
    t.wager(3, "ante", 500)
    t.wager(3, "pocket_bonus", 500)
    t.press("no_more_bets")
    deal(t, method)
    r = t.state.round
    assert r is not None
    assert "all_six_bonus" not in r.areas
    assert (r.seats[3].cards, r.areas["community"]) == (["Ah", "Ad"], ["Ks", "Kh", "5s"])


@pytest.mark.parametrize("method", METHODS)
def test_raise_must_be_one_to_three_antes_and_in_turn(table: Table, method: DealingMethod) -> None:
    """683a.1 "Raise Wager": one, two or three times the Ante, at 683a.11(b), (d), (f), in turn."""
    t = table(method)
    t.wager(2, "ante", 500)
    t.wager(4, "ante", 500)
    t.press("no_more_bets")
    deal(t, method)
    for spot, rule in (("raise_1", "683a.11(b)"), ("raise_2", "683a.11(d)"), ("raise_3", "683a.11(f)")):
        for bad in (0, 700, 2000):
            rejected = t.wager(2, spot, bad)
            assert [(e.type, e.rule) for e in rejected] == [("wager.rejected", rule)]
            assert rejected[0].payload["reason"] == "must be one of $5.00, $10.00, $15.00"
        early = t.wager(4, spot, 500)
        assert early[0].type == "wager.rejected" and "seat 2 is deciding" in early[0].payload["reason"]
        assert t.types(t.wager(2, spot, 1500))[:2] == ["street_wager.placed", "decision.requested"]
        t.wager(4, spot, 500)
    assert "round.completed" in t.types()


@pytest.mark.parametrize("method", METHODS)
def test_optional_wager_needs_an_ante_and_the_table_limits(table: Table, method: DealingMethod) -> None:
    t = table(
        method,
        optional_wagers=["pocket_bonus"],
        board_bonus_paytable=None,
        lo_ball_paytable=None,
        all_six_bonus_paytable=None,
    )
    assert next(e for e in t.events if e.type == "betting.opened").payload["wagers_offered"] == ["ante", "pocket_bonus"]
    assert [(e.type, e.rule) for e in t.wager(1, "board_bonus", 500)] == [("wager.rejected", "683a.7(c)")]
    # No limits of its own in CajunStudRules: an optional wager takes the Ante's ($5 to $100).
    assert [(e.type, e.rule) for e in t.wager(1, "pocket_bonus", 100)] == [("wager.rejected", "683a.7(d)(2)")]
    t.wager(1, "pocket_bonus", 500)
    refused = t.press("no_more_bets")
    assert [(e.type, e.rule) for e in refused] == [
        ("wager.returned", "683a.7(d)(2)"),
        ("no_more_bets.refused", "683a.7(d)(1)"),
    ]
    assert "683a.7(d)(1)" in refused[0].payload["reason"]


# -- 683a.13 irregularities ----------------------------------------------------------------------------------


def test_face_up_card_in_an_automated_shoe_discarded_then_two_void(table: Table) -> None:
    t = table("automated_shoe")
    t.wager(1, "ante", 500)
    t.wager(2, "ante", 500)
    t.wager(2, "all_six_bonus", 500)
    shown = {"n": 0}

    def answer(c: DeviceCommand, orig: Answer = t.answer) -> list[Input]:
        # The shoe sets aside the first card of each stack it finds face up, then dispenses the next two.
        if c.verb == "dispense_stack" and shown["n"] < 2:
            shown["n"] += 1
            card, t.shoe = t.shoe[0], t.shoe[1:]
            return [FaceUpCard("shoe", card=card), *orig(c)]
        return orig(c)

    t.answer = answer
    t.press("no_more_bets")
    assert [(e.type, e.rule) for e in t.events if e.type in ("card.face_up_discarded", "round.voided")] == [
        ("card.face_up_discarded", "683a.13(a)"),
        ("round.voided", "683a.13(a)"),
    ]
    void = next(e for e in t.events if e.type == "round.voided")
    assert void.payload["returned"] == {"1": {"ante": 500}, "2": {"ante": 500, "all_six_bonus": 500}}
    # The stack the shoe dispensed after the second face-up card arrives after the void and is ignored.
    after = [(e.type, e.rule) for e in t.events[t.events.index(void) + 1 :] if e.type != "input.ignored"]
    assert after == [
        ("shuffle.started", "683a.5(a)"),
        ("shuffle.completed", "683a.5(b)"),
        ("betting.opened", "683a.7(c)"),
    ]


def test_face_up_card_in_a_manual_shoe_is_not_used(table: Table) -> None:
    """The card after the one found face up is the first All-Six Bonus card (683a.8(c)); the deck stays whole."""
    t = table("manual_shoe", ["9c", "Js", "Jc", "3d", "4d", "Ah", "Ad", "Ks", "Kh", "5s"])
    t.wager(1, "ante", 500)
    t.wager(1, "all_six_bonus", 500)
    t.press("no_more_bets")
    card, t.shoe = t.shoe[0], t.shoe[1:]
    shown = t.feed(FaceUpCard("shoe", card=card))
    assert [(e.type, e.rule, e.sealed) for e in shown] == [("card.face_up_discarded", "683a.13(a)", {"card": "9c"})]
    t.draw()
    r = t.state.round
    assert r is not None
    # The next card off the shoe is the first All-Six Bonus card (683a.8(c)); the deck is still whole.
    assert (r.areas["all_six_bonus"], r.seats[1].cards) == (["Js", "Jc", "3d", "4d"], ["Ah", "Ad"])
    assert next(e for e in t.events if e.type == "stub.discarded").payload["count"] == 52 - 9 - 1
    assert t.types()[-1] == "decision.requested"


def test_two_face_up_cards_in_a_manual_shoe_void_the_round(table: Table) -> None:
    t = table("manual_shoe")
    t.wager(1, "ante", 500)
    t.wager(1, "lo_ball", 500)
    t.press("no_more_bets")
    t.draw(2)
    t.feed(FaceUpCard("shoe", card=t.shoe[0]))
    void = t.feed(FaceUpCard("shoe", card=t.shoe[1]))
    assert (void[0].type, void[0].rule) == ("round.voided", "683a.13(a)")
    assert void[0].payload["returned"] == {"1": {"ante": 500, "lo_ball": 500}}


def test_wrong_stack_size_voids_and_returns_every_wager(table: Table) -> None:
    t = table("automated_shoe")
    t.wager(1, "ante", 500)
    t.wager(1, "pocket_bonus", 500)
    orig = t.answer
    t.answer = lambda c: [StackDispensed("shoe", cards=("As",))] if c.verb == "dispense_stack" else orig(c)
    t.press("no_more_bets")
    void = next(e for e in t.events if e.type == "round.voided")
    assert void.rule == "683a.13(c)"
    assert void.payload["returned"] == {"1": {"ante": 500, "pocket_bonus": 500}}
    assert "cards.dealt" not in t.types()


def test_a_stub_that_does_not_complete_the_deck_voids(table: Table) -> None:
    from drivers.interfaces import StubRemoved

    t = table("automated_shoe")
    t.wager(1, "ante", 500)
    t.wager(1, "all_six_bonus", 500)
    # The stub is one card short: the all-six and community areas would not get their count (683a.13(c)).
    orig = t.answer
    t.answer = lambda c: [StubRemoved("shoe", cards=tuple(t.shoe[1:]))] if c.verb == "remove_stub" else orig(c)
    t.press("no_more_bets")
    void = next(e for e in t.events if e.type == "round.voided")
    assert void.rule == "683a.13(c)" and "deck check failed" in void.payload["reason"]
    assert void.payload["returned"] == {"1": {"ante": 500, "all_six_bonus": 500}}


def test_a_card_read_twice_from_a_manual_shoe_voids(table: Table) -> None:
    t = table("manual_shoe")
    t.wager(1, "ante", 500)
    t.wager(1, "all_six_bonus", 500)
    t.press("no_more_bets")
    t.draw(1)
    assert t.state.round is not None
    void = t.feed(CardDrawn("shoe", card=t.state.round.dealt[0]))
    assert (void[0].type, void[0].rule) == ("round.voided", "683a.13(c)")
    assert void[0].payload["returned"] == {"1": {"ante": 500, "all_six_bonus": 500}}


def test_automated_shoe_jam_voids_the_round(table: Table) -> None:
    t = table("automated_shoe")
    t.wager(1, "ante", 500)
    t.wager(2, "ante", 500)
    t.wager(2, "board_bonus", 500)
    stacks = {"n": 0}

    def answer(c: DeviceCommand, orig: Answer = t.answer) -> list[Input]:
        if c.verb == "dispense_stack":
            stacks["n"] += 1
            if stacks["n"] == 2:
                return [DeviceFault("shoe", code="jam", detail="stack 2 stuck")]
        return orig(c)

    t.answer = answer
    t.press("no_more_bets")
    # The jammed shoe is held (.13(g)) until it is back: the next round is not shuffled for it (docs/rules.md).
    assert [(e.type, e.rule) for e in t.events[-5:]] == [
        ("cards.dealt", "683a.10(b)"),
        ("device.fault", None),
        ("device.unusable", "683a.13(g)"),
        ("round.voided", "683a.13(f)"),
        ("table.blocked", None),
    ]
    void = t.events[-2]
    assert void.payload["returned"] == {"1": {"ante": 500}, "2": {"ante": 500, "board_bonus": 500}}
    assert t.state.phase is Phase.BLOCKED


@pytest.mark.parametrize("method", METHODS)
def test_shuffler_jam_reshuffles(table: Table, method: DealingMethod) -> None:
    t = table(method)
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    deal(t, method)
    jammed = {"done": False}

    def answer(c: DeviceCommand, orig: Answer = t.answer) -> list[Input]:
        if c.verb == "shuffle" and not jammed["done"]:
            jammed["done"] = True
            return [DeviceFault("shuffler", code="jam", detail="motor stalled")]
        return orig(c)

    t.answer = answer
    for spot in ("raise_1", "raise_2", "raise_3"):
        t.wager(1, spot, 500)
    after = t.events[t.types().index("round.completed") + 1 :]
    assert [(e.type, e.rule) for e in after] == [
        ("shuffle.started", "683a.5(a)"),
        ("device.fault", None),
        ("shuffle.failed", "683a.13(e)"),
        ("shuffle.started", "683a.5(a)"),
        ("shuffle.completed", "683a.5(b)"),
        ("betting.opened", "683a.7(c)"),
    ]
    assert t.state.phase is Phase.BETTING


def test_shuffler_miscount_removes_the_deck(table: Table) -> None:
    from controller.core.cards import STANDARD_DECK

    t = table("automated_shoe")
    t.decks = [list(STANDARD_DECK[:51])]
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    for spot in ("raise_1", "raise_2", "raise_3"):
        t.wager(1, spot, 500)
    assert (t.events[-1].type, t.events[-1].rule) == ("deck.removed", "683a.5(b)")
    assert t.state.phase is Phase.BLOCKED


# -- 683a.13(d): a community card exposed early ----------------------------------------------------------------


def exposure_round(table: Table, method: DealingMethod) -> PureTable:
    """Seat 2 raised once and keeps a Pocket Bonus and a Board Bonus; seat 4 only an Ante; a community card
    is then exposed before the first is revealed (683a.11(c))."""
    t = table(method, order(method, [["Ah", "Ad"], ["2c", "7d"]], [], ["Ks", "Kh", "5s"]))
    t.wager(2, "ante", 500)
    t.wager(2, "pocket_bonus", 500)
    t.wager(2, "board_bonus", 500)
    t.wager(4, "ante", 500)
    t.press("no_more_bets")
    deal(t, method)
    t.wager(2, "raise_1", 1000)
    return t


@pytest.mark.parametrize("method", METHODS)
def test_exposure_hook_settles_the_optional_wagers(table: Table, method: DealingMethod) -> None:
    """CajunStudSpec.settle_on_exposure (683a.13(d)) on the layout as it stands when the card is exposed."""
    t = exposure_round(table, method)
    r = t.state.round
    assert r is not None
    view = RoundView(
        r.round_id,
        tuple(SeatView(n, tuple(r.seats[n].cards), dict(r.seats[n].wagers), None, frozenset()) for n in r.players),
        {k: tuple(v) for k, v in r.areas.items()},
    )
    rows = CajunStudSpec().settle_on_exposure(rules(), view)
    assert [(x.seat, x.wager, x.rule, x.hand, x.odds, x.paid, x.returned) for x in rows] == [
        (2, "pocket_bonus", "683a.11(i)(1)(ii)", "pair_of_aces", "30 to 1", 15_000, 500),
        (2, "board_bonus", "683a.11(i)(2)(ii)", "pair", "1 to 1", 500, 500),
    ]


@pytest.mark.parametrize("method", METHODS)
def test_exposed_community_card_still_settles_the_optional_wagers(table: Table, method: DealingMethod) -> None:
    """683a.13(d): the hands are void and the Ante and Raise Wagers returned, but the Pocket Bonus, Board Bonus,
    Lo Ball and All-Six Bonus Wagers are settled under 683a.11(i)."""
    t = exposure_round(table, method)
    out = t.press("community_exposed")
    void = out[0]
    assert (void.type, void.rule) == ("round.voided", "683a.13(d)")
    assert void.payload["returned"] == {"2": {"ante": 500, "raise_1": 1000}, "4": {"ante": 500}}
    settled = [(e.type, e.rule, e.payload["seat"], e.payload["paid"]) for e in out if e.type.endswith(".settled")]
    assert settled == [
        ("pocket_bonus.settled", "683a.11(i)(1)(ii)", 2, 15_000),
        ("board_bonus.settled", "683a.11(i)(2)(ii)", 2, 500),
    ]
    assert ("shuffle.started", "683a.5(a)") in [(e.type, e.rule) for e in out]
    # The round's record carries the exposure, so `tablectl settle` recomputes the same (docs/settle/683a.md).
    recorded = next(e for e in out if e.type == "round.recorded")
    record = recorded.payload["record"]
    assert (recorded.rule, record["community_exposed"]) == ("683a.11(j)", True)
    assert {s["seat"]: s["decisions"] for s in record["seats"]} == {2: ["raise"], 4: []}
    again = settle_round(rules(), CajunStudRound.model_validate(record))
    assert [(x.seat, x.wager, x.outcome, x.rule, x.paid) for x in again] == [
        (4, "ante", "push", "683a.13(d)", 0),
        (2, "ante", "push", "683a.13(d)", 0),
        (2, "raise_1", "push", "683a.13(d)", 0),
        (2, "pocket_bonus", "win", "683a.11(i)(1)(ii)", 15_000),
        (2, "board_bonus", "win", "683a.11(i)(2)(ii)", 500),
    ]


def test_an_exposure_while_dealing_from_a_manual_shoe_waits_for_the_deal(table: Table) -> None:
    """683a.13(d) with 683a.8(d): a community card exposed as the community cards are dealt; the Board Bonus needs all
    three, so the deal is completed first, then the hands are void and the optional wagers settled."""
    t = table("manual_shoe", order("manual_shoe", [["Ah", "Ad"]], ["Ac", "Jc", "3d", "4d"], ["Ks", "Kh", "5s"]))
    t.wager(2, "ante", 500)
    t.wager(2, "board_bonus", 500)
    t.wager(2, "all_six_bonus", 500)
    t.press("no_more_bets")
    t.draw(7)  # the four All-Six Bonus cards, the player's two, the first community card
    exposed = t.press("community_exposed")
    assert [(e.type, e.rule) for e in exposed] == [("community.exposed", "683a.13(d)")]
    assert t.press("community_exposed") == []  # said once
    out = t.draw()
    assert [(e.type, e.rule) for e in out if e.type != "card.dealt"][:4] == [
        ("round.voided", "683a.13(d)"),
        ("board_bonus.settled", "683a.11(i)(2)(ii)"),
        ("all_six_bonus.revealed", "683a.11(i)(4)"),
        ("all_six_bonus.settled", "683a.11(i)(4)(ii)"),
    ]
    assert next(e for e in out if e.type == "round.voided").payload["returned"] == {"2": {"ante": 500}}


def test_no_exposure_before_a_community_card_is_on_the_layout(table: Table) -> None:
    t = table("manual_shoe")
    t.wager(2, "ante", 500)
    t.press("no_more_bets")
    t.draw(2)
    ignored = t.press("community_exposed")
    assert [(e.type, e.payload["reason"]) for e in ignored] == [("input.ignored", "no community card is on the layout")]


@pytest.mark.parametrize("how", ["lose", "hold"])
def test_a_departed_players_wagers_stay_abandoned_on_an_exposure_683a_13_d(table: Table, how: str) -> None:
    """683a.13(d) settles the optional wagers "in accordance with 683a.11(i)", which settles each remaining player's
    (683a.11(h)): a player who left (683a.7(b)) is not one. His wagers were lost or held when he left; the void lists
    them all with `players_left` (none paid out at the table) and settles none of them: settling them would pay, or
    collect, a wager the house had already collected or holds for him. The remaining player's are settled.

    The remaining player's Board Bonus pair is paid 1 to 1 (683a.12(c) paytable A)."""
    t = table(
        "automated_shoe", order("automated_shoe", [["Ah", "Ad"], ["2c", "7d"]], [], COMMUNITY), abandoned_wagers=how
    )
    t.wager(2, "ante", 500)
    t.wager(2, "pocket_bonus", 500)
    t.wager(2, "board_bonus", 500)
    t.wager(4, "ante", 500)
    t.wager(4, "board_bonus", 500)
    t.press("no_more_bets")
    t.wager(2, "raise_1", 1000)
    left = t.feed(PlayerLeft(2))
    assert [(e.type, e.rule, e.payload["disposition"]) for e in left][:1] == [("wagers.abandoned", "683a.7(b)", how)]
    out = t.press("community_exposed")
    void = out[0]
    assert (void.type, void.rule, void.payload["players_left"]) == ("round.voided", "683a.13(d)", [2])
    gone = {"ante": 500, "raise_1": 1000, "pocket_bonus": 500, "board_bonus": 500}
    assert void.payload["returned"] == {"2": gone, "4": {"ante": 500}}
    settled = [(e.type, e.rule, e.payload["seat"], e.payload["paid"]) for e in out if e.type.endswith(".settled")]
    assert settled == [("board_bonus.settled", "683a.11(i)(2)(ii)", 4, 500)]  # Kc Kh: a pair, 1 to 1 (683a.12(c) A)
    assert t.state.held_wagers == ({2: gone} if how == "hold" else {})
    record = next(e for e in out if e.type == "round.recorded").payload["record"]
    again = settle_round(rules(), CajunStudRound.model_validate(record))
    assert [(x.seat, x.wager, x.paid) for x in again if x.wager in ("pocket_bonus", "board_bonus")] == [
        (4, "board_bonus", 500)
    ]


@pytest.mark.parametrize("exposed", [True, False])
def test_the_only_all_six_bonus_player_left_the_record_holds_no_all_six_cards(table: Table, exposed: bool) -> None:
    """The only All-Six Bonus Wager was a player's who left (683a.7(b)): his hand is in no settlement, so the round's
    record (the remaining hands, 683a.11(j)) has no All-Six Bonus cards, which 683a.8(c) deals only for a wager in it;
    the round completes or is voided instead of failing on its own record (the stateful test's example)."""
    t = table("automated_shoe", order("automated_shoe", [["Ah", "Ad"], ["2c", "7d"]], ALL_SIX, COMMUNITY))
    t.wager(2, "ante", 500)
    t.wager(2, "all_six_bonus", 500)
    t.wager(4, "ante", 500)
    t.wager(4, "board_bonus", 500)
    t.press("no_more_bets")
    t.feed(PlayerLeft(2))
    if exposed:
        out = t.press("community_exposed")
        assert [e.type for e in out if e.type.endswith(".settled")] == ["board_bonus.settled"]
    else:
        t.wager(4, "raise_1", 500)
        t.wager(4, "raise_2", 500)
        out = t.wager(4, "raise_3", 500)
        assert "round.completed" in [e.type for e in out]
    record = next(e for e in out if e.type == "round.recorded").payload["record"]
    assert ([s["seat"] for s in record["seats"]], record.get("all_six_bonus_cards", [])) == ([4], [])
