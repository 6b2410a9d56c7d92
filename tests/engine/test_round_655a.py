"""A Mississippi Stud round through the pure engine: order of events, citations and amounts."""

from __future__ import annotations

from controller.core.cards import STANDARD_DECK
from controller.engine.commands import DeviceCommand, LockSeat
from controller.engine.inputs import Input
from controller.engine.state import Phase
from drivers.interfaces import DeviceOffline, DeviceOnline
from tests.engine.conftest import Answer, Deck, MakeTable, PureTable, sealed

# Deal order with one Six Card Bonus wager on the table (655a.10(b), (c)): a two-card stack to each
# seat with an Ante, clockwise from the dealer's left; then four Six Card Bonus cards; then three
# community cards.
SEAT1, SEAT3, SEAT5 = ["Jh", "Jd"], ["7c", "7s"], ["2h", "9d"]
SIX = ["Js", "Jc", "3d", "4d"]
COMMUNITY = ["Kc", "Kh", "5s"]


def play_scripted_round(make_table: MakeTable, deck: Deck) -> PureTable:
    t = make_table([deck([*SEAT1, *SEAT3, *SEAT5, *SIX, *COMMUNITY])])
    t.wager(1, "ante", 1000)
    t.wager(1, "six_card_bonus", 500)
    t.wager(3, "ante", 500)
    t.wager(3, "three_card_bonus", 200)
    t.wager(5, "ante", 500)
    t.wager(6, "three_card_bonus", 100)  # no Ante: returned at "no more bets" (655a.7(d)(1))
    t.press("no_more_bets")
    t.wager(1, "street_3", 3000)  # 3rd Street: seat 1 bets 3x, seat 3 1x, seat 5 folds
    t.wager(3, "street_3", 500)
    t.press("fold")
    t.wager(1, "street_4", 1000)  # 4th Street
    t.wager(3, "street_4", 1000)
    t.wager(1, "street_5", 2000)  # 5th Street
    t.wager(3, "street_5", 1500)
    return t


def test_full_round_event_order_and_rules(make_table: MakeTable, deck: Deck) -> None:
    t = play_scripted_round(make_table, deck)
    round_events = [e for e in t.events if e.round_id == "t1-r000001"]
    assert [(e.type, e.rule) for e in round_events] == [
        ("betting.opened", "655a.7(c)"),
        ("wager.accepted", "655a.7(d)(1)"),
        ("wager.accepted", "655a.7(d)(6)"),
        ("wager.accepted", "655a.7(d)(1)"),
        ("wager.accepted", "655a.7(d)(4)"),
        ("wager.accepted", "655a.7(d)(1)"),
        ("wager.accepted", "655a.7(d)(4)"),
        ("wager.returned", "655a.7(d)(4)"),
        ("no_more_bets", "655a.10(a)(2)"),
        ("lockout.confirmed", "655a.10(a)(2)"),
        ("deal.started", "655a.10(b)"),  # the method the round is dealt by (the recall's "dealt by")
        ("cards.dealt", "655a.10(b)"),
        ("cards.dealt", "655a.10(b)"),
        ("cards.dealt", "655a.10(b)"),
        ("six_card_bonus.dealt", "655a.10(c)"),
        ("community.dealt", "655a.10(c)"),
        ("stub.discarded", "655a.10(c)"),
        ("decision.requested", "655a.11(b)"),
        ("street_wager.placed", "655a.11(b)"),
        ("decision.requested", "655a.11(b)"),
        ("street_wager.placed", "655a.11(b)"),
        ("decision.requested", "655a.11(b)"),
        ("seat.folded", "655a.11(b)"),
        ("community.revealed", "655a.11(c)"),
        ("decision.requested", "655a.11(d)"),
        ("street_wager.placed", "655a.11(d)"),
        ("decision.requested", "655a.11(d)"),
        ("street_wager.placed", "655a.11(d)"),
        ("community.revealed", "655a.11(e)"),
        ("decision.requested", "655a.11(f)"),
        ("street_wager.placed", "655a.11(f)"),
        ("decision.requested", "655a.11(f)"),
        ("street_wager.placed", "655a.11(f)"),
        ("community.revealed", "655a.11(g)"),
        ("hand.settled", "655a.11(h)(3)"),  # seat 3 first: counterclockwise from the dealer's right
        ("three_card_bonus.settled", "655a.11(i)(2)(i)"),
        ("hand.settled", "655a.11(h)(3)"),  # seat 1
        ("six_card_bonus.revealed", "655a.11(i)(4)"),
        ("six_card_bonus.settled", "655a.11(i)(4)(i)"),
        ("round.recorded", "655a.11(j)"),  # the round as `tablectl settle` reads it
        ("round.completed", "655a.11(j)"),
    ]
    after = t.events[t.events.index(round_events[-1]) + 1]
    assert (after.type, after.rule) == ("shuffle.started", "655a.5(a)")  # shuffle after each round


