"""A Let It Ride round through the pure engine, by every dealing method: events, citations and amounts."""

from __future__ import annotations

from typing import Protocol

import pytest

from controller.core.events import DomainEvent
from controller.engine.commands import DeviceCommand
from controller.engine.inputs import Input
from controller.engine.spec import DealingMethod
from controller.engine.state import Phase
from controller.games.let_it_ride.rules import LetItRideRules
from controller.games.let_it_ride.spec import LetItRideSpec
from drivers.interfaces import DeviceFault, FaceUpCard, StackDispensed
from tests.engine.conftest import Answer, ChapterTable, Deck, PureTable, sealed

METHODS: tuple[DealingMethod, ...] = ("automated_shoe", "manual_shoe", "hand")
LOCK_RULE = {"automated_shoe": "643a.10(a)(2)", "manual_shoe": "643a.8(b)", "hand": "643a.9(a)(3)"}
DEAL_RULE = {"automated_shoe": "643a.10(b)", "manual_shoe": "643a.8(d)", "hand": "643a.9(b)"}

# Seat 1 lets everything ride on nothing; seat 3 withdraws Bet 1 and rides Bet 2 on three 4s; seat 5 withdraws
# both on a pair of queens. Community: Kd first, 4s second; Ac is the card an automated shoe burns.
HANDS = {1: ["2c", "7d", "9h"], 3: ["4h", "4c", "8s"], 5: ["Qh", "Qc", "9d"]}
FIRST, SECOND, BURNED = "Kd", "4s", "Ac"


def rules(method: str = "automated_shoe", **over: object) -> LetItRideRules:
    # The Five Card Bonus is plain chips unless a table game system counts it (then see
    # test_five_card_bonus_chips_are_counted_before_the_deal).
    return LetItRideRules.model_validate(
        {
            "chapter": "643a",
            "dealing_method": method,
            "let_it_ride_paytable": "A",
            "five_card_bonus": True,
            "five_card_bonus_paytable": "A",
            "three_card_bonus": True,
            "three_card_bonus_paytable": "A",
            "five_card_bonus_table_game_system": False,
            **over,
        }
    )


def top_of_deck(method: str, hands: dict[int, list[str]], first: str, second: str, burned: str) -> list[str]:
    """The cards in the order the method takes them, for the seats in `hands` (clockwise = ascending)."""
    seats = sorted(hands)
    if method == "automated_shoe":
        # 643a.10(b): stacks top card first; the community stack is (community#2, community#1, burn).
        return [*(c for n in seats for c in hands[n]), second, first, burned]
    rounds = [[hands[n][i] for n in seats] for i in range(3)]
    return [*rounds[0], first, *rounds[1], second, *rounds[2]]


class Table(Protocol):
    """The table fixture: a 643a table dealt by `method`, `top` the deck's first cards, rules overridden."""

    def __call__(
        self, method: DealingMethod = "automated_shoe", top: list[str] | None = None, **over: object
    ) -> PureTable: ...


@pytest.fixture
def table(chapter_table: ChapterTable, deck: Deck) -> Table:
    def make(method: DealingMethod = "automated_shoe", top: list[str] | None = None, **over: object) -> PureTable:
        decks = [deck(top)] if top is not None else []
        return chapter_table(LetItRideSpec(), rules(method, **over), method, decks)

    return make


def deal(t: PureTable, method: str) -> None:
    """Finish the deal after "no more bets": a manual shoe is drawn, a deal from the hand confirmed."""
    if method == "manual_shoe":
        t.draw()
    elif method == "hand":
        t.press("dealt")


def play_scripted_round(table: Table, method: DealingMethod) -> PureTable:
    t = table(method, top_of_deck(method, HANDS, FIRST, SECOND, BURNED))
    for bet in ("bet_1", "bet_2", "bet_3"):
        t.wager(1, bet, 500)
        t.wager(3, bet, 1000)
        t.wager(5, bet, 500)
    t.wager(3, "three_card_bonus", 500)
    t.wager(5, "five_card_bonus", 100)
    t.wager(6, "three_card_bonus", 500)  # no Let It Ride Wagers: returned at "no more bets" (643a.7(f))
    t.press("no_more_bets")
    deal(t, method)
    for answer in ("let_it_ride", "withdraw", "withdraw"):  # Bet Number 1: seats 1, 3, 5
        t.press(answer)
    for answer in ("let_it_ride", "let_it_ride", "withdraw"):  # Bet Number 2: seats 1, 3, 5
        t.press(answer)
    return t


