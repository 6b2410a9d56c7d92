"""Every paytable row of 655a.12(a), (d) and (f), with the odds copied from the regulation's text.

The expected odds here are typed in from ../shared/regulations/655a-mississippi-stud.txt, not read from
controller.games.mississippi_stud, so a wrong entry in the module fails a test.
"""

from __future__ import annotations

from typing import Literal

import pytest

from controller.games.mississippi_stud import hands as ms
from controller.games.mississippi_stud.paytables import THREE_CARD_BONUS

# 655a.12(a): (player cards, community cards, hand, rule, winnings per dollar or None for push/lose)
MAIN = [
    ("As Ks", "Qs Js Ts", "royal_flush", "655a.11(h)(3)", 500),
    ("9h 8h", "7h 6h 5h", "straight_flush", "655a.11(h)(3)", 100),
    ("Ah 2h", "3h 4h 5h", "straight_flush", "655a.11(h)(3)", 100),  # the ace low only in A-2-3-4-5 (655a.6(a))
    ("9c 9d", "9h 9s 2c", "four_of_a_kind", "655a.11(h)(3)", 40),
    ("9c 9d", "9h 2s 2c", "full_house", "655a.11(h)(3)", 10),
    ("Ah 9h", "7h 4h 2h", "flush", "655a.11(h)(3)", 6),
    ("9c 8d", "7h 6s 5c", "straight", "655a.11(h)(3)", 4),
    ("Ac 2d", "3h 4s 5c", "straight", "655a.11(h)(3)", 4),
    ("9c 9d", "9h 2s 4c", "three_of_a_kind", "655a.11(h)(3)", 3),
    ("9c 9d", "2h 2s 4c", "two_pair", "655a.11(h)(3)", 2),
    ("Jc Jd", "2h 5s 9c", "pair_of_jacks_or_better", "655a.11(h)(3)", 1),
    ("Ac 3d", "Ah 5s 9c", "pair_of_jacks_or_better", "655a.11(h)(3)", 1),
    ("Tc Td", "2h 5s 9c", "pair", "655a.11(h)(2)", None),
    ("6c 2d", "6h 5s 9c", "pair", "655a.11(h)(2)", None),
    ("5c 5d", "2h 8s 9c", "pair", "655a.11(h)(1)", None),
    ("Ac Kd", "2h 5s 9c", "high_card", "655a.11(h)(1)", None),
    ("Kc Qd", "Ah 2s 3c", "high_card", "655a.11(h)(1)", None),  # K-A-2 is no straight (655a.6(a))
]


@pytest.mark.parametrize(("player", "community", "hand", "rule", "per_dollar"), MAIN)
def test_655a_12a(player: str, community: str, hand: str, rule: str, per_dollar: int | None) -> None:
    """655a.12(a) on the five-card hands of 655a.6(b)."""
    wagers = {"ante": 500, "street_3": 1500, "street_4": 500, "street_5": 1000}
    s = ms.settle_hand(player.split(), community.split(), wagers, ms.payout_limit(500))
    assert (s.hand, s.rule) == (hand, rule)
    for r in s.results:
        if per_dollar is not None:
            assert (r.outcome, r.paid, r.returned, r.collected) == ("win", per_dollar * r.amount, r.amount, 0)
        elif rule == "655a.11(h)(2)":
            assert (r.outcome, r.paid, r.returned, r.collected) == ("push", 0, r.amount, 0)
        else:
            assert (r.outcome, r.paid, r.returned, r.collected) == ("lose", 0, 0, r.amount)


# 655a.12(d), paytables A-D, per row: hand -> odds "to 1" per letter.
THREE = {
    "Ah Kh Qh": ("mini_royal", {"A": 40, "B": 40, "C": 50, "D": 50}),
    "9h 8h 7h": ("straight_flush", {"A": 40, "B": 40, "C": 40, "D": 40}),
    "Ah 2h 3h": ("straight_flush", {"A": 40, "B": 40, "C": 40, "D": 40}),
    "9c 9d 9h": ("three_of_a_kind", {"A": 30, "B": 30, "C": 30, "D": 30}),
    "9c 8d 7h": ("straight", {"A": 6, "B": 5, "C": 5, "D": 6}),
    "Ac 2d 3h": ("straight", {"A": 6, "B": 5, "C": 5, "D": 6}),
    "Qc Kd Ah": ("straight", {"A": 6, "B": 5, "C": 5, "D": 6}),
    "2h 7h 9h": ("flush", {"A": 4, "B": 4, "C": 4, "D": 3}),
    "9c 9d 2h": ("pair", {"A": 1, "B": 1, "C": 1, "D": 1}),
    "2c 7d 9h": ("high_card", {"A": 0, "B": 0, "C": 0, "D": 0}),
    "Kc Ad 2h": ("high_card", {"A": 0, "B": 0, "C": 0, "D": 0}),
}