def test_full_round_amounts(make_table: MakeTable, deck: Deck) -> None:
    """A fold on 3rd Street collects the Ante at once (655a.11(b))."""
    t = play_scripted_round(make_table, deck)
    by = {(e.type, e.payload.get("seat")): e.payload for e in t.events}
    # Seat 1: J-J with K-K-5 is two pair, 2 to 1 on 10 + 30 + 10 + 20 dollars.
    seat1 = by[("hand.settled", 1)]
    assert seat1["hand"] == "two_pair"
    assert [(w["wager"], w["amount"], w["paid"], w["returned"]) for w in seat1["wagers"]] == [
        ("ante", 1000, 2000, 1000),
        ("street_3", 3000, 6000, 3000),
        ("street_4", 1000, 2000, 1000),
        ("street_5", 2000, 4000, 2000),
    ]
    # Seat 3: 7-7 with K-K-5 is two pair too.
    seat3 = by[("hand.settled", 3)]
    assert seat3["paid"] == 2 * (500 + 500 + 1000 + 1500)
    # Seat 3's Three Card Bonus: K-K-5 community is a pair, 1 to 1 (655a.12(d) paytable A).
    tcb = by[("three_card_bonus.settled", 3)]
    assert (tcb["hand"], tcb["odds"], tcb["paid"], tcb["paytable"]) == ("pair", "1 to 1", 200, "655a.12(d) paytable A")
    # Seat 1's Six Card Bonus: J-J + J-J-3-4 is four of a kind, 100 to 1 in paytable C.
    scb = by[("six_card_bonus.settled", 1)]
    assert (scb["hand"], scb["odds"], scb["paid"]) == ("four_of_a_kind", "100 to 1", 50_000)
    # Seat 5 folded on 3rd Street: its Ante collected at once (655a.11(b)).
    assert by[("seat.folded", 5)]["collected"] == {"ante": 500}
    done = by[("round.completed", None)]
    assert done["paid"] == 14_000 + 7_000 + 200 + 50_000
    assert done["collected"] == 500


def test_no_card_identity_in_public_payload_before_settlement(make_table: MakeTable, deck: Deck) -> None:
    t = play_scripted_round(make_table, deck)
    settled = next(i for i, e in enumerate(t.events) if e.type == "hand.settled")
    before = t.events[:settled]
    cards = {*SEAT1, *SEAT3, *SEAT5, *SIX, *COMMUNITY}
    for e in before:
        assert not any(c in str(e.payload) for c in cards), e
    assert [sealed(e)["cards"] for e in before if e.type == "cards.dealt"] == [SEAT1, SEAT3, SEAT5]


def test_street_wager_must_be_one_to_three_antes_and_in_turn(make_table: MakeTable, deck: Deck) -> None:
    t = make_table()
    t.wager(2, "ante", 500)
    t.wager(4, "ante", 500)
    t.press("no_more_bets")
    bad = t.wager(2, "street_3", 700)
    assert [(e.type, e.rule) for e in bad] == [("wager.rejected", "655a.11(b)")]
    early = t.wager(4, "street_3", 500)
    assert early[0].type == "wager.rejected" and "seat 2 is deciding" in early[0].payload["reason"]
    assert t.types(t.wager(2, "street_3", 1500)) == ["street_wager.placed", "decision.requested"]


