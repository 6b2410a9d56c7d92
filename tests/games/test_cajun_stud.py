"""Chapter 683a: every paytable row of 683a.12, settled through settle_round, plus folds, the 683a.12(f)
payout limit, settlement order and the validation of rules and round records.

The expected odds are typed in from /work/shared/regulations/683a-cajun-stud.txt, not read from
controller.games.cajun_stud*, so a wrong entry in the module fails a test.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from controller.core.cards import CardError
from controller.core.settlement import Settled, SettlementError
from controller.games.cajun_stud.record import CajunStudRound
from controller.games.cajun_stud.rules import CajunStudRules, payout_limit_floor
from controller.games.cajun_stud.settle import settle_round

ALL_OPTIONAL = ("pocket_bonus", "board_bonus", "lo_ball", "all_six_bonus")


def rules(**kw: Any) -> CajunStudRules:
    base: dict[str, Any] = {
        "chapter": "683a",
        "ante_paytable": "A",
        "optional_wagers": ALL_OPTIONAL,
        "pocket_bonus_paytable": "A",
        "board_bonus_paytable": "A",
        "lo_ball_paytable": "A",
        "all_six_bonus_paytable": "A",
    }
    # The paytables are tested at any stake: the optional wagers' own limits are tested apart (wager_limits).
    offered = kw.get("optional_wagers", ALL_OPTIONAL)
    base["wager_limits"] = {w: {"min_cents": 1, "max_cents": 10_000_000} for w in offered}
    return CajunStudRules.model_validate({**base, **kw})


def seat(n: int, cards: str, wagers: dict[str, int], decisions: str = "raise raise raise", **kw: Any) -> dict[str, Any]:
    return {"seat": n, "cards": cards.split(), "wagers": wagers, "decisions": decisions.split(), **kw}


def record(seats: list[dict[str, Any]], community: str, all_six: str = "") -> CajunStudRound:
    return CajunStudRound.model_validate(
        {
            "chapter": "683a",
            "seats": seats,
            "community_cards": community.split(),
            "all_six_bonus_cards": all_six.split(),
        }
    )


def only(results: list[Settled], wager: str) -> Settled:
    [r] = [r for r in results if r.wager == wager]
    return r


def assert_win(r: Settled, amount: int, num: int, den: int, rule: str, table: str) -> None:
    assert (r.outcome, r.amount, r.paid, r.returned, r.collected) == ("win", amount, amount * num // den, amount, 0)
    assert (r.rule, r.odds, r.paytable) == (rule, f"{num:,} to {den}", table)


def assert_push(r: Settled, amount: int, rule: str, table: str) -> None:
    assert (r.outcome, r.paid, r.returned, r.collected, r.rule, r.paytable) == ("push", 0, amount, 0, rule, table)


def assert_lose(r: Settled, amount: int, rule: str) -> None:
    assert (r.outcome, r.paid, r.returned, r.collected, r.rule) == ("lose", 0, 0, amount, rule)


# -- 683a.12(a): Ante and Raise Wagers, paytables A, B, C -------------------------------------------------
# (player, community, hand) -> odds (num, den) per letter, "push", or None for a losing hand.
MAIN: list[tuple[str, str, str, dict[str, tuple[int, int]] | str | None]] = [
    ("As Ks", "Qs Js Ts", "royal_flush", {"A": (500, 1), "B": (500, 1), "C": (500, 1)}),
    ("9h 8h", "7h 6h 5h", "straight_flush", {"A": (100, 1), "B": (100, 1), "C": (100, 1)}),
    ("Ah 2h", "3h 4h 5h", "straight_flush", {"A": (100, 1), "B": (100, 1), "C": (100, 1)}),  # 683a.6(a) wheel
    ("9c 9d", "9h 9s 2c", "four_of_a_kind", {"A": (40, 1), "B": (40, 1), "C": (40, 1)}),
    ("9c 9d", "9h 2s 2c", "full_house", {"A": (10, 1), "B": (11, 1), "C": (11, 1)}),
    ("Ah 9h", "7h 4h 2h", "flush", {"A": (6, 1), "B": (7, 1), "C": (7, 1)}),
    ("9c 8d", "7h 6s 5c", "straight", {"A": (4, 1), "B": (4, 1), "C": (5, 1)}),
    ("Ac 2d", "3h 4s 5c", "straight", {"A": (4, 1), "B": (4, 1), "C": (5, 1)}),
    ("9c 9d", "9h 2s 4c", "three_of_a_kind", {"A": (3, 1), "B": (3, 1), "C": (3, 1)}),
    ("9c 9d", "2h 2s 4c", "two_pair", {"A": (2, 1), "B": (3, 2), "C": (3, 2)}),
    ("Jc Jd", "2h 5s 9c", "pair_of_jacks_or_better", {"A": (1, 1), "B": (1, 1), "C": (1, 1)}),
    ("Ac 3d", "Ah 5s 9c", "pair_of_jacks_or_better", {"A": (1, 1), "B": (1, 1), "C": (1, 1)}),
    ("Tc Td", "2h 5s 9c", "pair_of_6s_to_10s", "push"),
    ("6c 2d", "6h 5s 9c", "pair_of_6s_to_10s", "push"),
    ("5c 5d", "2h 8s 9c", "pair_of_2s_to_5s", None),
    ("Ac Kd", "2h 5s 9c", "high_card", None),
    ("Kc Qd", "Ah 2s 3c", "high_card", None),  # 683a.6(a): K-A-2 is no straight
]
RAISED = {"ante": 500, "raise_1": 1500, "raise_2": 500, "raise_3": 1000}  # 3x, 1x, 2x the Ante


@pytest.mark.parametrize("letter", "ABC")
@pytest.mark.parametrize(("player", "community", "hand", "odds"), MAIN, ids=[m[0] + "|" + m[1] for m in MAIN])
def test_683a_12a(
    letter: str, player: str, community: str, hand: str, odds: dict[str, tuple[int, int]] | str | None
) -> None:
    results = settle_round(rules(ante_paytable=letter), record([seat(1, player, RAISED)], community))
    assert [r.wager for r in results] == ["ante", "raise_1", "raise_2", "raise_3"]
    for r in results:
        assert r.hand == hand
        if isinstance(odds, dict):
            assert_win(r, RAISED[r.wager], *odds[letter], "683a.11(h)(1)", f"683a.12(a) paytable {letter}")
        elif odds == "push":
            assert_push(r, RAISED[r.wager], "683a.11(h)(1)", f"683a.12(a) paytable {letter}")
        else:
            assert_lose(r, RAISED[r.wager], "683a.11(h)(2)")


def test_683a_12a_three_to_two_in_cents() -> None:
    # 3 to 2 on $5 pays $7.50; on an odd cent amount the half cent cannot be paid and is dropped.
    results = settle_round(
        rules(ante_paytable="B"),
        record([seat(1, "9c 9d", {"ante": 501, "raise_1": 501, "raise_2": 1002, "raise_3": 1503})], "2h 2s 4c"),
    )
    assert [r.paid for r in results] == [751, 751, 1503, 2254]


# -- 683a.12(b): Pocket Bonus, paytables A, B, C; settled for a player who folded at once (683a.11(b)) ----
POCKET: dict[str, tuple[str, dict[str, int]]] = {
    "As Ad": ("pair_of_aces", {"A": 30, "B": 25, "C": 30}),
    "Ah Kh": ("suited_ace", {"A": 20, "B": 20, "C": 20}),
    "Qh Ah": ("suited_ace", {"A": 20, "B": 20, "C": 20}),
    "Ah Jh": ("suited_ace", {"A": 20, "B": 20, "C": 20}),
    "As Kd": ("unsuited_ace", {"A": 10, "B": 10, "C": 10}),
    "Ac Qd": ("unsuited_ace", {"A": 10, "B": 10, "C": 10}),
    "Jc Ad": ("unsuited_ace", {"A": 10, "B": 10, "C": 10}),
    "Kc Kd": ("pair", {"A": 5, "B": 5, "C": 4}),
    "2c 2d": ("pair", {"A": 5, "B": 5, "C": 4}),
    "Ah Th": ("high_card", {"A": 0, "B": 0, "C": 0}),
    "Kh Qh": ("high_card", {"A": 0, "B": 0, "C": 0}),
    "7c 2h": ("high_card", {"A": 0, "B": 0, "C": 0}),
}


@pytest.mark.parametrize("letter", "ABC")
@pytest.mark.parametrize("player", sorted(POCKET))
def test_683a_12b(letter: str, player: str) -> None:
    hand, odds = POCKET[player]
    results = settle_round(
        rules(pocket_bonus_paytable=letter),
        record([seat(2, player, {"ante": 500, "pocket_bonus": 300}, "fold")], "3s 8d 9h"),
    )
    assert_lose(only(results, "ante"), 500, "683a.11(b)")
    r = only(results, "pocket_bonus")
    assert (r.hand, r.paytable) == (hand, f"683a.12(b) paytable {letter}")
    if odds[letter]:
        assert_win(r, 300, odds[letter], 1, "683a.11(i)(1)(ii)", f"683a.12(b) paytable {letter}")
    else:
        assert_lose(r, 300, "683a.11(i)(1)(i)")


# -- 683a.12(c): Board Bonus, paytables A-D ----------------------------------------------------------------
BOARD: dict[str, tuple[str, dict[str, int]]] = {
    "Ah Kh Qh": ("mini_royal", {"A": 40, "B": 40, "C": 50, "D": 50}),
    "9h 8h 7h": ("straight_flush", {"A": 40, "B": 40, "C": 40, "D": 40}),
    "Kh Qh Jh": ("straight_flush", {"A": 40, "B": 40, "C": 40, "D": 40}),
    "Ah 2h 3h": ("straight_flush", {"A": 40, "B": 40, "C": 40, "D": 40}),  # read: A-2-3 counts, see docs
    "9c 9d 9h": ("three_of_a_kind", {"A": 30, "B": 30, "C": 30, "D": 30}),
    "9c 8d 7h": ("straight", {"A": 6, "B": 5, "C": 5, "D": 6}),
    "Ac 2d 3h": ("straight", {"A": 6, "B": 5, "C": 5, "D": 6}),
    "Qc Kd Ah": ("straight", {"A": 6, "B": 5, "C": 5, "D": 6}),
    "2h 7h 9h": ("flush", {"A": 4, "B": 4, "C": 4, "D": 3}),
    "9c 9d 2h": ("pair", {"A": 1, "B": 1, "C": 1, "D": 1}),
    "2c 7d 9h": ("high_card", {"A": 0, "B": 0, "C": 0, "D": 0}),
    "Kc Ad 2h": ("high_card", {"A": 0, "B": 0, "C": 0, "D": 0}),  # 683a.6(a): no wrap-around
}


@pytest.mark.parametrize("letter", "ABCD")
@pytest.mark.parametrize("community", sorted(BOARD))
def test_683a_12c(letter: str, community: str) -> None:
    hand, odds = BOARD[community]
    results = settle_round(
        rules(board_bonus_paytable=letter),
        record([seat(4, "5s 6s", {"ante": 500, "board_bonus": 200}, "fold")], community),
    )
    r = only(results, "board_bonus")
    assert (r.hand, r.paytable) == (hand, f"683a.12(c) paytable {letter}")
    if odds[letter]:
        assert_win(r, 200, odds[letter], 1, "683a.11(i)(2)(ii)", f"683a.12(c) paytable {letter}")
    else:
        assert_lose(r, 200, "683a.11(i)(2)(i)")


# -- 683a.12(d): Lo Ball, paytables A and B ----------------------------------------------------------------
# (player, community) -> hand, then per letter: odds "N" (to 1), "push", or "lose".
LO: dict[tuple[str, str], tuple[str, dict[str, str]]] = {
    ("7c 5d", "4h 3s 2c"): ("seven_high", {"A": "100", "B": "100"}),
    ("8c 5d", "4h 3s 2c"): ("eight_high", {"A": "50", "B": "50"}),
    ("9c 5d", "4h 3s 2c"): ("nine_high", {"A": "15", "B": "10"}),
    ("Tc 5d", "4h 3s 2c"): ("ten_high", {"A": "5", "B": "5"}),
    ("Jc 5d", "4h 3s 2c"): ("jack_high", {"A": "1", "B": "1"}),
    ("Qc 9d", "8h 7s 2c"): ("queen_high", {"A": "lose", "B": "push"}),
    ("Kc 5d", "4h 3s 2c"): ("king_high", {"A": "lose", "B": "lose"}),
    ("Ac 6d", "4h 3s 2c"): ("ace_high", {"A": "lose", "B": "lose"}),  # 683a.6(a): the ace is high here
    ("6c 5d", "4h 3s 2c"): ("straight", {"A": "lose", "B": "lose"}),
    ("Ac 5d", "4h 3s 2c"): ("straight", {"A": "lose", "B": "lose"}),
    ("7h 5h", "4h 3h 2h"): ("flush", {"A": "lose", "B": "lose"}),
    ("7c 7d", "4h 3s 2c"): ("pair_of_6s_to_10s", {"A": "lose", "B": "lose"}),
    ("2d 5d", "4h 3s 2c"): ("pair_of_2s_to_5s", {"A": "lose", "B": "lose"}),
}


@pytest.mark.parametrize("letter", "AB")
@pytest.mark.parametrize("cards", sorted(LO), ids=lambda c: "|".join(c))
def test_683a_12d(letter: str, cards: tuple[str, str]) -> None:
    hand, odds = LO[cards]
    results = settle_round(
        rules(lo_ball_paytable=letter),
        record([seat(3, cards[0], {"ante": 500, "raise_1": 500, "lo_ball": 400}, "raise fold")], cards[1]),
    )
    r = only(results, "lo_ball")
    assert (r.hand, r.paytable) == (hand, f"683a.12(d) paytable {letter}")
    if odds[letter] == "push":
        assert_push(r, 400, "683a.11(i)(3)(ii)", "683a.12(d) paytable B")
        assert r.odds == "Push"
    elif odds[letter] == "lose":
        assert_lose(r, 400, "683a.11(i)(3)(i)")
    else:
        assert_win(r, 400, int(odds[letter]), 1, "683a.11(i)(3)(ii)", f"683a.12(d) paytable {letter}")


def test_683a_12d_queen_high_is_loss_in_a_and_push_in_b() -> None:
    rec = record([seat(1, "Qc 9d", {"ante": 500, "lo_ball": 1000}, "fold")], "8h 7s 2c")
    a = only(settle_round(rules(lo_ball_paytable="A"), rec), "lo_ball")
    b = only(settle_round(rules(lo_ball_paytable="B"), rec), "lo_ball")
    assert (a.outcome, a.collected, a.odds, a.rule) == ("lose", 1000, "Loss", "683a.11(i)(3)(i)")
    assert (b.outcome, b.returned, b.paid, b.odds, b.rule) == ("push", 1000, 0, "Push", "683a.11(i)(3)(ii)")


# -- 683a.12(e): All-Six Bonus, paytables A-E --------------------------------------------------------------
SIX: dict[tuple[str, str], dict[str, tuple[str, int]]] = {
    ("9d Td", "Jd Qd Kd Ad"): {
        **{k: ("royal_flush", 1000) for k in "ABCD"},
        "E": ("six_card_royal_flush_diamonds", 200_000),
    },
    ("9h Th", "Jh Qh Kh Ah"): {
        **{k: ("royal_flush", 1000) for k in "ABCD"},
        "E": ("six_card_royal_flush_hearts_spades_or_clubs", 20_000),
    },
    ("Ks 9s", "Qs Js Ts As"): {
        **{k: ("royal_flush", 1000) for k in "ABCD"},
        "E": ("six_card_royal_flush_hearts_spades_or_clubs", 20_000),
    },
    ("Ac 9c", "Kc Qc Jc Tc"): {
        **{k: ("royal_flush", 1000) for k in "ABCD"},
        "E": ("six_card_royal_flush_hearts_spades_or_clubs", 20_000),
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
    ("9c 8d", "2h 2s 4c Kd"): {k: ("pair", 0) for k in "ABCDE"},
}


@pytest.mark.parametrize("letter", "ABCDE")
@pytest.mark.parametrize("cards", sorted(SIX), ids=lambda c: "|".join(c))
def test_683a_12e(letter: str, cards: tuple[str, str]) -> None:
    hand, odds = SIX[cards][letter]
    results = settle_round(
        rules(all_six_bonus_paytable=letter),
        record([seat(5, cards[0], {"ante": 500, "all_six_bonus": 100}, "fold")], "3s 7c 8c", cards[1]),
    )
    r = only(results, "all_six_bonus")
    assert (r.hand, r.paytable) == (hand, f"683a.12(e) paytable {letter}")
    if odds:
        assert_win(r, 100, odds, 1, "683a.11(i)(4)(ii)", f"683a.12(e) paytable {letter}")
    else:
        assert_lose(r, 100, "683a.11(i)(4)(i)")


# -- Folds: 683a.11(b), (d), (f) ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("decisions", "raises", "rule"),
    [
        ("fold", {}, "683a.11(b)"),
        ("raise fold", {"raise_1": 1000}, "683a.11(d)"),
        ("raise raise fold", {"raise_1": 1000, "raise_2": 1500}, "683a.11(f)"),
    ],
)
def test_fold_forfeits_ante_and_raises_but_not_optional_wagers(
    decisions: str, raises: dict[str, int], rule: str
) -> None:
    """A fold forfeits the Ante and Raise Wagers; the optional wagers still settle by their hands, in the order of
    683a.11(i)(1)-(4)."""
    wagers = {"ante": 500, **raises, "pocket_bonus": 100, "board_bonus": 100, "lo_ball": 100, "all_six_bonus": 100}
    results = settle_round(rules(), record([seat(1, "As Ad", wagers, decisions)], "Ac Ah 2d", "Kc Kd Ks 3h"))
    forfeits = results[: 1 + len(raises)]
    assert [r.wager for r in forfeits] == ["ante", *raises]
    for r in forfeits:
        assert (r.outcome, r.collected, r.rule) == ("lose", wagers[r.wager], rule)
    # The optional wagers still settle by their hands, in the order of 683a.11(i)(1)-(4).
    rest = results[1 + len(raises) :]
    assert [(r.wager, r.outcome, r.hand) for r in rest] == [
        ("pocket_bonus", "win", "pair_of_aces"),
        ("board_bonus", "win", "pair"),
        ("lo_ball", "lose", "four_of_a_kind"),
        ("all_six_bonus", "win", "full_house"),
    ]
    assert [r.paid for r in rest] == [3000, 100, 0, 2500]


def test_folded_seat_without_card_reading_wagers_may_omit_its_cards() -> None:
    rec = record([seat(1, "", {"ante": 500, "board_bonus": 100}, "fold")], "9c 9d 2h")
    assert [(r.wager, r.outcome) for r in settle_round(rules(), rec)] == [("ante", "lose"), ("board_bonus", "win")]


def test_settlement_order() -> None:
    """Forfeits at each decision clockwise, then the Ante and Raise Wagers settled counterclockwise (683a.11(h))."""
    rec = record(
        [
            seat(1, "2c 3d", {"ante": 100, "raise_1": 100}, "raise fold"),
            seat(2, "4c 5d", {"ante": 100, "board_bonus": 100}, "fold"),
            seat(3, "Kc Kd", {"ante": 100, "raise_1": 100, "raise_2": 100, "raise_3": 100, "pocket_bonus": 100}),
            seat(4, "7c 8d", {"ante": 100}, "fold"),
            seat(6, "Qc Qd", {"ante": 100, "raise_1": 200, "raise_2": 300, "raise_3": 100}),
        ],
        "Ah Js 9h",
    )
    assert [(r.seat, r.wager) for r in settle_round(rules(), rec)] == [
        (2, "ante"),
        (4, "ante"),
        (1, "ante"),
        (1, "raise_1"),
        (6, "ante"),
        (6, "raise_1"),
        (6, "raise_2"),
        (6, "raise_3"),
        (3, "ante"),
        (3, "raise_1"),
        (3, "raise_2"),
        (3, "raise_3"),
        (3, "pocket_bonus"),
        (2, "board_bonus"),
    ]


# -- 683a.12(f): the payout limit --------------------------------------------------------------------------


def test_683a_12f_floor() -> None:
    assert payout_limit_floor(500) == 5_000_000  # $50,000 > 10 x $5 x 500
    assert payout_limit_floor(2_000) == 10_000_000  # $20 x (1 + 3 x 3) x 500 = $100,000
    with pytest.raises(ValidationError, match=re.escape("payout_limit_cents = 4999999 is below the 683a.12(f) floor")):
        rules(payout_limit_cents=4_999_999)
    with pytest.raises(ValidationError, match="raise it to at least 10000000"):
        rules(ante_min_cents=2_000, ante_max_cents=5_000, payout_limit_cents=5_000_000)


def test_683a_12f_caps_ante_and_raises_only_paying_first_settled_first() -> None:
    wagers = {"ante": 2000, "raise_1": 6000, "raise_2": 6000, "raise_3": 6000, "pocket_bonus": 2500}
    results = settle_round(rules(payout_limit_cents=5_000_000), record([seat(1, "As Ks", wagers)], "Qs Js Ts"))
    # Uncapped: 500 to 1 on $200 in all = $100,000; the limit is $50,000.
    assert [r.paid for r in results[:4]] == [1_000_000, 3_000_000, 1_000_000, 0]
    assert sum(r.paid for r in results[:4]) == 5_000_000
    assert all(r.returned == r.amount for r in results[:4])
    assert results[2].note == "683a.12(f) payout limit of 5000000 per player per round: paid 1000000 of 3000000"
    assert results[0].note is None
    # The Pocket Bonus is not an Ante or Raise Wager: 20 to 1 in full.
    assert (results[4].wager, results[4].paid) == ("pocket_bonus", 50_000)


def test_683a_12f_is_per_player_across_boxes() -> None:
    wagers = {"ante": 2000, "raise_1": 6000, "raise_2": 6000, "raise_3": 6000}
    rec = record(
        [
            seat(2, "As Ks", wagers, player="p1"),
            seat(3, "9s 8s", wagers, player="p1"),
            seat(4, "Kc Kd", wagers, player="p2"),
        ],
        "Qs Js Ts",
    )
    results = settle_round(rules(payout_limit_cents=5_000_000, adjacent_boxes=2), rec)
    by_seat = {n: sum(r.paid for r in results if r.seat == n) for n in (2, 3, 4)}
    # Seat 4 (p2): pair of kings 1 to 1 on $200. Seat 3 (p1): Q-high straight flush 100 to 1 = $20,000, settled
    # before seat 2's royal flush ($100,000 uncapped), which gets the $30,000 left of p1's $50,000.
    assert by_seat == {4: 20_000, 3: 2_000_000, 2: 3_000_000}


def test_no_limit_configured_pays_in_full() -> None:
    wagers = {"ante": 2000, "raise_1": 6000, "raise_2": 6000, "raise_3": 6000}
    results = settle_round(rules(), record([seat(1, "As Ks", wagers)], "Qs Js Ts"))
    assert sum(r.paid for r in results) == 10_000_000


# -- Validation of rules ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"pocket_bonus_paytable": None}, "offers pocket_bonus but pocket_bonus_paytable is not set"),
        ({"lo_ball_paytable": None}, "add lo_ball_paytable"),
        (
            {
                "optional_wagers": ["board_bonus"],
                "pocket_bonus_paytable": "A",
                "lo_ball_paytable": None,
                "all_six_bonus_paytable": None,
            },
            'pocket_bonus_paytable = "A" but optional_wagers does not offer',
        ),
        (
            {
                "optional_wagers": ["lo_ball", "lo_ball"],
                "pocket_bonus_paytable": None,
                "board_bonus_paytable": None,
                "all_six_bonus_paytable": None,
            },
            "lists lo_ball more than once",
        ),
        ({"lo_ball_paytable": "C"}, "lo_ball_paytable"),
        ({"ante_min_cents": 20_000}, "swap them"),
        ({"seats": 7}, "seats"),
        ({"seats": 2, "adjacent_boxes": 3}, "adjacent_boxes"),
        ({"ante_paytable": None}, "ante_paytable"),
        ({"chapter": "655a"}, "chapter"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_rules_validation(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        rules(**kw)


def test_rules_without_optional_wagers() -> None:
    r = CajunStudRules.model_validate({"chapter": "683a", "ante_paytable": "C"})
    assert r.optional_wagers == () and r.payout_limit_cents is None


# -- Validation of round records -----------------------------------------------------------------------------
OK = {"ante": 500, "raise_1": 500, "raise_2": 1000, "raise_3": 1500}


@pytest.mark.parametrize(
    ("seats", "community", "all_six", "message"),
    [
        ([seat(1, "As Ks", {**OK, "raise_2": 700})], "2c 3c 4d", "", "wagers.raise_2 = 700 but 683a.11\\(d\\) allows"),
        ([seat(1, "As Ks", {**OK, "raise_3": 2000})], "2c 3c 4d", "", "500, 1000, 1500"),
        ([seat(1, "As Ks", {"ante": 500, "raise_1": 500}, "fold")], "2c 3c 4d", "", "remove wagers.raise_1"),
        ([seat(1, "As Ks", {k: v for k, v in OK.items() if k != "raise_1"})], "2c 3c 4d", "", "wagers.raise_1 = 0 but"),
        (
            [seat(1, "As Ks", {k: v for k, v in OK.items() if k != "raise_3"}, "raise raise")],
            "2c 3c 4d",
            "",
            "stopping at the first 'fold'",
        ),
        ([seat(1, "As Ks", OK, "fold raise")], "2c 3c 4d", "", "stopping at the first 'fold'"),
        ([seat(1, "As Ks", {"raise_1": 500}, "fold")], "2c 3c 4d", "", "wagers.ante is missing"),
        ([seat(1, "As Ks", {**OK, "insurance": 5})], "2c 3c 4d", "", "unknown wager\\(s\\) insurance"),
        ([seat(1, "As", OK)], "2c 3c 4d", "", "cards has 1 card"),
        ([seat(1, "", {"ante": 500, "lo_ball": 100}, "fold")], "2c 3c 4d", "", "cards has 0 card"),
        ([seat(1, "As Ks", OK), seat(1, "Ad Kd", OK)], "2c 3c 4d", "", "more than once"),
        ([seat(1, "As Ks", OK), seat(2, "As Kd", OK)], "2c 3c 4d", "", "duplicate card\\(s\\) As"),
        ([seat(1, "As Ks", OK)], "2c 3c", "", "community_cards has 2"),
        ([seat(1, "As Ks", {**OK, "all_six_bonus": 100})], "2c 3c 4d", "5d 6d 7d", "all_six_bonus_cards has 3"),
        ([seat(1, "As Ks", OK)], "2c 3c 4d", "5d 6d 7d 8d", "no seat placed an All-Six Bonus Wager"),
        ([seat(1, "As Ks", OK)], "2c 3c Xd", "", "not a card"),
        ([seat(7, "As Ks", OK)], "2c 3c 4d", "", "less than or equal to 6"),
        ([seat(1, "As Ks", {**OK, "ante": -5})], "2c 3c 4d", "", "cannot be negative"),
    ],
)
def test_round_validation(seats: list[dict[str, Any]], community: str, all_six: str, message: str) -> None:
    with pytest.raises((ValidationError, CardError), match=message):
        record(seats, community, all_six)


def test_wager_not_offered_is_refused() -> None:
    rec = record([seat(3, "As Ks", {**OK, "lo_ball": 100})], "2c 3c 4d")
    with pytest.raises(SettlementError, match=re.escape("seats[0].wagers.lo_ball: the Rules Submission does not")):
        settle_round(
            rules(
                optional_wagers=["pocket_bonus"],
                board_bonus_paytable=None,
                lo_ball_paytable=None,
                all_six_bonus_paytable=None,
            ),
            rec,
        )


def test_seat_beyond_the_table_is_refused() -> None:
    with pytest.raises(SettlementError, match=re.escape("seats[0].seat = 5: the table has 4 betting positions")):
        settle_round(rules(seats=4), record([seat(5, "As Ks", OK)], "2c 3c 4d"))


def test_683a_7e_boxes_per_player() -> None:
    rec = record([seat(1, "As Ks", OK, player="p"), seat(3, "Ad Kd", OK, player="p")], "2c 3c 4d")
    with pytest.raises(SettlementError, match=re.escape("683a.7(e)")):
        settle_round(rules(adjacent_boxes=2), rec)  # boxes 1 and 3 are not adjacent
    rec2 = record([seat(1, "As Ks", OK, player="p"), seat(2, "Ad Kd", OK, player="p")], "2c 3c 4d")
    with pytest.raises(SettlementError, match="at most 1 adjacent"):
        settle_round(rules(), rec2)
    assert len(settle_round(rules(adjacent_boxes=2), rec2)) == 8
