"""655a round settlement: progressive meters at each player's turn, envy, Five Card Hand Bonus, records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.core.settlement import Settled, SettlementError
from controller.games.mississippi_stud.record import MississippiStudRound
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.settle import settle

STREETS = {"street_3": 500, "street_4": 500, "street_5": 500}


def rules(**kw: Any) -> MississippiStudRules:
    return MississippiStudRules.model_validate({"chapter": "655a", **kw})


def record(seats: list[dict[str, Any]], community: str, **kw: Any) -> MississippiStudRound:
    data = {"chapter": "655a", "seats": seats, "community": community.split(), **kw}
    return MississippiStudRound.model_validate(data)


def rows(results: Sequence[Settled], seat: int, wager: str) -> list[Settled]:
    return [r for r in results if r.seat == seat and r.wager == wager]


def test_two_straight_flushes_take_10_percent_of_the_meter_in_turn_and_envy_each_other() -> None:
    """Paytable A: a straight flush wins 10 % of the meter (655a.12(c)(1)), seat 6 first (655a.11(h)), seat 4 then 10 %
    of what is left; each is paid $300 Envy Bonus for the other's (655a.12(c)(5))."""
    # Paytable A: a straight flush wins 10% of the meter (655a.12(c)(1)); seat 6 is paid first (655a.11(h)).
    r = rules(progressive_paytable="A")
    rec = record(
        [
            {"seat": 6, "cards": ["Qh", "Kh"], "wagers": {"ante": 500, **STREETS, "progressive": 100}},
            {"seat": 4, "cards": ["7h", "8h"], "wagers": {"ante": 500, **STREETS, "progressive": 100}},
            {"seat": 2, "cards": ["2c", "3d"], "wagers": {"ante": 500, "progressive": 100}, "folded_on": "street_3"},
        ],
        "9h Th Jh",
        meters={"progressive": 2_000_000},
    )
    results, meters = settle(r, rec)
    (p6,), (p4,) = rows(results, 6, "progressive"), rows(results, 4, "progressive")
    assert (p6.paid + p6.returned, p6.note) == (200_000, "progressive meter 2000000 -> 1800000")
    assert (p4.paid + p4.returned, p4.note) == (180_000, "progressive meter 1800000 -> 1620000")
    assert meters == {"progressive": 1_620_000}
    # 655a.12(c)(5): $300 per straight flush held by another player; seat 2 folded but its wager stands.
    assert [x.paid for x in rows(results, 2, "envy_bonus")] == [30_000, 30_000]
    assert [x.note for x in rows(results, 6, "envy_bonus")] == ["for seat 4's straight_flush"]
    assert rows(results, 2, "progressive")[0].outcome == "lose"
    assert [x.rule for x in results if x.wager == "envy_bonus"] == ["655a.11(i)(1)(v)"] * 4


def test_no_envy_for_the_same_players_other_box() -> None:
    """655a.11(i)(1)(v): no Envy Bonus for the player's own hand, on his other box either (655a.7(e) adjacent_boxes)."""
    r = rules(progressive_paytable="A", adjacent_boxes=2)
    rec = record(
        [
            {"seat": 6, "player": "ann", "cards": ["Qh", "Kh"], "wagers": {"ante": 500, **STREETS, "progressive": 100}},
            {"seat": 5, "player": "ann", "cards": ["7h", "8h"], "wagers": {"ante": 500, **STREETS, "progressive": 100}},
        ],
        "9h Th Jh",
        meters={"progressive": 2_000_000},
    )
    results, _ = settle(r, rec)
    assert [x for x in results if x.wager == "envy_bonus"] == []
    with pytest.raises(SettlementError, match=r"655a\.7\(e\) allows at most 1 adjacent box"):
        settle(rules(progressive_paytable="A"), rec)


def test_royal_takes_the_whole_meter_which_resets_to_the_reseed() -> None:
    """Paytable B with a $5 wager: the mega meter reseeds at $10,000 for 1, $50,000 (655a.12(c)(3))."""
    # Paytable B with a $5 wager: mega reseed is $10,000 for 1 = $50,000 (655a.12(c)(3)); envy $5,000.
    r = rules(progressive_paytable="B", progressive_wager_cents=500)
    rec = record(
        [
            {"seat": 3, "cards": ["Ah", "Kh"], "wagers": {"ante": 500, **STREETS, "progressive": 500}},
            {"seat": 1, "cards": ["2c", "2d"], "wagers": {"ante": 500, **STREETS, "progressive": 500}},
        ],
        "Qh Jh Th",
        meters={"mega": 7_654_321, "major": 200_000},
    )
    results, meters = settle(r, rec)
    (p3,) = rows(results, 3, "progressive")
    assert (p3.outcome, p3.paid + p3.returned, p3.odds) == ("win", 7_654_321, "100% of the mega meter")
    assert meters == {"mega": 5_000_000, "major": 200_000}
    assert [x.paid for x in rows(results, 1, "envy_bonus")] == [500_000]


