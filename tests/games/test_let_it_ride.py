"""Chapter 643a, Let It Ride Poker: every paytable row of 643a.12 and the settlement of a round.

The expected odds and amounts here are typed in from ../shared/regulations/643a-let-it-ride.txt, not read
from controller.games.let_it_ride, so a wrong entry in the module fails a test.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from controller.core.money import fmt
from controller.core.settlement import Settled, SettlementError
from controller.games.let_it_ride.record import LetItRideRound
from controller.games.let_it_ride.rules import LetItRideRules, minimum_payout_limit
from controller.games.let_it_ride.settle import LetItRideSettlement, apportion, settle, settle_round

ROOT = Path(__file__).resolve().parents[2]

# Every optional wager offered; bonus letters are overridden per test.
ALL: dict[str, Any] = {
    "chapter": "643a",
    "let_it_ride_paytable": "A",
    "bet_max_cents": 100_000,
    "boxes_per_player": 2,
    "five_card_bonus": True,
    "five_card_bonus_paytable": "A",
    "three_card_bonus": True,
    "three_card_bonus_paytable": "A",
    "wager_limits": {"three_card_bonus": {"min_cents": 100}},  # the paytables are tested from $1
    "three_card_progressive": True,
    "three_card_progressive_paytable": "A",
    "three_card_progressive_wagers_cents": [100, 500],
    "three_card_progressive_initial_cents": 100_000,
    "three_card_progressive_reset_cents": 100_000,
    "three_card_progressive_rate_percent": 15,
    "five_card_progressive": True,
    "five_card_progressive_wagers_cents": [100, 500],
    "five_card_progressive_initial_cents": 1_000_000,
    "five_card_progressive_reset_cents": 1_000_000,
    "five_card_progressive_rate_percent": 15,
    "five_card_hand_bonus": True,
    "five_card_hand_bonus_initial_cents": 1_000_000,
    "five_card_hand_bonus_reset_cents": 1_000_000,
    "five_card_hand_bonus_rate_percent": 12.5,
}
METERS = {"three_card_progressive": 123_456, "five_card_progressive": 1_234_567, "five_card_hand_bonus": 1_234_567}


def rules(**over: Any) -> LetItRideRules:
    return LetItRideRules.model_validate({**ALL, **over})


def seat(
    n: int, cards: str, bet: int = 500, player: str | None = None, w1: bool = False, w2: bool = False, **extra: int
) -> dict[str, Any]:
    return {
        "seat": n,
        "player": player,
        "cards": cards.split(),
        "bet_1_withdrawn": w1,
        "bet_2_withdrawn": w2,
        "wagers": {"bet_1": bet, "bet_2": bet, "bet_3": bet, **extra},
    }


def record(community: str, *seats: dict[str, Any], **kw: Any) -> LetItRideRound:
    return LetItRideRound.model_validate(
        {"chapter": "643a", "community": community.split(), "seats": list(seats), "meters": METERS, **kw}
    )


def rows(settled: list[Settled] | tuple[Settled, ...], n: int, wager: str) -> list[Settled]:
    return [r for r in settled if r.seat == n and r.wager == wager]


def one(settled: list[Settled] | tuple[Settled, ...], n: int, wager: str) -> Settled:
    (r,) = rows(settled, n, wager)
    return r


# Five-card hands: name -> (player's three cards, the two community cards).
FIVE = {
    "royal_flush": ("As Ks Qs", "Js Ts"),
    "straight_flush": ("9h 8h 7h", "6h 5h"),
    "four_of_a_kind": ("9c 9d 9h", "9s 2c"),
    "full_house": ("9c 9d 9h", "2s 2c"),
    "flush": ("Ah 9h 7h", "4h 2h"),
    "straight": ("9c 8d 7h", "6s 5c"),
    "three_of_a_kind": ("9c 9d 9h", "2s 4c"),
    "two_pair": ("9c 9d 2h", "2s 4c"),
    "pair_of_tens_or_better": ("Tc Td 2h", "5s 9c"),
    "pair": ("9c 9d 2h", "5s Kc"),  # nines: below the tens the chapter pays
    "high_card": ("Kc Qd Ah", "2s 3c"),  # K-A-2 is no straight (643a.6(a))
}

# 643a.12(a): "N to 1" for paytable A and B; None loses.
LET_IT_RIDE = {
    "royal_flush": (1000, 500),
    "straight_flush": (200, 200),
    "four_of_a_kind": (50, 50),
    "full_house": (11, 11),
    "flush": (8, 8),
    "straight": (5, 5),
    "three_of_a_kind": (3, 3),
    "two_pair": (2, 2),
    "pair_of_tens_or_better": (1, 1),
    "pair": (None, None),
    "high_card": (None, None),
}
LET_IT_RIDE_EXTRA = [  # more rows of 643a.6: the wheel, broadway, each pair from tens to aces
    ("straight_flush", "Ah 2h 3h", "4h 5h", 200),
    ("straight", "Ac 2d 3h", "4s 5c", 5),
    ("straight", "Tc Jd Qh", "Ks Ac", 5),
    ("pair_of_tens_or_better", "Jc 2d 5h", "Js 8c", 1),
    ("pair_of_tens_or_better", "Qc 2d 5h", "8s Qh", 1),
    ("pair_of_tens_or_better", "Kc Kd 5h", "8s 3c", 1),
    ("pair_of_tens_or_better", "Ac 2d 5h", "8s Ah", 1),
]


@pytest.mark.parametrize("column", [0, 1], ids=["A", "B"])
@pytest.mark.parametrize("hand", sorted(LET_IT_RIDE))
def test_643a_12a(hand: str, column: int) -> None:
    """643a.12(a) on the five-card hands of 643a.6(b), the hand formed as 643a.1 defines it."""
    player, community = FIVE[hand]
    r = rules(let_it_ride_paytable="AB"[column])
    out = settle_round(r, record(community, seat(3, player)))
    odds = LET_IT_RIDE[hand][column]
    assert [x.wager for x in out] == ["bet_1", "bet_2", "bet_3"]
    for x in out:
        assert (x.hand, x.rule, x.paytable) == (hand, "643a.11(f)(3)", f"643a.12(a) paytable {'AB'[column]}")
        if odds is None:
            assert (x.outcome, x.paid, x.returned, x.collected) == ("lose", 0, 0, 500)
        else:
            assert (x.outcome, x.paid, x.returned, x.collected, x.odds) == ("win", 500 * odds, 500, 0, f"{odds:,} to 1")


@pytest.mark.parametrize(("hand", "player", "community", "odds"), LET_IT_RIDE_EXTRA)
def test_643a_12a_more_hands(hand: str, player: str, community: str, odds: int) -> None:
    """643a.6(a): the ace high in a pair of aces and a royal, low only in A-2-3-4-5; 643a.6(b) the hands."""
    out = settle_round(rules(), record(community, seat(3, player)))
    assert {(x.hand, x.outcome, x.paid) for x in out} == {(hand, "win", 500 * odds)}


# 643a.12(b): Five Card Bonus amounts in dollars for paytables A-G; None: blank cell; 0: "$0" (loses).
FIVE_CARD_BONUS = {
    "royal_flush": (20_000, 20_000, 20_000, 10_000, 10_000, 10_000, 25_000),
    "straight_flush": (2_000, 2_000, 2_000, 2_000, 2_000, 2_000, 2_500),
    "four_of_a_kind": (150, 200, 100, 200, 200, 100, 400),
    "full_house": (75, 75, 75, 75, 100, 75, 200),
    "flush": (50, 50, 50, 50, 50, 50, 50),
    "straight": (25, 25, 25, 25, 25, 25, 25),
    "three_of_a_kind": (4, 5, 9, 5, 10, 9, 5),
    "two_pair": (3, 4, 6, 4, 6, 6, None),
    "pair_of_tens_or_better": (2, 1, 0, 1, 0, 0, None),
    "pair": (None,) * 7,
    "high_card": (None,) * 7,
}


@pytest.mark.parametrize("column", range(7), ids=list("ABCDEFG"))
@pytest.mark.parametrize("hand", sorted(FIVE_CARD_BONUS))
def test_643a_12b(hand: str, column: int) -> None:
    letter = "ABCDEFG"[column]
    player, community = FIVE[hand]
    rec = record(community, seat(2, player, five_card_bonus=100))
    out = settle_round(rules(five_card_bonus_paytable=letter), rec)
    x = one(out, 2, "five_card_bonus")
    assert (x.hand, x.rule, x.paytable) == (hand, "643a.11(f)(3)(i)", f"643a.12(b) paytable {letter}")
    dollars = FIVE_CARD_BONUS[hand][column]
    # The printed amount is the whole sum paid for the $1 wager, the wager included ("for 1"): $2 is $1 won.
    if dollars and dollars > 1:
        assert (x.outcome, x.paid, x.returned, x.collected) == ("win", dollars * 100 - 100, 100, 0)
    elif dollars == 1:
        assert (x.outcome, x.paid, x.returned, x.collected) == ("push", 0, 100, 0)
    else:
        assert (x.outcome, x.paid, x.returned, x.collected) == ("lose", 0, 0, 100)


# 643a.12(c): Three Card Bonus "N to 1" for paytables A-F, by the player's three cards.
THREE_CARD_BONUS = {
    "Ah Kh Qh": ("mini_royal", (40, 40, 40, 50, 50, 50)),  # A-C: a mini-royal is a straight flush
    "9h 8h 7h": ("straight_flush", (40,) * 6),
    "Ah 2h 3h": ("straight_flush", (40,) * 6),
    "9c 9d 9h": ("three_of_a_kind", (30,) * 6),
    "9c 8d 7h": ("straight", (6, 5, 6, 6, 5, 6)),
    "Ac 2d 3h": ("straight", (6, 5, 6, 6, 5, 6)),
    "Qc Kd Ah": ("straight", (6, 5, 6, 6, 5, 6)),
    "2h 7h 9h": ("flush", (4, 4, 3, 4, 4, 3)),
    "9c 9s 2h": ("pair", (1,) * 6),
    "2c 7d 9h": ("high_card", (0,) * 6),
    "Kc Ad 2h": ("high_card", (0,) * 6),
}


@pytest.mark.parametrize("column", range(6), ids=list("ABCDEF"))
@pytest.mark.parametrize("cards", sorted(THREE_CARD_BONUS))
def test_643a_12c(cards: str, column: int) -> None:
    """643a.12(c) on the Three Card Bonus hands of 643a.6(c), the wager of 643a.7(f)."""
    letter = "ABCDEF"[column]
    hand, odds = THREE_CARD_BONUS[cards]
    rec = record("Jd 4c", seat(1, cards, three_card_bonus=300))
    out = settle_round(rules(three_card_bonus_paytable=letter), rec)
    x = one(out, 1, "three_card_bonus")
    assert (x.hand, x.rule, x.paytable) == (hand, "643a.11(f)(3)(ii)", f"643a.12(c) paytable {letter}")
    if odds[column]:
        assert (x.outcome, x.paid, x.returned, x.odds) == ("win", 300 * odds[column], 300, f"{odds[column]} to 1")
    else:
        assert (x.outcome, x.paid, x.collected) == ("lose", 0, 300)


# 643a.12(d)(1): Three-Card Progressive, "N for 1" or "100% of meter", paytables A and B; None loses.
THREE_CARD_PROGRESSIVE: dict[str, tuple[str, tuple[int | str | None, int | str | None]]] = {
    "As Ks Qs": ("mini_royal_spades", ("100%", "100%")),
    "Ah Kh Qh": ("mini_royal", (500, 500)),
    "Kd Qd Ad": ("mini_royal", (500, 500)),
    "Qc Ac Kc": ("mini_royal", (500, 500)),
    "9h 8h 7h": ("straight_flush", (70, 100)),
    "9c 9d 9h": ("three_of_a_kind", (60, 90)),
    "9c 8d 7h": ("straight", (6, None)),
    "Ac 2d 3h": ("straight", (6, None)),
    "2h 7h 9h": ("flush", (None, None)),
    "9c 9s 2h": ("pair", (None, None)),
    "2c 7d 9h": ("high_card", (None, None)),
}


@pytest.mark.parametrize("column", [0, 1], ids=["A", "B"])
@pytest.mark.parametrize("cards", sorted(THREE_CARD_PROGRESSIVE))
def test_643a_12d1(cards: str, column: int) -> None:
    """643a.12(d)(1) on the Three-Card Progressive hands of 643a.6(d), the wager of 643a.7(g)."""
    letter = "AB"[column]
    hand, odds = THREE_CARD_PROGRESSIVE[cards]
    s = settle(
        rules(three_card_progressive_paytable=letter), record("Jd 4c", seat(1, cards, three_card_progressive=100))
    )
    x = one(s.settled, 1, "three_card_progressive")
    assert (x.hand, x.rule, x.paytable) == (hand, "643a.11(f)(3)(iii)(D)", f"643a.12(d)(1) paytable {letter}")
    n = odds[column]
    if n == "100%":  # the whole meter at this turn, then the reset amount (643a.12(d)(3), (4))
        assert (x.outcome, x.paid + x.returned, x.returned, x.odds) == ("win", 123_456, 100, "100% of meter")
        assert s.meters["three_card_progressive"] == 100_000
    elif n is None:
        assert (x.outcome, x.paid, x.collected) == ("lose", 0, 100)
        assert s.meters == METERS
    else:  # "N for 1": N times the wager in total, the wager included
        assert (x.outcome, x.paid + x.returned, x.returned, x.odds) == ("win", 100 * int(n), 100, f"{n} for 1")
        assert s.meters == METERS


# 643a.12(e)(1): Five-Card Progressive; 643a.12(f)(1): Five Card Hand Bonus. int: "N for 1"; str: meter share.
FIVE_CARD_PROGRESSIVE: dict[str, int | str | None] = {
    "royal_flush": "100%",
    "straight_flush": "10%",
    "four_of_a_kind": 300,
    "full_house": 50,
    "flush": 40,
    "straight": 30,
    "three_of_a_kind": 9,
    "two_pair": None,
    "pair_of_tens_or_better": None,
    "pair": None,
    "high_card": None,
}
FIVE_CARD_HAND_BONUS: dict[str, int | str | None] = {
    "royal_flush": "100%",
    "straight_flush": "10%",
    "four_of_a_kind": 500,
    "full_house": 100,
    "flush": 50,
    "straight": None,
    "three_of_a_kind": None,
    "two_pair": None,
    "pair_of_tens_or_better": None,
    "pair": None,
    "high_card": None,
}


@pytest.mark.parametrize(
    ("wager", "table", "rule", "paytable"),
    [
        ("five_card_progressive", FIVE_CARD_PROGRESSIVE, "643a.11(f)(3)(iv)(D)", "643a.12(e)(1)"),
        ("five_card_hand_bonus", FIVE_CARD_HAND_BONUS, "643a.11(f)(3)(v)", "643a.12(f)(1)"),
    ],
)
@pytest.mark.parametrize("hand", sorted(FIVE))
def test_643a_12e1_and_12f1(
    hand: str, wager: str, table: dict[str, int | str | None], rule: str, paytable: str
) -> None:
    """The Five-Card Progressive Payout Wager (643a.7(h)) and the Five Card Hand Bonus Wager (643a.7(i)), each on its
    own: neither has a bearing on the Let It Ride Wagers (643a.7(j))."""
    player, community = FIVE[hand]
    box = seat(4, player)
    box["wagers"][wager] = 100
    s = settle(rules(), record(community, box))
    x = one(s.settled, 4, wager)
    assert (x.hand, x.rule, x.paytable) == (hand, rule, paytable)
    n = table[hand]
    if n == "100%":
        assert (x.outcome, x.paid + x.returned, x.returned) == ("win", 1_234_567, 100)
        assert s.meters[wager] == 1_000_000  # reset amount
    elif n == "10%":
        assert (x.outcome, x.paid + x.returned, x.returned) == ("win", 123_456, 100)  # a cent's fraction is not paid
        assert s.meters[wager] == 1_234_567 - 123_456
    elif n is None:
        assert (x.outcome, x.paid, x.collected) == ("lose", 0, 100)
    else:
        assert (x.outcome, x.paid + x.returned, x.returned, x.odds) == ("win", 100 * int(n), 100, f"{n} for 1")


# 643a.12(d)(5) and (e)(5): envy bonus by the receiver's wager ($1, $5) and the other player's hand, in dollars.
THREE_CARD_ENVY = [
    (100, "As Ks Qs", "mini_royal_spades", 100),
    (100, "Ah Kh Qh", "mini_royal", 25),
    (100, "Qd Kd Ad", "mini_royal", 25),
    (100, "Ac Qc Kc", "mini_royal", 25),
    (500, "As Ks Qs", "mini_royal_spades", 500),
    (500, "Ah Kh Qh", "mini_royal", 125),
]
FIVE_CARD_ENVY = [
    (100, "As Ks Qs", "Js Ts", "royal_flush", 1_000),
    (100, "9h 8h 7h", "6h 5h", "straight_flush", 300),
    (500, "As Ks Qs", "Js Ts", "royal_flush", 5_000),
    (500, "9h 8h 7h", "6h 5h", "straight_flush", 1_500),
]


@pytest.mark.parametrize(("size", "holder", "hand", "dollars"), THREE_CARD_ENVY)
def test_643a_12d5(size: int, holder: str, hand: str, dollars: int) -> None:
    out = settle_round(rules(), record("2c 3d", seat(5, holder), seat(1, "9c 9d 4s", three_card_progressive=size)))
    x = one(out, 1, "three_card_envy_bonus")
    assert (x.hand, x.amount, x.outcome, x.paid, x.returned, x.collected) == (hand, 0, "win", dollars * 100, 0, 0)
    assert (x.rule, x.paytable) == ("643a.11(f)(3)(iii)(E)", f"643a.12(d)(5) ${size // 100} Progressive Payout Wager")
    assert not rows(out, 5, "three_card_envy_bonus")  # the holder made no progressive wager


@pytest.mark.parametrize(("size", "holder", "community", "hand", "dollars"), FIVE_CARD_ENVY)
def test_643a_12e5(size: int, holder: str, community: str, hand: str, dollars: int) -> None:
    out = settle_round(rules(), record(community, seat(5, holder), seat(1, "2c 2d 4s", five_card_progressive=size)))
    x = one(out, 1, "five_card_envy_bonus")
    assert (x.hand, x.amount, x.outcome, x.paid, x.returned, x.collected) == (hand, 0, "win", dollars * 100, 0, 0)
    assert (x.rule, x.paytable) == ("643a.11(f)(3)(iv)(E)", f"643a.12(e)(5) ${size // 100} Progressive Payout Wager")


def test_643a_12e5_four_of_a_kind_is_no_envy_hand() -> None:
    rec = record("9s 2c", seat(5, "9c 9d 9h"), seat(1, "Ac Kd 4s", five_card_progressive=100))
    out = settle_round(rules(), rec)
    assert not rows(out, 1, "five_card_envy_bonus")


def test_643a_12f3_magic_card_and_lucky_bonus_with_a_winning_hand() -> None:
    r = rules(magic_card_bonus=True, lucky_bonus=True)
    # Seat 3: a flush in diamonds with the community (643a.12(f)(1), 50 for 1), holding the Magic Card 9d, drawn for the
    # Lucky Bonus. Seat 2 has neither; seat 1 made no hand bonus wager.
    rec = record(
        "2d 5d",
        seat(3, "9d Kd 4d", five_card_hand_bonus=200),
        seat(2, "7c 8s Jh", five_card_hand_bonus=100),
        seat(1, "Tc Td 3h"),
        magic_card="9d",
        lucky_seat=3,
    )
    out = settle_round(r, rec)
    hand, magic, lucky = (one(out, 3, w) for w in ("five_card_hand_bonus", "magic_card_bonus", "lucky_bonus"))
    assert (hand.outcome, hand.hand, hand.paid, hand.returned) == ("win", "flush", 49 * 200, 200)
    assert (magic.amount, magic.paid, magic.returned, magic.odds, magic.rule) == (
        0,
        20 * 200,
        0,
        "20 for 1",
        "643a.11(f)(3)(v)",
    )
    assert (lucky.amount, lucky.paid, lucky.returned, lucky.odds, lucky.paytable) == (
        0,
        5 * 200,
        0,
        "5 for 1",
        "643a.12(f)(3)",
    )
    for bonus in (magic, lucky):
        assert "with a winning hand (643a.1, 643a.11(f)(3)(v)(A))" in (bonus.note or "")
    # The player receives the hand's 50 for 1, the Magic Card's 20 for 1 and the Lucky Bonus's 5 for 1.
    assert sum(x.paid + x.returned for x in (hand, magic, lucky)) == (50 + 20 + 5) * 200
    assert not rows(out, 2, "magic_card_bonus") and not rows(out, 2, "lucky_bonus")
    # The wagers of each seat come in the chapter's order: the hand bonus, then Magic Card, then Lucky Bonus.
    assert [x.wager for x in out if x.seat == 3][-3:] == ["five_card_hand_bonus", "magic_card_bonus", "lucky_bonus"]


@pytest.mark.parametrize(
    ("magic_card", "lucky_seat", "drawn"),
    [("9d", 7, "Magic Card 9d"), ("2s", 3, "seat 3 is the Lucky Bonus seat"), ("9d", 3, "Magic Card 9d")],
)
def test_643a_11f3vA_a_losing_hand_is_paid_no_magic_card_or_lucky_bonus(
    magic_card: str, lucky_seat: int, drawn: str
) -> None:
    """643a.1 defines each as "an additional payout" and 643a.11(f)(3)(v)(A) verifies the winning hand first: the same
    draws that pay a flush pay nothing on a straight (643a.7(i): flush or better)."""
    r = rules(magic_card_bonus=True, lucky_bonus=True)
    rec = record("6s 5c", seat(3, "9d 8d 7h", five_card_hand_bonus=200), magic_card=magic_card, lucky_seat=lucky_seat)
    out = settle_round(r, rec)
    assert not rows(out, 3, "magic_card_bonus") and not rows(out, 3, "lucky_bonus")
    hand = one(out, 3, "five_card_hand_bonus")
    assert (hand.outcome, hand.hand, hand.paid, hand.returned, hand.collected) == ("lose", "straight", 0, 0, 200)
    assert drawn in (hand.note or "") and "(643a.1, 643a.11(f)(3)(v)(A))" in (hand.note or "")


def test_643a_1_magic_card_among_the_community_cards_pays_every_winning_hand_bonus_wager() -> None:
    rec = record(
        "2c 5c",
        seat(3, "9c Kc 4c", five_card_hand_bonus=200),  # a flush in clubs: paid
        seat(2, "7c 8c Jh", five_card_hand_bonus=100),  # four clubs: no flush, no Magic Card
        seat(1, "Th Jd Qs", five_card_hand_bonus=100),
        magic_card="5c",
        lucky_seat=7,
    )
    out = settle_round(rules(magic_card_bonus=True, lucky_bonus=True), rec)
    assert [(x.seat, x.paid) for x in out if x.wager == "magic_card_bonus"] == [(3, 4_000)]
    assert all("Magic Card 5c" in (one(out, n, "five_card_hand_bonus").note or "") for n in (2, 1))
    assert not [x for x in out if x.wager == "lucky_bonus"]


# -- withdrawals (643a.11(b), (d)) ---------------------------------------------------------------


@pytest.mark.parametrize(("w1", "w2"), [(True, False), (False, True), (True, True)])
def test_643a_11b_d_withdrawn_bets_are_returned_and_bet_3_rides(w1: bool, w2: bool) -> None:
    out = settle_round(rules(), record("5s 9c", seat(6, "Tc Td 2h", bet=1000, w1=w1, w2=w2)))
    b1, b2, b3 = (one(out, 6, w) for w in ("bet_1", "bet_2", "bet_3"))
    for bet, gone, rule in ((b1, w1, "643a.11(b)(2)"), (b2, w2, "643a.11(d)(2)")):
        if gone:
            assert (bet.outcome, bet.paid, bet.returned, bet.collected, bet.rule) == ("withdrawn", 0, 1000, 0, rule)
        else:
            assert (bet.outcome, bet.paid) == ("win", 1000)
    assert (b3.outcome, b3.paid, b3.returned) == ("win", 1000, 1000)


def test_643a_11b_withdrawals_lose_only_the_bets_that_ride() -> None:
    out = settle_round(rules(), record("5s 8c", seat(6, "4c 7d 2h", bet=1000, w1=True)))
    assert [(x.wager, x.outcome, x.collected) for x in out] == [
        ("bet_1", "withdrawn", 0),
        ("bet_2", "lose", 1000),
        ("bet_3", "lose", 1000),
    ]


# -- 643a.12(g) payout limit ------------------------------------------------------------------------


def test_643a_12g_limit_caps_only_the_let_it_ride_wagers() -> None:
    r = rules(payout_limit_cents=5_000_000, magic_card_bonus=True)
    rec = record(
        "Js Ts",
        seat(
            5,
            "As Ks Qs",
            bet=10_000,
            five_card_bonus=100,
            three_card_bonus=10_000,
            three_card_progressive=500,
            five_card_progressive=500,
            five_card_hand_bonus=1_000,
        ),
        magic_card="As",
    )
    out = settle_round(r, rec)
    bets = [one(out, 5, w) for w in ("bet_1", "bet_2", "bet_3")]
    assert sum(b.paid for b in bets) == 5_000_000  # not 3 x $100 x 1,000 = $300,000
    assert [b.paid for b in bets] == [1_666_667, 1_666_667, 1_666_666]  # odd cents to Bet 1 first
    assert all(b.returned == 10_000 and "643a.12(g)" in (b.note or "") for b in bets)
    # The optional wagers are paid in full (643a.12(g) does not apply to them).
    assert one(out, 5, "five_card_bonus").paid == 1_999_900  # $20,000 for the $1 wager
    assert one(out, 5, "three_card_bonus").paid == 10_000 * 40  # mini-royal under A is a straight flush, 40 to 1
    assert one(out, 5, "three_card_progressive").paid + 500 == 123_456
    assert one(out, 5, "five_card_progressive").paid + 500 == 1_234_567
    assert one(out, 5, "five_card_hand_bonus").paid + 1_000 == 1_234_567
    assert one(out, 5, "magic_card_bonus").paid == 20_000


def test_643a_12g_limit_with_a_withdrawn_bet_and_below_the_limit() -> None:
    r = rules(payout_limit_cents=5_000_000)
    out = settle_round(r, record("Js Ts", seat(5, "As Ks Qs", bet=10_000, w2=True), seat(3, "9h 8h 7h")))
    assert [x.paid for x in out if x.seat == 5] == [2_500_000, 0, 2_500_000]
    assert [x.paid for x in out if x.seat == 3] == [2_500] * 3  # jack-high straight 5 to 1: below the limit, untouched


def test_643a_12g_least_limit() -> None:
    assert minimum_payout_limit("A", 500) == 5_000_000  # 3 x $5 x 1,000 = $15,000 < $50,000
    assert minimum_payout_limit("A", 2_500) == 7_500_000  # 3 x $25 x 1,000 = $75,000
    assert minimum_payout_limit("B", 2_500) == 5_000_000  # 3 x $25 x 500 = $37,500
    with pytest.raises(ValidationError, match=r"payout_limit_cents .* below 7500000"):
        rules(bet_min_cents=2_500, payout_limit_cents=5_000_000)


def test_apportion_is_exact() -> None:
    assert apportion(100, [1, 1, 1]) == [34, 33, 33]
    assert apportion(5_000_000, [3, 1]) == [3_750_000, 1_250_000]
    assert sum(apportion(7, [5, 5, 5])) == 7


# -- progressives: order, drops, reset (643a.12(d)(4), (e)(4)) ----------------------------------------


def test_643a_12e4_two_straight_flushes_pay_in_order_from_the_meter_at_each_turn() -> None:
    rec = record(
        "5h 6h",
        seat(2, "2h 3h 4h", five_card_progressive=100, five_card_hand_bonus=100),
        seat(6, "7h 8h 9h", five_card_progressive=500, five_card_hand_bonus=100),
    )
    s = settle(rules(), rec)
    # Seat 6 is paid first (counterclockwise from the dealer's right): 10% of $12,345.67, then seat 2 10% of the rest.
    for wager in ("five_card_progressive", "five_card_hand_bonus"):
        first, second = one(s.settled, 6, wager), one(s.settled, 2, wager)
        assert first.paid + first.returned == 123_456
        assert second.paid + second.returned == 111_111  # 10% of 1,111,111
        assert s.meters[wager] == 1_234_567 - 123_456 - 111_111
    assert [x.seat for x in s.settled] == sorted((x.seat for x in s.settled), reverse=True)


def test_643a_12e4_royal_then_straight_flush_pays_the_reset_meter() -> None:
    rec = record(
        "Th Jh", seat(7, "Ah Kh Qh", five_card_progressive=100), seat(3, "7h 8h 9h", five_card_progressive=100)
    )
    s = settle(rules(five_card_progressive_reset_cents=1_500_000), rec)
    assert one(s.settled, 7, "five_card_progressive").paid == 1_234_567 - 100
    assert one(s.settled, 3, "five_card_progressive").paid == 150_000 - 100  # 10% of the reset amount
    assert s.meters["five_card_progressive"] == 1_350_000
    assert s.meters["three_card_progressive"] == METERS["three_card_progressive"]  # untouched levels stay


def test_643a_12d3_100_percent_resets_to_the_reseed() -> None:
    s = settle(
        rules(three_card_progressive_reset_cents=250_000),
        record("2c 3d", seat(4, "As Ks Qs", three_card_progressive=500)),
    )
    x = one(s.settled, 4, "three_card_progressive")
    assert (x.paid, x.returned) == (123_456 - 500, 500)
    assert s.meters["three_card_progressive"] == 250_000


# -- envy (643a.11(f)(3)(iii)(E), (iv)(E), 643a.7(k)) ---------------------------------------------------


def test_envy_multiple_hands_never_own_hand_nor_own_other_box() -> None:
    rec = record(
        "Th Jh",
        seat(7, "Ah Kh Qh", player="ann", five_card_progressive=500, three_card_progressive=100),  # royal
        seat(6, "7h 8h 9h", player="ann", five_card_progressive=100),  # straight flush
        seat(5, "2c 2d 5s", player="cat", five_card_progressive=100, three_card_progressive=500),
        seat(4, "As Ks Qs", five_card_progressive=500, three_card_progressive=100),
    )  # spades mini-royal
    out = settle_round(rules(), rec)
    envy = {(x.seat, x.wager, x.note, x.paid) for x in out if x.wager.endswith("envy_bonus")}
    assert envy == {
        # ann (boxes 7 and 6): only seat 4's mini-royal, never her own royal or straight flush
        (7, "three_card_envy_bonus", "envy of seat 4", 10_000),
        (5, "three_card_envy_bonus", "envy of seat 7", 12_500),
        (5, "three_card_envy_bonus", "envy of seat 4", 50_000),
        (5, "five_card_envy_bonus", "envy of seat 7", 100_000),
        (5, "five_card_envy_bonus", "envy of seat 6", 30_000),
        (4, "three_card_envy_bonus", "envy of seat 7", 2_500),  # not for its own spades
        (4, "five_card_envy_bonus", "envy of seat 7", 500_000),
        (4, "five_card_envy_bonus", "envy of seat 6", 150_000),
    }


def test_envy_boxes_without_player_names_are_separate_players() -> None:
    rec = record(
        "Th Jh", seat(7, "Ah Kh Qh", five_card_progressive=100), seat(6, "7h 8h 9h", five_card_progressive=100)
    )
    out = settle_round(rules(), rec)
    assert [(x.seat, x.hand, x.paid) for x in out if x.wager == "five_card_envy_bonus"] == [
        (7, "straight_flush", 30_000),
        (6, "royal_flush", 100_000),
    ]


def test_settlement_order_within_a_seat_follows_643a_11f3() -> None:
    out = settle_round(
        rules(),
        record(
            "Th Jh",
            seat(
                2,
                "Ah Kh Qh",
                five_card_bonus=100,
                three_card_bonus=100,
                three_card_progressive=100,
                five_card_progressive=100,
                five_card_hand_bonus=100,
            ),
        ),
    )
    assert [x.wager for x in out] == [
        "bet_1",
        "bet_2",
        "bet_3",
        "five_card_bonus",
        "three_card_bonus",
        "three_card_progressive",
        "five_card_progressive",
        "five_card_hand_bonus",
    ]


# -- validation ---------------------------------------------------------------------------------------------


def test_duplicate_card_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"duplicate card.*As"):
        record("As Kd", seat(1, "As 2c 3c"))
    with pytest.raises(ValidationError, match=r"duplicate card.*9h"):
        record("2d 3d", seat(1, "9h 2c 3c"), seat(2, "9h 4c 5c"))
    with pytest.raises(ValidationError, match=r"duplicate card.*2d"):
        record("2d 3d", seat(1, "9h 2c 3c"), burned_card="2d")


@pytest.mark.parametrize(
    ("community", "cards", "field"),
    [
        ("2d 3d", "9h 2c", "seats.0.cards"),
        ("2d 3d", "9h 2c 3c 4c", "seats.0.cards"),
        ("2d", "9h 2c 3c", "community"),
        ("2d 3d 4d", "9h 2c 3c", "community"),
    ],
)
def test_wrong_card_count_is_refused(community: str, cards: str, field: str) -> None:
    with pytest.raises(ValidationError, match=rf"(?s){field}.*643a.8\(d\)"):
        record(community, seat(1, cards))


def test_unequal_or_missing_bets_are_refused() -> None:
    bad = seat(1, "9h 2c 3c")
    bad["wagers"]["bet_2"] = 1000
    with pytest.raises(ValidationError, match=r"(?s)seats.0.wagers.*643a.7\(d\) requires three equal"):
        record("2d 3d", bad)
    del bad["wagers"]["bet_2"]
    with pytest.raises(ValidationError, match=r"missing \['bet_2'\]"):
        record("2d 3d", bad)
    with pytest.raises(ValidationError, match="unknown wager"):
        record("2d 3d", seat(1, "9h 2c 3c", ante=500))


def test_wager_not_offered_is_refused() -> None:
    r = rules(five_card_bonus=False, five_card_bonus_paytable=None)
    with pytest.raises(SettlementError, match=r"seats\[0\] \(seat 1\)\.wagers\.five_card_bonus: the rules do not"):
        settle_round(r, record("2d 3d", seat(1, "9h 2c 3c", five_card_bonus=100)))


@pytest.mark.parametrize(
    ("wager", "fix"), [("five_card_bonus", "A-G"), ("three_card_bonus", "A-F"), ("three_card_progressive", "A or B")]
)
def test_offered_wager_without_its_paytable_is_refused(wager: str, fix: str) -> None:
    with pytest.raises(ValidationError, match=rf"{wager}_paytable is missing but {wager} is offered: set .*{fix}"):
        rules(**{f"{wager}_paytable": None})
    with pytest.raises(ValidationError, match=rf"{wager}_paytable is set but {wager} is not offered"):
        rules(**{wager: False})


@pytest.mark.parametrize(
    ("field", "least"),
    [
        ("three_card_progressive_initial_cents", 100_000),
        ("three_card_progressive_reset_cents", 100_000),
        ("five_card_progressive_initial_cents", 1_000_000),
        ("five_card_progressive_reset_cents", 1_000_000),
        ("five_card_hand_bonus_initial_cents", 1_000_000),
        ("five_card_hand_bonus_reset_cents", 1_000_000),
    ],
)
def test_643a_12_meter_minimums(field: str, least: int) -> None:
    rules(**{field: least})
    with pytest.raises(ValidationError, match=rf"{field} is {least - 1} but 643a.12\(.\)\(.\) sets a minimum"):
        rules(**{field: least - 1})
    with pytest.raises(ValidationError, match=rf"{field} is missing"):
        rules(**{field: None})


def test_rules_refuse_other_mistakes() -> None:
    with pytest.raises(ValidationError, match="chapter"):
        LetItRideRules.model_validate({k: v for k, v in ALL.items() if k != "chapter"})
    with pytest.raises(ValidationError, match="seats"):
        rules(seats=8)  # 643a.2(a)
    with pytest.raises(ValidationError, match="let_it_ride_paytable"):
        LetItRideRules.model_validate({k: v for k, v in ALL.items() if k != "let_it_ride_paytable"})
    with pytest.raises(ValidationError, match="three_card_progressive_wagers_cents"):
        rules(three_card_progressive_wagers_cents=[200])
    with pytest.raises(ValidationError, match="magic_card_bonus and lucky_bonus"):
        rules(
            five_card_hand_bonus=False,
            five_card_hand_bonus_initial_cents=None,
            five_card_hand_bonus_reset_cents=None,
            five_card_hand_bonus_rate_percent=None,
            magic_card_bonus=True,
        )


@pytest.mark.parametrize(
    ("kw", "seats", "message"),
    [
        ({}, [seat(1, "9h 2c 3c", five_card_bonus=500)], "five_card_bonus \\(500\\) is not the accepted"),
        ({}, [seat(1, "9h 2c 3c", three_card_progressive=200)], "three_card_progressive \\(200\\) is not an accepted"),
        ({}, [seat(1, "9h 2c 3c", bet=200)], "outside the table limits"),
        ({"meters": {}}, [seat(1, "9h 2c 3c", five_card_progressive=100)], "meters.five_card_progressive is missing"),
        (
            {},
            [seat(1, "9h 2c 3c", player="ann"), seat(2, "4h 4c 5c", player="ann"), seat(3, "6h 6c 7c", player="ann")],
            "643a.7\\(k\\) allows at most 2",
        ),
        ({}, [seat(1, "9h 2c 3c", player="ann"), seat(3, "6h 6c 7c", player="ann")], "at most 2 adjacent"),
        ({"lucky_seat": 1}, [seat(1, "9h 2c 3c", five_card_hand_bonus=100)], "magic_card is missing"),
        ({"magic_card": "2s"}, [seat(1, "9h 2c 3c", five_card_hand_bonus=100)], "lucky_seat is missing"),
    ],
)
def test_record_refused_under_the_rules(kw: dict[str, Any], seats: list[dict[str, Any]], message: str) -> None:
    r = rules(magic_card_bonus=True, lucky_bonus=True)
    with pytest.raises(SettlementError, match=message):
        settle_round(r, record("2d 3d", *seats, **kw))


def test_a_meter_below_the_wager_is_refused() -> None:
    rec = record(
        "6h 5h", seat(1, "9h 8h 7h", five_card_progressive=500), meters={**METERS, "five_card_progressive": 4_000}
    )
    with pytest.raises(SettlementError, match=r"meters.five_card_progressive \(4000\) pays 10% of meter = 400"):
        settle_round(rules(), rec)


def test_record_refused_seat_and_draws() -> None:
    with pytest.raises(SettlementError, match=r"seats\[0\] \(seat 7\)\.seat: the table has 5"):
        settle_round(rules(seats=5), record("2d 3d", seat(7, "9h 2c 3c")))
    with pytest.raises(SettlementError, match="magic_card is recorded but the rules do not pay"):
        settle_round(rules(), record("2d 3d", seat(1, "9h 2c 3c"), magic_card="As"))
    with pytest.raises(SettlementError, match="burned_card: only an automated dealing shoe"):
        settle_round(rules(dealing_method="hand"), record("2d 3d", seat(1, "9h 2c 3c"), burned_card="As"))
    with pytest.raises(ValidationError, match="seat number\\(s\\) \\[1\\] appear more than once"):
        record("2d 3d", seat(1, "9h 2c 3c"), seat(1, "4h 4c 5c"))
    with pytest.raises(ValidationError, match="unknown meter level"):
        record("2d 3d", seat(1, "9h 2c 3c"), meters={"mega": 1})


def test_every_row_books_one_of_returned_or_collected() -> None:
    for path in sorted((ROOT / "docs" / "examples").glob("let-it-ride--*.settle.json")):
        for x in settle_round(_config_rules(), LetItRideRound.model_validate_json(path.read_text())):
            assert x.paid >= 0 and sorted((x.returned, x.collected)) == [0, x.amount]


# -- the example config and records ----------------------------------------------------------------------


def _config_rules() -> LetItRideRules:
    data = tomllib.loads((ROOT / "configs" / "let-it-ride.toml").read_text())
    assert data["table_id"] == "lir-table-01"
    return LetItRideRules.model_validate(data["game"])


def _example(case: str) -> LetItRideSettlement:
    text = (ROOT / "docs" / "examples" / f"let-it-ride--{case}.settle.json").read_text()
    return settle(_config_rules(), LetItRideRound.model_validate(json.loads(text)))


def test_example_rides() -> None:
    """A royal flush's Let It Ride Wagers are capped at the $50,000 payout limit on a single hand (643a.12(g)); the Five
    Card Bonus is not."""
    s = _example("rides").settled
    assert [x.paid for x in rows(s, 6, "bet_1") + rows(s, 6, "bet_2") + rows(s, 6, "bet_3")] == [
        1_666_667,
        1_666_667,
        1_666_666,
    ]  # royal flush capped at $50,000 (643a.12(g))
    assert one(s, 6, "five_card_bonus").paid == 1_999_900  # paytable A royal flush $20,000 for $1, not capped
    assert [x.outcome for x in s if x.seat == 4] == ["lose", "lose", "lose", "win"]  # pair of nines; 3CB pair
    assert [x.paid for x in s if x.seat == 2] == [500, 500, 500]  # pair of queens 1 to 1


def test_example_withdrawals() -> None:
    s = _example("withdrawals").settled
    assert [(x.seat, x.wager, x.outcome, x.paid, x.returned, x.collected) for x in s] == [
        (5, "bet_1", "withdrawn", 0, 1000, 0),
        (5, "bet_2", "withdrawn", 0, 1000, 0),
        (5, "bet_3", "lose", 0, 0, 1000),
        (3, "bet_1", "withdrawn", 0, 1000, 0),
        (3, "bet_2", "win", 2000, 1000, 0),
        (3, "bet_3", "win", 2000, 1000, 0),
        (1, "bet_1", "win", 8000, 1000, 0),
        (1, "bet_2", "withdrawn", 0, 1000, 0),
        (1, "bet_3", "win", 8000, 1000, 0),
    ]


def test_example_progressive_envy() -> None:
    """The Magic Card held with a losing hand pays nothing (643a.11(f)(3)(v)(A))."""
    result = _example("progressive-envy")
    s = result.settled
    assert one(s, 7, "five_card_progressive").paid + 500 == 2_500_000  # 100% of meter at seat 7's turn
    assert one(s, 6, "five_card_progressive").paid + 100 == 100_000  # 10% of the $10,000 reset amount
    assert one(s, 7, "five_card_hand_bonus").paid + 100 == 1_800_000
    assert one(s, 6, "five_card_hand_bonus").paid + 500 == 100_000
    assert one(s, 4, "three_card_progressive").paid + 500 == 150_000
    assert one(s, 6, "lucky_bonus").paid == 2_500  # seat 6's straight flush wins: the Lucky Bonus is paid with it
    # Seat 5 holds the Magic Card 2d with a pair of twos: a losing hand, no Magic Card (643a.11(f)(3)(v)(A)).
    assert not rows(s, 5, "magic_card_bonus") and "Magic Card 2d" in (one(s, 5, "five_card_hand_bonus").note or "")
    assert [x.paid for x in rows(s, 5, "five_card_envy_bonus")] == [100_000, 30_000]
    assert [x.paid for x in rows(s, 4, "five_card_envy_bonus")] == [500_000, 150_000]
    assert [x.paid for x in rows(s, 5, "three_card_envy_bonus")] == [2_500, 10_000]
    assert [x.paid for x in rows(s, 4, "three_card_envy_bonus")] == [12_500]
    assert not [x for x in s if x.seat in (6, 7) and x.wager.endswith("envy_bonus")]
    assert result.meters == {
        "three_card_progressive": 100_000,
        "five_card_progressive": 900_000,
        "five_card_hand_bonus": 900_000,
    }


def test_a_linked_meter_at_the_turn_pays_the_award() -> None:
    """643a.12(d)(4): the meter at the player's turn. A linked table's record carries the link's meter at each turn
    (`meters_at_turn`, the claim's meter_before), past the display the table last heard: the award is taken from it,
    booked like "N for 1" (paid + returned), and the note says the link held it (link19)."""
    rec = record(
        "Jd 4c",
        seat(2, "Qs Ks As", three_card_progressive=100),
        meters_at_turn={"2:three_card_progressive": 123_777},
    )
    s = settle(rules(three_card_progressive_paytable="A"), rec)
    x = one(s.settled, 2, "three_card_progressive")
    assert (x.outcome, x.paid, x.returned, x.odds) == ("win", 123_677, 100, "100% of meter")
    assert x.note is not None and "of meter $1,237.77 at the link" in x.note, x.note


def test_a_linked_meter_after_the_award_is_the_links() -> None:
    """A linked table's record carries the link's meter after each award (`meters_after_turn`, the claim's
    meter_after): the link reseeded it from its own reserve, past the reset amount this table's figures know, and
    the meter and the note say the link's figure, not the estimate. Without it, the estimate as before."""
    turn = {"2:three_card_progressive": 123_777}
    linked = record("Jd 4c", seat(2, "Qs Ks As", three_card_progressive=100), meters_at_turn=turn)
    estimated = settle(rules(three_card_progressive_paytable="A"), linked)
    reset = estimated.meters["three_card_progressive"]
    rec = record(
        "Jd 4c",
        seat(2, "Qs Ks As", three_card_progressive=100),
        meters_at_turn=turn,
        meters_after_turn={"2:three_card_progressive": reset + 4_321},
    )
    s = settle(rules(three_card_progressive_paytable="A"), rec)
    assert s.meters["three_card_progressive"] == reset + 4_321
    x = one(s.settled, 2, "three_card_progressive")
    assert x.paid + x.returned == 123_777  # the award is the link's meter at the turn, as before
    assert x.note is not None and x.note.endswith(f"meter now {fmt(reset + 4_321)}"), x.note