def dealing_events(method: str) -> list[tuple[str, str]]:
    if method == "automated_shoe":
        return (
            [("deal.started", "643a.10(b)")]
            + [("cards.dealt", "643a.10(b)")] * 3
            + [
                ("community.dealt", "643a.10(b)"),
                ("burn.dealt", "643a.10(b)"),
                ("stub.discarded", "643a.10(c)"),
            ]
        )
    if method == "manual_shoe":
        return [("deal.started", "643a.8(d)")] + [("card.dealt", "643a.8(d)")] * 11 + [("stub.discarded", "643a.8(e)")]
    return (
        [("deal.started", "643a.9(b)"), ("deal.awaiting_dealer", "643a.9(b)")]
        + [("cards.dealt", "643a.9(b)")] * 3
        + [("community.dealt", "643a.9(b)"), ("stub.discarded", "643a.9(c)")]
    )


@pytest.mark.parametrize("method", METHODS)
def test_full_round_event_order_and_rules(table: Table, method: DealingMethod) -> None:
    t = play_scripted_round(table, method)
    round_events = [e for e in t.events if e.round_id == "t1-r000001"]
    accepted = [("wager.accepted", "643a.7(d)")] * 9 + [
        ("wager.accepted", "643a.7(f)"),
        ("wager.accepted", "643a.7(e)"),
        ("wager.accepted", "643a.7(f)"),
    ]
    assert [(e.type, e.rule) for e in round_events] == [
        ("betting.opened", "643a.7(c)"),
        *accepted,
        ("wager.returned", "643a.7(f)"),
        ("no_more_bets", LOCK_RULE[method]),
        ("lockout.confirmed", LOCK_RULE[method]),  # every station locked before the first card
        *dealing_events(method),
        ("decision.requested", "643a.11(b)"),
        ("bet.rides", "643a.11(b)"),
        ("decision.requested", "643a.11(b)"),
        ("bet.withdrawn", "643a.11(b)"),
        ("decision.requested", "643a.11(b)"),
        ("bet.withdrawn", "643a.11(b)"),
        ("community.revealed", "643a.11(c)"),
        ("decision.requested", "643a.11(d)"),
        ("bet.rides", "643a.11(d)"),
        ("decision.requested", "643a.11(d)"),
        ("bet.rides", "643a.11(d)"),
        ("decision.requested", "643a.11(d)"),
        ("bet.withdrawn", "643a.11(d)"),
        ("community.revealed", "643a.11(e)"),
        # Counterclockwise from the dealer's right: seat 5, 3, then 1; a hand cites the settlement of the bets
        # that rode (643a.11(f)(3)) even where Bet 1 was withdrawn.
        ("hand.settled", "643a.11(f)(3)"),
        ("five_card_bonus.settled", "643a.11(f)(3)(i)"),
        ("hand.settled", "643a.11(f)(3)"),
        ("three_card_bonus.settled", "643a.11(f)(3)(ii)"),
        ("hand.settled", "643a.11(f)(3)"),
        ("round.recorded", "643a.11(g)"),  # the round as `tablectl settle` reads it
        ("round.completed", "643a.11(g)"),
    ]
    after = t.events[t.events.index(round_events[-1]) + 1]
    assert (after.type, after.rule) == ("shuffle.started", "643a.5(a)")  # 643a.5(a): after each round


@pytest.mark.parametrize("method", METHODS)
def test_decisions_clockwise_and_reveals_after_everyone(table: Table, method: DealingMethod) -> None:
    t = play_scripted_round(table, method)
    asked = [(e.payload["decision"], e.payload["seat"]) for e in t.events if e.type == "decision.requested"]
    assert asked == [("bet_1", 1), ("bet_1", 3), ("bet_1", 5), ("bet_2", 1), ("bet_2", 3), ("bet_2", 5)]
    revealed = [(e.payload["index"], sealed(e)["card"]) for e in t.events if e.type == "community.revealed"]
    assert revealed == [(1, FIRST), (2, SECOND)]
    r_done = next(e for e in t.events if e.type == "round.completed")
    assert r_done.payload["areas"]["community"] == [FIRST, SECOND]
    assert r_done.payload["areas"].get("burn") == ([BURNED] if method == "automated_shoe" else None)