@pytest.mark.parametrize("letter", "ABCD")
@pytest.mark.parametrize("community", sorted(THREE))
def test_655a_12d(community: str, letter: str) -> None:
    """655a.12(d) on the Three Card Bonus hands of 655a.6(c)."""
    hand, odds = THREE[community]
    b = ms.settle_three_card_bonus(community.split(), 300, THREE_CARD_BONUS[letter])
    assert (b.hand, b.paytable) == (hand, f"655a.12(d) paytable {letter}")
    if odds[letter]:
        assert (b.rule, b.result.paid, b.result.returned) == ("655a.11(i)(2)(i)", 300 * odds[letter], 300)
    else:
        assert (b.rule, b.result.paid, b.result.collected) == ("655a.11(i)(2)(ii)", 0, 300)


# 655a.12(f), paytables A-E: (player cards, Six Card Bonus cards) -> hand, odds per letter.
SIX = {
    ("9d Td", "Jd Qd Kd Ad"): {
        "A": ("royal_flush", 1000),
        "B": ("royal_flush", 1000),
        "C": ("royal_flush", 1000),
        "D": ("royal_flush", 1000),
        "E": ("six_card_royal_flush", 200_000),
    },
    ("9h Th", "Jh Qh Kh Ah"): {
        "A": ("royal_flush", 1000),
        "B": ("royal_flush", 1000),
        "C": ("royal_flush", 1000),
        "D": ("royal_flush", 1000),
        "E": ("six_card_royal_flush", 20_000),
    },
    ("As Ks", "Qs Js Ts 2c"): {k: ("royal_flush", 1000) for k in "ABCDE"},
    ("9h 8h", "7h 6h 5h 2c"): {k: ("straight_flush", 200) for k in "ABCDE"},
    ("9c 9d", "9h 9s 2c 3d"): {
        "A": ("four_of_a_kind", 50),
        "B": ("four_of_a_kind", 50),
        "C": ("four_of_a_kind", 100),
        "D": ("four_of_a_kind", 100),
        "E": ("four_of_a_kind", 50),
    },
    ("9c 9d", "9h 2s 2c 4d"): {
        "A": ("full_house", 25),
        "B": ("full_house", 25),
        "C": ("full_house", 20),
        "D": ("full_house", 20),
        "E": ("full_house", 20),
    },
    ("Ah 9h", "7h 4h 2h Kc"): {
        "A": ("flush", 20),
        "B": ("flush", 15),
        "C": ("flush", 15),
        "D": ("flush", 15),
        "E": ("flush", 15),
    },
    ("9c 8d", "7h 6s 5c Kd"): {
        "A": ("straight", 10),
        "B": ("straight", 10),
        "C": ("straight", 9),
        "D": ("straight", 10),
        "E": ("straight", 10),
    },
    ("9c 9d", "9h 2s 4c Kd"): {
        "A": ("three_of_a_kind", 5),
        "B": ("three_of_a_kind", 5),
        "C": ("three_of_a_kind", 8),
        "D": ("three_of_a_kind", 7),
        "E": ("three_of_a_kind", 5),
    },
    ("9c 9d", "2h 2s 4c Kd"): {k: ("two_pair", 0) for k in "ABCDE"},
}