def test_paytable_c_four_of_a_kind_is_the_minor_and_trips_10_for_1() -> None:
    r = rules(progressive_paytable="C")
    rec = record(
        [
            {"seat": 2, "cards": ["9c", "9d"], "wagers": {"ante": 500, **STREETS, "progressive": 100}},
            {"seat": 1, "cards": ["Kc", "Kd"], "wagers": {"ante": 500, **STREETS, "progressive": 100}},
        ],
        "9h 9s Ks",
        meters={"mega": 1_000_000, "major": 100_000, "minor": 33_333},
    )
    results, meters = settle(r, rec)
    assert rows(results, 2, "progressive")[0].paid + 100 == 33_333
    assert meters["minor"] == 25_000  # $250 for 1 reseed
    # Seat 1: K-K with 9-9-K is a full house, 50 for 1.
    assert rows(results, 1, "progressive")[0].paid == 4_900


def test_five_card_hand_bonus_with_magic_card_and_lucky_bonus() -> None:
    """The Magic Card pays 20 for 1 with a winning hand only (655a.12(e)(3)): seat 3's flush, not the others'."""
    r = rules(five_card_hand_bonus=True, magic_card_bonus=True, lucky_bonus=True)
    rec = record(
        [
            {"seat": 3, "cards": ["Ah", "9h"], "wagers": {"ante": 500, **STREETS, "five_card_hand_bonus": 100}},
            {"seat": 2, "cards": ["2c", "5d"], "wagers": {"ante": 500, **STREETS, "five_card_hand_bonus": 100}},
        ],
        "2h 7h Kh",
        magic_card="Kh",
        lucky_seat=3,
        meters={"five_card_hand_bonus": 1_500_000},
    )
    results, _ = settle(r, rec)
    (hand3,) = rows(results, 3, "five_card_hand_bonus")
    assert (hand3.hand, hand3.odds, hand3.paid, hand3.returned) == ("flush", "50 for 1", 4_900, 100)
    # The Magic Card is a community card, but only seat 3's flush wins: 20 for 1 and 5 for 1 with it (655a.12(e)(3)).
    assert [(x.seat, x.paid, x.rule) for x in results if x.wager == "magic_card_bonus"] == [
        (3, 2_000, "655a.11(i)(3)(iii)")
    ]
    assert [(x.seat, x.paid) for x in results if x.wager == "lucky_bonus"] == [(3, 500)]
    assert all("with a winning hand (655a.1, 655a.11(i)(3)(i))" in (x.note or "") for x in results if x.amount == 0)
    assert sum(x.paid + x.returned for x in results if x.seat == 3 and x.wager in BONUS) == (50 + 20 + 5) * 100
    (hand2,) = rows(results, 2, "five_card_hand_bonus")
    assert (hand2.outcome, hand2.collected) == ("lose", 100)
    assert "magic card Kh drawn, not paid" in (hand2.note or "") and "655a.11(i)(3)(i)" in (hand2.note or "")


BONUS = ("five_card_hand_bonus", "magic_card_bonus", "lucky_bonus")
# Seat 1's two cards with the community: a flush in hearts (50 for 1, 655a.12(e)(1)), or a straight, which loses.
WINNING, LOSING = (["Ah", "9h"], "2h 7h Kh"), (["9c", "8d"], "7h 6s 5h")


@pytest.mark.parametrize(("cards", "wins"), [(WINNING, True), (LOSING, False)])
@pytest.mark.parametrize(
    ("magic", "lucky", "bonus", "pays"), [("9h", 6, "magic_card_bonus", 20), ("2s", 1, "lucky_bonus", 5)]
)
def test_655a_11i3i_the_magic_card_and_lucky_bonus_pay_only_with_a_winning_hand(
    cards: tuple[list[str], str], wins: bool, magic: str, lucky: int, bonus: str, pays: int
) -> None:
    """655a.1: each is "an additional payout"; 655a.11(i)(3)(i): the dealer verifies the hand is a winning hand before
    settling them. The same draw on a flush pays the flush and 20 (or 5) for 1; on a straight, nothing at all."""
    hole, community = cards
    if not wins and magic == "9h":
        magic = "9c"  # the losing hand's own card
    r = rules(five_card_hand_bonus=True, magic_card_bonus=True, lucky_bonus=True)
    rec = record(
        [{"seat": 1, "cards": hole, "wagers": {"ante": 500, **STREETS, "five_card_hand_bonus": 100}}],
        community,
        magic_card=magic,
        lucky_seat=lucky,
        meters={"five_card_hand_bonus": 1_000_000},
    )
    results, _ = settle(r, rec)
    mine = {x.wager: x for x in results if x.wager in BONUS}
    received = sum(x.paid + x.returned for x in mine.values())
    if wins:
        assert set(mine) == {"five_card_hand_bonus", bonus} and received == (50 + pays) * 100
        assert mine[bonus].odds == f"{pays} for 1" and mine[bonus].paytable == "655a.12(e)(3)"
    else:
        assert set(mine) == {"five_card_hand_bonus"} and received == 0
        assert mine["five_card_hand_bonus"].collected == 100
        assert "not paid" in (mine["five_card_hand_bonus"].note or "")