def test_automated_shoe_burns_the_bottom_card_of_the_community_stack(table: Table) -> None:
    t = play_scripted_round(table, "automated_shoe")
    community = next(e for e in t.events if e.type == "community.dealt")
    burn = next(e for e in t.events if e.type == "burn.dealt")
    assert community.payload == {"count": 2} and burn.payload == {"count": 1}
    assert burn.sealed == {"cards": [BURNED]}
    # 52 less three three-card stacks and the community stack of three.
    assert next(e for e in t.events if e.type == "stub.discarded").payload["count"] == 52 - 9 - 3


@pytest.mark.parametrize("method", METHODS)
def test_full_round_amounts(table: Table, method: DealingMethod) -> None:
    """The Five Card Bonus pays $2 for the $1 wager on a pair of tens or better (643a.12(b) paytable A) and the Three
    Card Bonus 1 to 1 on a pair (643a.12(c) paytable A)."""
    t = play_scripted_round(table, method)
    by = {(e.type, e.payload.get("seat")): e.payload for e in t.events}
    rows = {
        seat: [
            (w["wager"], w["outcome"], w["paid"], w["returned"], w["collected"])
            for w in by[("hand.settled", seat)]["wagers"]
        ]
        for seat in (1, 3, 5)
    }
    # Seat 3: 4-4-8 with K-4 is three-of-a-kind, 3 to 1 in 643a.12(a) paytable A on the $10 bets that rode.
    assert by[("hand.settled", 3)]["paid"] == 3 * 1000 * 2
    assert rows[3] == [
        ("bet_1", "withdrawn", 0, 1000, 0),
        ("bet_2", "win", 3000, 1000, 0),
        ("bet_3", "win", 3000, 1000, 0),
    ]
    assert [w["odds"] for w in by[("hand.settled", 3)]["wagers"][1:]] == ["3 to 1"] * 2
    # Seat 5: a pair of queens, 1 to 1, on Bet 3 alone; its Five Card Bonus pays $2 for the $1 wager (643a.12(b)
    # paytable A): $1 won, the wager returned.
    assert rows[5] == [
        ("bet_1", "withdrawn", 0, 500, 0),
        ("bet_2", "withdrawn", 0, 500, 0),
        ("bet_3", "win", 500, 500, 0),
    ]
    fcb = by[("five_card_bonus.settled", 5)]
    assert (fcb["hand"], fcb["paid"], fcb["returned"]) == ("pair_of_tens_or_better", 100, 100)
    # Seat 3's Three Card Bonus: 4-4-8 is a pair, 1 to 1 (643a.12(c) paytable A).
    tcb = by[("three_card_bonus.settled", 3)]
    assert (tcb["hand"], tcb["odds"], tcb["paid"]) == ("pair", "1 to 1", 500)
    # Seat 1: no pair of tens or better, every bet rode and is collected.
    assert rows[1] == [(w, "lose", 0, 0, 500) for w in ("bet_1", "bet_2", "bet_3")]
    assert (by[("hand.settled", 1)]["hand"], by[("hand.settled", 1)]["paytable"]) == (
        "high_card",
        "643a.12(a) paytable A",
    )
    done = by[("round.completed", None)]
    assert (done["paid"], done["collected"]) == (6000 + 500 + 100 + 500, 1500)


def test_hand_settled_cites_the_settlement_of_the_riding_bets(table: Table) -> None:
    t = play_scripted_round(table, "automated_shoe")
    settled = {e.payload["seat"]: e for e in t.events if e.type == "hand.settled"}
    assert {n: (e.rule, e.payload["hand"]) for n, e in settled.items()} == {
        5: ("643a.11(f)(3)", "pair_of_tens_or_better"),
        3: ("643a.11(f)(3)", "three_of_a_kind"),
        1: ("643a.11(f)(3)", "high_card"),
    }