@pytest.mark.parametrize("letter", "ABCDE")
@pytest.mark.parametrize("cards", sorted(SIX), ids=lambda c: " ".join(c))
def test_655a_12f(cards: tuple[str, str], letter: str) -> None:
    """655a.12(f) on the Six Card Bonus hands of 655a.6(d)."""
    hand, odds = SIX[cards][letter]
    b = ms.settle_six_card_bonus(cards[0].split(), cards[1].split(), 200, letter)
    assert (b.hand, b.paytable) == (hand, f"655a.12(f) paytable {letter}")
    if odds:
        assert (b.rule, b.result.paid, b.result.returned) == ("655a.11(i)(4)(i)", 200 * odds, 200)
    else:
        assert (b.rule, b.result.paid, b.result.collected) == ("655a.11(i)(4)(ii)", 0, 200)


def test_655a_12b_limit_is_50000_or_the_most_a_minimum_bettor_can_win() -> None:
    assert ms.payout_limit(500) == 5_000_000  # $5 minimum: 10 x $5 x 500 = $25,000 < $50,000
    assert ms.payout_limit(2_500) == 12_500_000  # $25 minimum: 10 x $25 x 500 = $125,000


def test_duplicate_cards_are_refused() -> None:
    from controller.core.cards import CardError

    with pytest.raises(CardError, match="duplicate card"):
        ms.settle_hand(["As", "As"], ["2c", "3d", "4h"], {"ante": 500}, 5_000_000)


# 655a.12(c)(1), paytables A-D, with (c)(3) meters and (c)(5) envy; typed from the regulation text.
# Per hand: {letter: ("for", N) | ("meter", level, percent)}.
Payout = tuple[Literal["lose"]] | tuple[Literal["for"], int] | tuple[Literal["meter"], str, int]
PROGRESSIVE_HANDS: dict[tuple[str, str, str], dict[str, Payout]] = {
    ("As", "Ks", "Qs Js Ts"): {
        "A": ("meter", "progressive", 100),
        "B": ("meter", "mega", 100),
        "C": ("meter", "mega", 100),
        "D": ("meter", "mega", 100),
    },
    ("9h", "8h", "7h 6h 5h"): {
        "A": ("meter", "progressive", 10),
        "B": ("meter", "major", 100),
        "C": ("meter", "major", 100),
        "D": ("meter", "major", 100),
    },
    ("9c", "9d", "9h 9s 2c"): {
        "A": ("for", 300),
        "B": ("for", 300),
        "C": ("meter", "minor", 100),
        "D": ("meter", "minor", 100),
    },
    ("9c", "9d", "9h 2s 2c"): {k: ("for", 50) for k in "ABCD"},
    ("Ah", "9h", "7h 4h 2h"): {k: ("for", 40) for k in "ABCD"},
    ("9c", "8d", "7h 6s 5c"): {k: ("for", 30) for k in "ABCD"},
    ("9c", "9d", "9h 2s 4c"): {"A": ("for", 9), "B": ("for", 9), "C": ("for", 10), "D": ("for", 9)},
    ("9c", "9d", "2h 2s 4c"): {k: ("lose",) for k in "ABCD"},
}
METERS = {"progressive": 1_234_567, "mega": 2_345_678, "major": 345_678, "minor": 45_678}


@pytest.mark.parametrize("letter", "ABCD")
@pytest.mark.parametrize("hand", sorted(PROGRESSIVE_HANDS), ids=lambda h: " ".join(h))
def test_655a_12c_progressive_every_row(hand: tuple[str, str, str], letter: str) -> None:
    from controller.games.mississippi_stud.record import MississippiStudRound
    from controller.games.mississippi_stud.rules import MississippiStudRules
    from controller.games.mississippi_stud.settle import settle

    rules = MississippiStudRules(chapter="655a", progressive_paytable=letter)
    rec = MississippiStudRound.model_validate(
        {
            "chapter": "655a",
            "community": hand[2].split(),
            "meters": METERS,
            "seats": [
                {
                    "seat": 1,
                    "cards": [hand[0], hand[1]],
                    "wagers": {"ante": 500, "street_3": 500, "street_4": 500, "street_5": 500, "progressive": 100},
                }
            ],
        }
    )
    rows, meters = settle(rules, rec)
    (p,) = [r for r in rows if r.wager == "progressive"]
    expected = PROGRESSIVE_HANDS[hand][letter]
    if expected[0] == "lose":
        assert (p.outcome, p.collected) == ("lose", 100)
    elif expected[0] == "for":
        assert (p.paid + p.returned, p.odds) == (100 * expected[1], f"{expected[1]} for 1")
    else:
        _, level, percent = expected
        assert p.paid + p.returned == METERS[level] * percent // 100
        seed_for_1 = {"progressive": 10_000, "mega": 10_000, "major": 1_000, "minor": 250}[level]
        assert meters[level] == (seed_for_1 * 100 if percent == 100 else METERS[level] - p.paid - p.returned)


