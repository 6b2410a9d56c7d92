"""One player on several boxes in the pure engine (controller/engine/players.py): bound from the dealer panel or by a
floorperson's command within the chapter's boxes per player, a table-local number journaled with its boxes, and used
wherever a chapter speaks of a player: envy bonuses (655a.11(i)(1)(v), 643a.11(f)(3)(iv)(E)), the 683a.12(f) payout
limit per player per round, and the abandoned wagers of a player who leaves (.7(b)).

The same cases live, on simulated devices over ptys: tests/e2e/test_procedures_e2e.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.engine.inputs import BindBoxes, PlayerLeft
from controller.engine.state import Phase
from controller.games.cajun_stud.rules import CajunStudRules
from controller.games.cajun_stud.spec import CajunStudSpec
from drivers.interfaces import BoxesBound
from tests.engine.conftest import ChapterTable, Deck, MakeTable, PureTable


def bound_events(t: PureTable) -> list[tuple[str, str | None, dict[str, Any]]]:
    return [(e.type, e.rule, dict(e.payload)) for e in t.events if e.type.startswith("player.")]


def test_the_panel_and_a_floorperson_bind_boxes_to_a_numbered_player_655a_7_e(make_table: MakeTable) -> None:
    """655a.7(e): the Rules Submission's adjacent boxes; the player is a number the table gives, never an identity."""
    t = make_table(adjacent_boxes=3)
    t.feed(BoxesBound("dealer_panel", seats=(4, 3)))
    t.feed(BindBoxes((5, 6), "floorperson"))
    assert bound_events(t) == [
        ("player.bound", "655a.7(e)", {"player": 1, "seats": [3, 4], "by": "dealer"}),
        ("player.bound", "655a.7(e)", {"player": 2, "seats": [5, 6], "by": "floorperson"}),
    ]
    # Box 4 joins player 2's: player 1 is left with one box and is released; the new binding is player 3.
    t.feed(BindBoxes((4, 5, 6)))
    assert bound_events(t)[2:] == [
        ("player.released", "655a.7(e)", {"player": 1, "seats": [3, 4], "by": "floorperson"}),
        ("player.released", "655a.7(e)", {"player": 2, "seats": [5, 6], "by": "floorperson"}),
        ("player.bound", "655a.7(e)", {"player": 3, "seats": [4, 5, 6], "by": "floorperson"}),
    ]
    assert t.state.bound == {3: [4, 5, 6]}
    t.feed(BoxesBound("dealer_panel", seats=(6,)))  # one box: released, a player of its own again
    assert t.state.bound == {3: [4, 5]}


@pytest.mark.parametrize(
    ("seats", "reason"),
    [
        ((2, 3, 4), "at most 2 adjacent box(es)"),
        ((2, 4), "not adjacent"),
        ((6, 7), "distinct seat numbers from 1 to 6"),
        ((3,), "already a player of its own"),
    ],
)
def test_a_binding_the_rules_do_not_allow_is_refused_655a_7_e(
    make_table: MakeTable, seats: tuple[int, ...], reason: str
) -> None:
    t = make_table(adjacent_boxes=2)
    refused = t.feed(BindBoxes(seats))
    assert [(e.type, e.rule) for e in refused] == [("input.refused", "655a.7(e)")]
    assert reason in refused[0].payload["reason"]
    assert t.state.bound == {}


def test_no_binding_during_a_round_655a_7_e(make_table: MakeTable) -> None:
    t = make_table(adjacent_boxes=2)
    t.wager(3, "ante", 500)
    t.feed(BindBoxes((3, 4)))  # betting is open: allowed
    t.press("no_more_bets")
    refused = t.feed(BindBoxes((5, 6)))
    assert [(e.type, e.rule) for e in refused] == [("input.refused", "655a.7(e)")]
    assert "never during a round" in refused[0].payload["reason"]
    assert next(e for e in t.events if e.type == "no_more_bets").payload["bound"] == {"1": [3, 4]}


STREETS = ("street_3", "street_4", "street_5")


def envy_round(make_table: MakeTable, deck: Deck, bind: bool) -> PureTable:
    """Seats 3 and 4 (one player when bound) and seat 1 each wager the $1 Progressive; seat 3 makes a straight
    flush (7h 8h with 9h Th Jh), the Envy Bonus Qualifying Hand of 655a.1."""
    t = make_table(
        [deck(["2c", "3d", "7h", "8h", "4c", "5d", "9h", "Th", "Jh"])],
        adjacent_boxes=2,
        progressive_paytable="C",
        progressive_wager_cents=100,
    )
    if bind:
        t.feed(BindBoxes((3, 4)))
    for seat in (1, 3, 4):
        t.wager(seat, "ante", 500)
        t.wager(seat, "progressive", 100)
    t.press("no_more_bets")
    for street in STREETS:
        for seat in (1, 3, 4):
            t.wager(seat, street, 500)
    return t