def test_wager_after_no_more_bets_is_rejected_and_not_counted(make_table: MakeTable) -> None:
    t = make_table()
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    late = t.wager(2, "ante", 500)
    assert [(e.type, e.rule) for e in late] == [("wager.rejected", "655a.7(c)")]
    assert t.state.round is not None
    assert 2 not in t.state.round.seats or not t.state.round.seats[2].wagers


def test_no_card_before_every_lock_is_confirmed(make_table: MakeTable) -> None:
    t = make_table()
    t.wager(1, "ante", 500)
    assert "lock" not in [c.verb for c in t.commands]
    t.press("no_more_bets")
    verbs = [c.verb for c in t.commands]
    assert verbs.index("dispense_stack") > max(i for i, v in enumerate(verbs) if v == "lock")
    assert [e.type for e in t.events].index("lockout.confirmed") < [e.type for e in t.events].index("cards.dealt")


def test_payout_limit_caps_aggregate(make_table: MakeTable, deck: Deck) -> None:
    # Royal flush with 100 + 3 x 300 dollars at 500 to 1 = $500,000 > the $50,000 limit (655a.12(b)).
    t = make_table([deck(["As", "Ks", "Qs", "Js", "Ts", "2c", "3c"])], ante_max_cents=10_000)
    t.wager(1, "ante", 10_000)
    t.press("no_more_bets")
    for street in ("street_3", "street_4", "street_5"):
        t.wager(1, street, 30_000)
    hand = next(e for e in t.events if e.type == "hand.settled")
    assert hand.payload["hand"] == "royal_flush"
    assert hand.payload["paid"] == 5_000_000
    assert hand.payload["payout_limited"] is True and hand.payload["payout_limit_rule"] == "655a.12(b)"


def test_shuffler_miscount_removes_the_deck(make_table: MakeTable) -> None:
    t = make_table([list(STANDARD_DECK[:51])])
    assert t.events[-1].type == "deck.removed" and t.events[-1].rule == "655a.5(b)"
    assert t.state.phase is Phase.BLOCKED


def test_wrong_stack_size_voids_and_returns_every_wager(make_table: MakeTable) -> None:
    from drivers.interfaces import StackDispensed

    t = make_table()
    t.wager(1, "ante", 500)
    t.wager(1, "three_card_bonus", 100)
    orig = t.answer
    t.answer = lambda c: [StackDispensed("shoe", cards=("As",))] if c.verb == "dispense_stack" else orig(c)
    t.press("no_more_bets")
    void = next(e for e in t.events if e.type == "round.voided")
    assert void.rule == "655a.13(c)"
    assert void.payload["returned"] == {"1": {"ante": 500, "three_card_bonus": 100}}


def test_pair_of_6s_to_10s_pushes_and_5s_lose(make_table: MakeTable, deck: Deck) -> None:
    # Seat 1: 8-8 (push, 655a.11(h)(2)); seat 2: 5-5 (loses, 655a.11(h)(1)). Community 2-9-K.
    t = make_table([deck(["8h", "8d", "5c", "5s", "2h", "9c", "Kd"])])
    t.wager(1, "ante", 500)
    t.wager(2, "ante", 500)
    t.press("no_more_bets")
    for street in ("street_3", "street_4", "street_5"):
        t.wager(1, street, 500)
        t.wager(2, street, 1000)
    settled = {e.payload["seat"]: e for e in t.events if e.type == "hand.settled"}
    assert settled[1].rule == "655a.11(h)(2)"
    assert [(w["outcome"], w["returned"], w["paid"]) for w in settled[1].payload["wagers"]] == [("push", 500, 0)] * 4
    assert settled[2].rule == "655a.11(h)(1)"
    assert sum(w["collected"] for w in settled[2].payload["wagers"]) == 500 + 3 * 1000