def test_straight_flush_takes_10_percent_of_the_five_card_hand_bonus_meter() -> None:
    r = rules(five_card_hand_bonus=True)
    rec = record(
        [{"seat": 1, "cards": ["9h", "8h"], "wagers": {"ante": 500, **STREETS, "five_card_hand_bonus": 100}}],
        "7h 6h 5h",
        meters={"five_card_hand_bonus": 1_000_005},
    )
    results, meters = settle(r, rec)
    assert rows(results, 1, "five_card_hand_bonus")[0].paid + 100 == 100_000  # 10%, rounded down to the cent
    assert meters == {"five_card_hand_bonus": 900_005}


def test_order_is_counterclockwise_then_each_seats_optional_wagers() -> None:
    r = rules(three_card_bonus_paytable="A", progressive_paytable="A")
    rec = record(
        [
            {"seat": 1, "cards": ["2c", "3d"], "wagers": {"ante": 500, **STREETS, "three_card_bonus": 100}},
            {"seat": 5, "cards": ["4c", "6d"], "wagers": {"ante": 500, **STREETS, "progressive": 100}},
        ],
        "Jh Js 8c",
        meters={"progressive": 1_000_000},
    )
    results, _ = settle(r, rec)
    assert [(x.seat, x.wager) for x in results] == [
        (5, "ante"),
        (5, "street_3"),
        (5, "street_4"),
        (5, "street_5"),
        (5, "progressive"),
        (1, "ante"),
        (1, "street_3"),
        (1, "street_4"),
        (1, "street_5"),
        (1, "three_card_bonus"),
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"community": "2h 3h"}, "community has 2 cards; 655a.10(c) deals three"),
        ({"cards": ["Jh", "5c"]}, "duplicate card(s) Jh"),
        ({"wagers": {"ante": 500, "street_3": 700}}, "700 is not one, two or three times the Ante"),
        ({"wagers": {"ante": 500, **STREETS, "six_card_bonus": 100}}, "does not offer the wager"),
        ({"wagers": {"ante": 500, "street_3": 500}, "folded_on": "street_3"}, "folded on street_3, so made no 3rd"),
        ({"wagers": {"ante": 500, **STREETS, "progressive": 500}}, "Progressive Payout Wager is 100 cents"),
        ({"cards": ["Kd"]}, "1 cards; 655a.10(b) deals each player two"),
    ],
)
def test_records_the_chapter_could_not_produce_are_refused(change: dict[str, Any], message: str) -> None:
    seat: dict[str, Any] = {"seat": 1, "cards": ["4c", "5c"], "wagers": {"ante": 500, **STREETS}}
    community = "Jh 9d 2s"
    if "community" in change:
        community = change.pop("community")
    seat.update(change)
    with pytest.raises((SettlementError, ValueError), match=message.replace("(", r"\(").replace(")", r"\)")):
        settle(rules(progressive_paytable="A"), record([seat], community))


def test_a_hit_without_its_meter_names_the_meter() -> None:
    rec = record(
        [{"seat": 1, "cards": ["Ah", "Kh"], "wagers": {"ante": 500, **STREETS, "progressive": 100}}], "Qh Jh Th"
    )
    with pytest.raises(SettlementError, match=r"meters\.progressive: seat 1 hit 100% of the progressive meter"):
        settle(rules(progressive_paytable="A"), rec)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    display=st.integers(min_value=50_000, max_value=10_000_000),
    moved=st.lists(st.integers(min_value=0, max_value=100_000), min_size=2, max_size=2),
    letter=st.sampled_from(["A", "B"]),
)
def test_a_linked_meter_at_each_turn_is_what_the_award_is_taken_from(
    display: int, moved: list[int], letter: str
) -> None:
    """655a.12(c)(4), 605a.8's stand-in: a linked round's record carries the link's meter at each winner's turn
    (`meters_at_turn`, the claim's meter_before), which other tables and the round's own contributions moved past the
    display the table last heard; each award is that turn's share, the wager included ("N for 1": paid + returned),
    whatever the display (link19)."""
    level = "progressive" if letter == "A" else "major"
    percent = 10 if letter == "A" else 100
    wager = 500
    at_turn = {"6:" + level: display + moved[0], "4:" + level: display // 2 + moved[1]}
    rec = record(
        [
            {"seat": 6, "cards": ["Qh", "Kh"], "wagers": {"ante": 500, **STREETS, "progressive": wager}},
            {"seat": 4, "cards": ["7h", "8h"], "wagers": {"ante": 500, **STREETS, "progressive": wager}},
        ],
        "9h Th Jh",
        meters={level: display} | ({"mega": 5_000_000} if letter == "B" else {}),
        meters_at_turn=at_turn,
    )
    results, _ = settle(rules(progressive_paytable=letter, progressive_wager_cents=wager), rec)
    for seat in (6, 4):
        (p,) = rows(results, seat, "progressive")
        award = at_turn[f"{seat}:{level}"] * percent // 100
        assert (p.paid, p.returned, p.collected) == (award - wager, wager, 0)
        assert p.note is not None and p.note.startswith(f"{level} meter {at_turn[f'{seat}:{level}']} at the link")