@pytest.mark.parametrize("bind", [True, False])
def test_no_envy_bonus_for_the_players_own_box_655a_11_i_1_v(make_table: MakeTable, deck: Deck, bind: bool) -> None:
    """The issue's case: seats 3 and 4 one player, seat 3's straight flush pays seat 1 the $300 Envy Bonus
    (655a.12(c)(5)) and not seat 4, "a player is not entitled to an Envy Bonus for his own hand"."""
    t = envy_round(make_table, deck, bind)
    envy = {e.payload["seat"]: e.payload for e in t.events if e.type == "envy_bonus.settled"}
    assert envy[1]["paid"] == 30_000 and envy[1]["note"] == "for seat 3's straight_flush"
    assert (4 in envy) is not bind
    assert all(e.rule == "655a.11(i)(1)(v)" for e in t.events if e.type == "envy_bonus.settled")
    recorded = next(e for e in t.events if e.type == "round.recorded").payload["record"]
    players = {s["seat"]: s.get("player") for s in recorded["seats"]}
    assert players == ({1: None, 3: "1", 4: "1"} if bind else {1: None, 3: None, 4: None})


def cajun_rules() -> CajunStudRules:
    return CajunStudRules.model_validate(
        {"chapter": "683a", "ante_paytable": "A", "adjacent_boxes": 2, "payout_limit_cents": 5_000_000}
    )


@pytest.mark.parametrize("bind", [True, False])
def test_the_683a_12_f_payout_limit_is_per_player_per_round(
    chapter_table: ChapterTable, deck: Deck, bind: bool
) -> None:
    """683a.12(f): an aggregate payout limit per player per round ($50,000 here). With Qs Js Ts on the board, seat 4
    (9s 8s, a straight flush at 100 to 1 on $200) is paid $20,000 and seat 3 (As Ks, a royal flush at 500 to 1 on
    $500) what is left of the player's limit, $30,000, when they are one player; its own $50,000 when not. Seat 6
    (Ad Kd, a straight at 4 to 1 on $500) is another player.

    The seats are settled counterclockwise from the dealer's right (683a.11(h)): seat 6, then 4, then 3."""
    t = chapter_table(
        CajunStudSpec(), cajun_rules(), "automated_shoe", [deck(["As", "Ks", "9s", "8s", "Ad", "Kd", "Qs", "Js", "Ts"])]
    )
    if bind:
        t.feed(BindBoxes((3, 4)))
    for seat, ante in ((3, 5000), (4, 2000), (6, 5000)):
        t.wager(seat, "ante", ante)
    t.press("no_more_bets")
    for spot in ("raise_1", "raise_2", "raise_3"):
        for seat, ante in ((3, 5000), (4, 2000), (6, 5000)):
            t.wager(seat, spot, 3 * ante)
    settled = [e.payload for e in t.events if e.type == "hand.settled"]
    # Counterclockwise from the dealer's right (683a.11(h)): seat 6, then 4, then 3.
    assert [(p["seat"], p["paid"], p["payout_limit_rule"]) for p in settled] == [
        (6, 200_000, None),
        (4, 2_000_000, None),
        (3, 3_000_000 if bind else 5_000_000, "683a.12(f)"),
    ]


def test_a_player_who_leaves_abandons_every_box_683a_7_b(chapter_table: ChapterTable) -> None:
    """683a.7(b): "any wagers made by the player may be considered abandoned": all his boxes, not the one seat."""
    t = chapter_table(CajunStudSpec(), cajun_rules())
    t.feed(BindBoxes((3, 4)))
    for seat in (3, 4, 6):
        t.wager(seat, "ante", 500)
    t.press("no_more_bets")
    left = t.feed(PlayerLeft(4))
    abandoned = [(e.rule, e.payload["seat"], e.payload.get("player")) for e in left if e.type == "wagers.abandoned"]
    assert abandoned == [("683a.7(b)", 3, 1), ("683a.7(b)", 4, 1)]
    # Seat 3 was deciding: the decision moves on to seat 6.
    assert [(e.type, e.payload["seat"]) for e in left if e.type == "decision.requested"] == [("decision.requested", 6)]
    assert t.state.phase is Phase.DECISION


def test_a_binding_lasts_the_session_across_a_restart(make_table: MakeTable) -> None:
    """The binding is critical state: stored with the engine state, restored after a restart (docs/recovery.md), and
    the next player number is never reused (655a.7(e))."""
    from controller.store import snapshot

    t = make_table(adjacent_boxes=2)
    t.feed(BindBoxes((3, 4)))
    t.feed(BindBoxes((3,)))
    t.feed(BindBoxes((5, 6)))
    restored = snapshot.decode(snapshot.encode(t.state))
    assert (restored.bound, restored.next_player) == ({2: [5, 6]}, 3)