def test_close_table_waits_for_the_round_in_progress(make_table: MakeTable) -> None:
    from controller.engine.inputs import CloseTable

    t = make_table()
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    assert t.types(t.feed(CloseTable())) == ["table.closing"]
    for street in ("street_3", "street_4", "street_5"):
        t.wager(1, street, 500)
    assert t.types()[-2:] == ["round.completed", "table.closed"]
    assert t.state.phase is Phase.CLOSED


def test_close_table_between_rounds_returns_wagers_on_the_layout(make_table: MakeTable) -> None:
    from controller.engine.inputs import CloseTable

    t = make_table()
    t.wager(2, "ante", 700)
    closing = t.feed(CloseTable())
    assert [(e.type, e.payload.get("amount")) for e in closing] == [("wager.returned", 700), ("table.closed", None)]


def test_one_face_up_card_is_discarded_two_void_the_round(make_table: MakeTable) -> None:
    from drivers.interfaces import FaceUpCard

    t = make_table()
    t.wager(1, "ante", 500)
    t.wager(2, "ante", 500)
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
        ("card.face_up_discarded", "655a.13(a)"),
        ("round.voided", "655a.13(a)"),
    ]
    void = next(e for e in t.events if e.type == "round.voided")
    assert void.payload["returned"] == {"1": {"ante": 500}, "2": {"ante": 500}}


def test_a_face_up_card_is_counted_with_the_deck(make_table: MakeTable) -> None:
    from drivers.interfaces import FaceUpCard

    t = make_table()
    t.wager(1, "ante", 500)
    once = {"done": False}

    def answer(c: DeviceCommand, orig: Answer = t.answer) -> list[Input]:
        if c.verb == "dispense_stack" and not once["done"]:
            once["done"] = True
            card, t.shoe = t.shoe[0], t.shoe[1:]
            return [FaceUpCard("shoe", card=card), *orig(c)]
        return orig(c)

    t.answer = answer
    t.press("no_more_bets")
    # 2 dealt + 1 face up + 49 in the stub is one whole deck: the round goes on to decisions.
    assert t.types()[-1] == "decision.requested"
    assert next(e for e in t.events if e.type == "stub.discarded").payload["count"] == 49 - 3


def test_a_foreign_card_read_by_the_shoe_voids_the_round(make_table: MakeTable) -> None:
    from drivers.interfaces import DeviceFault

    t = make_table()
    t.wager(3, "ante", 500)
    orig = t.answer
    t.answer = lambda c: (
        [DeviceFault("shoe", code="foreign_card", detail="position 1 read 'joker'")]
        if c.verb == "dispense_stack"
        else orig(c)
    )
    t.press("no_more_bets")
    void = next(e for e in t.events if e.type == "round.voided")
    assert void.rule == "655a.13(c)" and void.payload["returned"] == {"3": {"ante": 500}}


def test_manual_shoe_deals_card_by_card_in_the_chapters_order(make_table: MakeTable, deck: Deck) -> None:
    # 655a.8(d): the Six Card Bonus cards first, then two cards to each player one at a time clockwise,
    # then the three community cards; the reader reports every card drawn.
    t = make_table([deck(["Js", "Jc", "3d", "4d", "Ah", "2c", "Ad", "2d", "Ks", "Kh", "5s"])], method="manual_shoe")
    t.wager(1, "ante", 500)
    t.wager(1, "six_card_bonus", 100)
    t.wager(2, "ante", 500)
    t.press("no_more_bets")
    assert t.state.phase.value == "dealing"
    dealt = t.draw()
    assert [e.rule for e in dealt if e.type == "card.dealt"] == ["655a.8(d)"] * 11
    r = t.state.round
    assert r is not None
    assert (r.seats[1].cards, r.seats[2].cards) == (["Ah", "Ad"], ["2c", "2d"])
    assert (r.areas["six_card_bonus"], r.areas["community"]) == (["Js", "Jc", "3d", "4d"], ["Ks", "Kh", "5s"])
    assert t.types(dealt)[-2:] == ["stub.discarded", "decision.requested"]