# 655a.12(e)(1): Five Card Hand Bonus; (e)(4) reseed $0.
# Per hand: ("for", N) | ("meter", percent) | ("lose",).
Bonus = tuple[Literal["lose"]] | tuple[Literal["for"], int] | tuple[Literal["meter"], int]
FIVE_CARD_HAND_BONUS: dict[tuple[str, str, str], Bonus] = {
    ("As", "Ks", "Qs Js Ts"): ("meter", 100),
    ("9h", "8h", "7h 6h 5h"): ("meter", 10),
    ("9c", "9d", "9h 9s 2c"): ("for", 500),
    ("9c", "9d", "9h 2s 2c"): ("for", 100),
    ("Ah", "9h", "7h 4h 2h"): ("for", 50),
    ("9c", "8d", "7h 6s 5c"): ("lose",),
    ("9c", "9d", "9h 2s 4c"): ("lose",),
}


@pytest.mark.parametrize("hand", sorted(FIVE_CARD_HAND_BONUS), ids=lambda h: " ".join(h))
def test_655a_12e_five_card_hand_bonus_every_row(hand: tuple[str, str, str]) -> None:
    from controller.games.mississippi_stud.record import MississippiStudRound
    from controller.games.mississippi_stud.rules import MississippiStudRules
    from controller.games.mississippi_stud.settle import settle

    rules = MississippiStudRules(chapter="655a", five_card_hand_bonus=True)
    rec = MississippiStudRound.model_validate(
        {
            "chapter": "655a",
            "community": hand[2].split(),
            "meters": {"five_card_hand_bonus": 1_500_001},
            "seats": [
                {
                    "seat": 1,
                    "cards": [hand[0], hand[1]],
                    "wagers": {
                        "ante": 500,
                        "street_3": 500,
                        "street_4": 500,
                        "street_5": 500,
                        "five_card_hand_bonus": 100,
                    },
                }
            ],
        }
    )
    rows, meters = settle(rules, rec)
    (b,) = [r for r in rows if r.wager == "five_card_hand_bonus"]
    kind = FIVE_CARD_HAND_BONUS[hand]
    if kind[0] == "lose":
        assert (b.outcome, b.collected) == ("lose", 100)
    elif kind[0] == "for":
        assert (b.paid + b.returned, b.odds) == (100 * kind[1], f"{kind[1]} for 1")
    else:
        assert b.paid + b.returned == 1_500_001 * kind[1] // 100
        assert meters["five_card_hand_bonus"] == (0 if kind[1] == 100 else 1_500_001 - b.paid - b.returned)


@pytest.mark.parametrize(("wager", "royal", "straight_flush"), [(100, 100_000, 30_000), (500, 500_000, 150_000)])
def test_655a_12c5_envy_schedules(wager: int, royal: int, straight_flush: int) -> None:
    from controller.games.mississippi_stud.record import MississippiStudRound
    from controller.games.mississippi_stud.rules import MississippiStudRules
    from controller.games.mississippi_stud.settle import settle

    rules = MississippiStudRules(
        chapter="655a",
        progressive_paytable="A",
        progressive_wager_cents=wager,
    )
    seats = [
        {"seat": 3, "cards": ["As", "Ks"], "wagers": {"ante": 500, "street_3": 500, "street_4": 500, "street_5": 500}},
        {"seat": 2, "cards": ["9s", "8s"], "wagers": {"ante": 500, "street_3": 500, "street_4": 500, "street_5": 500}},
        {"seat": 1, "cards": ["2c", "3d"], "wagers": {"ante": 500, "progressive": wager}, "folded_on": "street_3"},
    ]
    rec = MississippiStudRound.model_validate({"chapter": "655a", "community": ["Qs", "Js", "Ts"], "seats": seats})
    rows, _ = settle(rules, rec)
    assert sorted(r.paid for r in rows if r.wager == "envy_bonus") == sorted([royal, straight_flush])