@pytest.mark.parametrize("method", METHODS)
def test_unequal_bets_are_refused_at_no_more_bets_and_returned(table: Table, method: DealingMethod) -> None:
    t = table(method)
    t.wager(2, "bet_1", 500)
    t.wager(2, "bet_2", 500)
    t.wager(2, "bet_3", 1000)
    t.wager(2, "three_card_bonus", 500)
    t.wager(4, "bet_1", 500)
    t.wager(4, "bet_3", 500)  # Bet Number 2 missing
    refused = t.press("no_more_bets")
    assert [
        (e.type, e.rule, e.payload.get("seat"), e.payload.get("spot"), e.payload.get("amount")) for e in refused
    ] == [
        ("wager.returned", "643a.7(d)", 2, "bet_1", 500),
        ("wager.returned", "643a.7(d)", 2, "bet_2", 500),
        ("wager.returned", "643a.7(d)", 2, "bet_3", 1000),
        ("wager.returned", "643a.7(f)", 2, "three_card_bonus", 500),
        ("wager.returned", "643a.7(d)", 4, "bet_1", 500),
        ("wager.returned", "643a.7(d)", 4, "bet_3", 500),
        ("no_more_bets.refused", "643a.7(d)", None, None, None),
    ]
    assert "equal" in refused[0].payload["reason"] and "bet_2" in refused[4].payload["reason"]
    assert t.state.round is not None
    assert t.state.phase is Phase.BETTING and not any(st.wagers for st in t.state.round.seats.values())
    assert "lock" not in [c.verb for c in t.commands]


@pytest.mark.parametrize("method", METHODS)
def test_optional_wagers_without_the_three_bets_are_returned(table: Table, method: DealingMethod) -> None:
    t = table(method)
    t.wager(1, "bet_1", 500)
    t.wager(1, "bet_2", 500)
    t.wager(1, "bet_3", 500)
    t.wager(2, "five_card_bonus", 100)
    t.wager(3, "three_card_bonus", 500)
    events = t.press("no_more_bets")
    returned = [(e.rule, e.payload["seat"], e.payload["spot"]) for e in events if e.type == "wager.returned"]
    assert returned == [("643a.7(e)", 2, "five_card_bonus"), ("643a.7(f)", 3, "three_card_bonus")]
    nmb = next(e for e in events if e.type == "no_more_bets")
    assert nmb.payload["players"] == [1]


def test_wagers_outside_the_offer_are_rejected(table: Table) -> None:
    # The Five Card Hand Bonus needs electronic wagering terminals the live engine does not drive: not offered.
    t = table()
    assert [(e.type, e.rule) for e in t.wager(1, "five_card_hand_bonus", 100)] == [("wager.rejected", "643a.7(c)")]
    # 643a.12(b) pays fixed amounts: only the configured Five Card Bonus Wager is accepted.
    assert [(e.type, e.rule) for e in t.wager(1, "five_card_bonus", 500)] == [("wager.rejected", "643a.7(e)")]
    assert [(e.type, e.rule) for e in t.wager(1, "bet_1", 20_000)] == [("wager.rejected", "643a.7(d)")]
    opened = next(e for e in t.events if e.type == "betting.opened")
    assert opened.payload["wagers_offered"] == ["bet_1", "bet_2", "bet_3", "five_card_bonus", "three_card_bonus"]


def place_two_players(t: PureTable) -> None:
    for bet in ("bet_1", "bet_2", "bet_3"):
        t.wager(1, bet, 500)
        t.wager(2, bet, 700)
    t.wager(2, "three_card_bonus", 500)


RETURNED = {
    "1": {"bet_1": 500, "bet_2": 500, "bet_3": 500},
    "2": {"bet_1": 700, "bet_2": 700, "bet_3": 700, "three_card_bonus": 500},
}


def face_up_on_dispense(t: PureTable, times: int) -> None:
    """An automated shoe that finds the next card face up before each of its first `times` stacks."""
    shown = {"n": 0}

    def answer(c: DeviceCommand, orig: Answer = t.answer) -> list[Input]:
        if c.verb == "dispense_stack" and shown["n"] < times:
            shown["n"] += 1
            card, t.shoe = t.shoe[0], t.shoe[1:]
            return [FaceUpCard("shoe", card=card), *orig(c)]
        return orig(c)

    t.answer = answer


def face_up_while_drawing(t: PureTable, draws_before: list[int]) -> None:
    """A manual shoe: after each count of draws, the next card comes out face up."""
    for n in draws_before:
        t.draw(n)
        card, t.shoe = t.shoe[0], t.shoe[1:]
        t.feed(FaceUpCard("shoe", card=card))
    t.draw()