def test_hand_dealing_uses_the_shufflers_order_and_waits_for_the_dealer(make_table: MakeTable, deck: Deck) -> None:
    t = make_table([deck(["Ah", "2c", "Ad", "2d", "Ks", "Kh", "5s"])], method="hand")
    t.wager(1, "ante", 500)
    t.wager(2, "ante", 500)
    t.press("no_more_bets")
    assert t.state.phase.value == "dealt" and t.types()[-1] == "deal.awaiting_dealer"
    confirmed = t.press("dealt")
    assert [(e.type, e.rule, e.payload.get("seat")) for e in confirmed[:3]] == [
        ("cards.dealt", "655a.9(b)", 1),
        ("cards.dealt", "655a.9(b)", 2),
        ("community.dealt", "655a.9(b)", None),
    ]
    assert t.state.round is not None
    assert t.state.round.seats[1].cards == ["Ah", "Ad"]


def test_a_community_card_exposed_early_voids_the_round(make_table: MakeTable) -> None:
    t = make_table()
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    t.wager(1, "street_3", 500)
    void = t.press("community_exposed")
    assert [(e.type, e.rule) for e in void][:1] == [("round.voided", "655a.13(d)")]
    assert void[0].payload["returned"] == {"1": {"ante": 500, "street_3": 500}}


def test_655a_13_d_returns_the_optional_wagers_too(make_table: MakeTable) -> None:
    """655a.13(d), unlike 683a.13(d), settles no optional wager: "all hands shall be void, all wagers shall be returned
    to the players", the Three Card Bonus (on the community cards) and the Six Card Bonus included."""
    t = make_table()
    t.wager(1, "ante", 500)
    t.wager(1, "three_card_bonus", 200)
    t.wager(1, "six_card_bonus", 300)
    t.wager(2, "ante", 1000)
    t.press("no_more_bets")
    t.wager(1, "street_3", 1500)
    t.press("fold")  # seat 2 folds on 3rd Street: the hands are void, so its Ante comes back too
    t.wager(1, "street_4", 500)
    void = t.press("community_exposed")
    assert [(e.type, e.rule) for e in void][:1] == [("round.voided", "655a.13(d)")]
    assert void[0].payload["returned"] == {
        "1": {"ante": 500, "three_card_bonus": 200, "six_card_bonus": 300, "street_3": 1500, "street_4": 500},
        "2": {"ante": 1000},
    }
    assert not [e for e in void if e.type.endswith(".settled")]


def test_a_card_drawn_in_error_is_recorded_and_used(make_table: MakeTable) -> None:
    t = make_table(method="manual_shoe")
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    t.draw(1)
    assert [(e.type, e.rule) for e in t.press("drawn_in_error")] == [("card.drawn_in_error", "655a.13(b)")]
    t.draw()
    assert t.types()[-1] == "decision.requested"


def test_hand_dealing_without_the_shufflers_order_voids_and_blocks(make_table: MakeTable) -> None:
    # 655a.9(a)(1): dealing from the hand takes an automated shuffler; after a shuffle that left no card
    # order (the shuffle of a shoe the table turned from, docs/rules.md) the round cannot be dealt from the hand.
    # The shuffler is in service, so its next shuffle gives the order: nothing stops the table (a `no_method` block
    # here said "put the shuffler back in service" of a shuffler in service, and only the shoe's return lifted it).
    import dataclasses

    t = make_table(method="hand")
    t.wager(1, "ante", 500)
    t.state = dataclasses.replace(t.state, deck_order=[])
    t.press("no_more_bets")
    void = next(e for e in t.events if e.type == "round.voided")
    assert void.rule == "655a.9(a)(1)" and void.payload["returned"] == {"1": {"ante": 500}}
    assert "no_method" not in t.state.blocks and t.state.phase.value == "betting"
    assert len(t.state.deck_order) == 52
    assert "card.dealt" not in t.types() and "deal.awaiting_dealer" not in t.types()