@pytest.mark.parametrize("method", ["automated_shoe", "manual_shoe"])
def test_one_face_up_card_is_discarded_and_the_deal_goes_on(table: Table, method: DealingMethod) -> None:
    t = table(method)
    place_two_players(t)
    if method == "automated_shoe":
        face_up_on_dispense(t, 1)
    t.press("no_more_bets")
    if method == "manual_shoe":
        face_up_while_drawing(t, [2])
    assert [(e.type, e.rule) for e in t.events if e.type == "card.face_up_discarded"] == [
        ("card.face_up_discarded", "643a.13(a)")
    ]
    assert t.types()[-1] == "decision.requested"
    r = t.state.round
    assert r is not None
    assert [len(r.seats[n].cards) for n in (1, 2)] == [3, 3] and len(r.areas["community"]) == 2
    # 6 to the players, 2 community (and a burn from the automated shoe), 1 face up: the rest is the stub.
    dealt = 9 if method == "automated_shoe" else 8
    assert next(e for e in t.events if e.type == "stub.discarded").payload["count"] == 52 - dealt - 1


@pytest.mark.parametrize("method", ["automated_shoe", "manual_shoe"])
def test_a_second_face_up_card_voids_the_round(table: Table, method: DealingMethod) -> None:
    t = table(method)
    place_two_players(t)
    if method == "automated_shoe":
        face_up_on_dispense(t, 2)
    t.press("no_more_bets")
    if method == "manual_shoe":
        face_up_while_drawing(t, [1, 3])
    void = next(e for e in t.events if e.type == "round.voided")
    assert void.rule == "643a.13(a)" and void.payload["returned"] == RETURNED
    assert t.types()[t.events.index(void) + 1] == "shuffle.started"


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("after_bet_1", [False, True])
def test_a_community_card_exposed_early_voids_the_round(table: Table, method: DealingMethod, after_bet_1: bool) -> None:
    t = table(method)
    place_two_players(t)
    t.press("no_more_bets")
    deal(t, method)
    t.press("withdraw")  # seat 1 takes back Bet Number 1: still returned with the rest
    if after_bet_1:  # community#1 is up; community#2 exposed before Bet Number 2 is decided
        t.press("let_it_ride")
        assert t.types()[-2:] == ["community.revealed", "decision.requested"]
    void = t.press("community_exposed")
    assert [(e.type, e.rule) for e in void][:1] == [("round.voided", "643a.13(d)")]
    assert void[0].payload["returned"] == RETURNED
    assert t.state.round is not None and t.state.round.number == 2  # reshuffled, next round open


def test_a_wrong_stack_size_voids_the_round(table: Table) -> None:
    t = table()
    place_two_players(t)
    sizes = iter([3, 2])  # the second player's stack comes out with two cards

    def answer(c: DeviceCommand, orig: Answer = t.answer) -> list[Input]:
        if c.verb == "dispense_stack":
            n = next(sizes, 3)
            stack, t.shoe = t.shoe[:n], t.shoe[n:]
            return [StackDispensed("shoe", cards=tuple(stack))]
        return orig(c)

    t.answer = answer
    t.press("no_more_bets")
    void = next(e for e in t.events if e.type == "round.voided")
    assert void.rule == "643a.13(c)" and void.payload["returned"] == RETURNED
    assert "stack of 2 cards instead of 3" in void.payload["reason"]


def test_a_shoe_jam_voids_the_round(table: Table) -> None:
    t = table()
    place_two_players(t)
    stacks = {"n": 0}

    def answer(c: DeviceCommand, orig: Answer = t.answer) -> list[Input]:
        if c.verb == "dispense_stack":
            stacks["n"] += 1
            if stacks["n"] == 3:  # the community stack never comes out
                return [DeviceFault("shoe", code="jam", detail="card path blocked")]
        return orig(c)

    t.answer = answer
    t.press("no_more_bets")
    void = next(e for e in t.events if e.type == "round.voided")
    assert void.rule == "643a.13(f)" and void.payload["returned"] == RETURNED
    # The jammed shoe is held (.13(g)) until it is back: no shuffle for a round it would void (docs/rules.md).
    assert t.types()[t.events.index(void) + 1] == "table.blocked"


def test_a_reshuffling_shoe_dispenses_the_two_community_cards_first(chapter_table: ChapterTable, deck: Deck) -> None:
    # 643a.10(g): the two community cards may come out before the three cards to each player; no card is
    # burned, the burn belonging to the community stack of three of 643a.10(b).
    from controller.games.let_it_ride.rules import LetItRideRules
    from controller.games.let_it_ride.spec import LetItRideSpec

    rules = LetItRideRules.model_validate({"chapter": "643a", "let_it_ride_paytable": "A", "reshuffling_shoe": True})
    t = chapter_table(LetItRideSpec(), rules, "automated_shoe", [deck(["Kd", "4s", "Ah", "Ad", "Ac"])])
    for bet in ("bet_1", "bet_2", "bet_3"):
        t.wager(1, bet, 500)
    t.press("no_more_bets")
    r = t.state.round
    assert r is not None
    assert (r.areas["community"], r.seats[1].cards) == (["Kd", "4s"], ["Ah", "Ad", "Ac"])
    assert "burn" not in r.areas
    assert [e.rule for e in t.events if e.type == "community.dealt"] == ["643a.10(g)"]


def test_five_card_bonus_chips_are_counted_before_the_deal(chapter_table: ChapterTable) -> None:
    """643a.2(c): the Five Card Bonus on a table game system, locked out at "no more bets"; 643a.8(b)(1): its chips
    counted against the wagers the system accepted before any card."""
    # 643a.8(b)(1): on a table game system the dealer counts the Five Card Bonus chips against the accepted
    # wagers before any card; a count that disagrees stops the deal for a floorperson.
    from controller.engine.inputs import CountEntered

    def round_with_two_bonuses() -> tuple[PureTable, list[DomainEvent]]:
        r = rules(five_card_bonus_table_game_system=True)
        t = chapter_table(LetItRideSpec(), r, "automated_shoe")
        for seat in (2, 4):
            for bet in ("bet_1", "bet_2", "bet_3"):
                t.wager(seat, bet, 500)
            t.wager(seat, "five_card_bonus", 100)
        asked = t.press("no_more_bets")
        return t, asked

    t, asked = round_with_two_bonuses()
    request = next(e for e in asked if e.type == "chip_count.requested")
    assert (request.rule, request.payload["accepted"]) == ("643a.8(b)(1)", 2)
    assert "cards.dealt" not in t.types()
    ok = t.feed(CountEntered("chips", 2))
    assert [e.type for e in ok][:3] == ["chip_count.reconciled", "deal.started", "cards.dealt"]

    t, _ = round_with_two_bonuses()
    wrong = t.feed(CountEntered("chips", 3))
    assert [(e.type, e.rule) for e in wrong] == [("chip_count.mismatch", "643a.8(b)(1)")]
    assert "chip_count" in t.state.blocks and "cards.dealt" not in t.types()


def test_the_progressive_system_takes_its_wagers_and_locks_them_out_643a_2_d(chapter_table: ChapterTable) -> None:
    """643a.2(d): a wagering device at each seat accepts the Three-Card Progressive Payout Wager (643a.7(g)) in the
    sizes the Rules Submission allows, and the lock-out refuses one after "no more bets" (643a.7(c), 643a.8(b)(2)); the
    wagers accepted feed the meter at the lock-out."""
    r = rules(
        three_card_progressive=True,
        three_card_progressive_paytable="A",
        three_card_progressive_initial_cents=100_000,
        three_card_progressive_reset_cents=100_000,
        three_card_progressive_rate_percent=15,
    )
    t = chapter_table(LetItRideSpec(), r, "automated_shoe")
    for bet in ("bet_1", "bet_2", "bet_3"):
        t.wager(2, bet, 500)
    assert [(e.type, e.rule) for e in t.wager(2, "three_card_progressive", 200)] == [("wager.rejected", "643a.7(g)")]
    assert [(e.type, e.rule) for e in t.wager(2, "three_card_progressive", 100)] == [("wager.accepted", "643a.7(g)")]
    out = t.press("no_more_bets")
    assert [e.payload["seat"] for e in out if e.type == "meter.contributed"] == [2]
    late = t.wager(3, "three_card_progressive", 100)
    assert [(e.type, e.rule) for e in late] == [("wager.rejected", "643a.7(c)")]