def test_a_reshuffling_shoe_dispenses_the_community_cards_first(make_table: MakeTable, deck: Deck) -> None:
    # 655a.10(g): the three community cards may come out before the players' stacks.
    t = make_table([deck(["Ks", "Kh", "5s", "Ah", "Ad", "2c", "2d"])], reshuffling_shoe=True)
    t.wager(1, "ante", 500)
    t.wager(2, "ante", 500)
    t.press("no_more_bets")
    dealt = [(e.type, e.rule) for e in t.events if e.type.endswith(".dealt")]
    assert dealt == [("community.dealt", "655a.10(g)"), ("cards.dealt", "655a.10(b)"), ("cards.dealt", "655a.10(b)")]
    r = t.state.round
    assert r is not None
    assert r.areas["community"] == ["Ks", "Kh", "5s"]
    assert (r.seats[1].cards, r.seats[2].cards) == (["Ah", "Ad"], ["2c", "2d"])


def test_a_reshuffling_shoe_must_be_an_automated_shoe() -> None:
    import pytest as _pytest

    from controller.games.mississippi_stud.rules import MississippiStudRules

    with _pytest.raises(ValueError, match="reshuffling_shoe is an automated dealing shoe"):
        MississippiStudRules.model_validate({"chapter": "655a", "reshuffling_shoe": True, "dealing_method": "hand"})


def _offline(seat: int) -> DeviceOffline:
    from drivers.interfaces import DeviceOffline

    return DeviceOffline(f"wager_station_{seat}", reason="unplugged")


def _online(seat: int) -> DeviceOnline:
    from drivers.interfaces import DeviceOnline

    return DeviceOnline(f"wager_station_{seat}")


def test_an_unreachable_station_at_an_empty_seat_is_not_waited_for(make_table: MakeTable) -> None:
    t = make_table()
    t.feed(_offline(3))
    t.wager(1, "ante", 500)
    before = len(t.commands)
    t.press("no_more_bets")
    locked = [c.seat for c in t.commands[before:] if isinstance(c, LockSeat)]
    assert 3 not in locked and sorted(locked) == [1, 2, 4, 5, 6]
    confirmed = next(e for e in t.events if e.type == "lockout.confirmed")
    assert confirmed.payload == {"stations": 5, "unreachable": [3]}
    assert "cards.dealt" in t.types()


def test_no_more_bets_waits_for_a_station_holding_wagers(make_table: MakeTable) -> None:
    t = make_table()
    t.wager(2, "ante", 500)
    t.feed(_offline(2))
    refused = t.press("no_more_bets")
    assert [(e.type, e.payload.get("seats")) for e in refused] == [("no_more_bets.refused", [2])]
    assert "cards.dealt" not in t.types()
    t.feed(_online(2))
    t.press("no_more_bets")
    assert t.types()[-1] == "decision.requested"


def test_a_station_lost_during_the_lock_out_holds_the_deal_until_it_returns(make_table: MakeTable) -> None:
    t = make_table()
    t.wager(1, "ante", 500)
    orig = t.answer
    t.answer = lambda c: [] if c == LockSeat(1) else orig(c)
    t.press("no_more_bets")
    waiting = t.feed(_offline(1))
    assert [(e.type, e.payload.get("seat")) for e in waiting if e.type == "lockout.waiting"] == [("lockout.waiting", 1)]
    assert "cards.dealt" not in t.types()
    t.answer = t.perfect_devices
    t.feed(_online(1))  # back: it is sent the lock, confirms it, and the deal goes ahead
    assert t.types().index("lockout.confirmed") < t.types().index("cards.dealt")


def test_a_station_returning_mid_round_is_locked(make_table: MakeTable) -> None:
    t = make_table()
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    t.feed(_offline(4))
    before = len(t.commands)
    t.feed(_online(4))
    assert t.commands[before:] == [LockSeat(4)]
