"""The Five Card Hand Bonus par (655a.12(e), 643a.12(f); docs/par.md): the sheet's figures worked from first principles,
and every chance the sheet derives from how the table game system draws checked against the real draw and the real
settlement code, exhaustively (each of the 52 Magic Cards, each betting position), not by sampling."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import load_config
from controller.core import rng
from controller.core.settlement import Settled
from controller.games.let_it_ride.record import LetItRideRound
from controller.games.let_it_ride.rules import LetItRideRules
from controller.games.let_it_ride.settle import settle_record as settle_let_it_ride
from controller.games.mississippi_stud.record import MississippiStudRound
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.settle import settle as settle_mississippi_stud
from controller.par import let_it_ride_optional, mississippi_stud_optional

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
# The number of five-card hands of each class (any poker text; the evaluator's counts are tested elsewhere).
ROYAL, STRAIGHT_FLUSH, QUADS, FULL_HOUSE, FLUSH, HANDS = 4, 36, 624, 3_744, 5_108, 2_598_960
# 655a.12(e)(1), 643a.12(f)(1): flush or better wins; the Magic Card and Lucky Bonus are paid with such a hand only
# (655a.1, 655a.11(i)(3)(i); 643a.1, 643a.11(f)(3)(v)(A)).
WINS = Fraction(ROYAL + STRAIGHT_FLUSH + QUADS + FULL_HOUSE + FLUSH, HANDS)
BONUS = ("five_card_hand_bonus", "magic_card_bonus", "lucky_bonus")


def _ms() -> tuple[str, MississippiStudRules]:
    cfg = load_config(CONFIGS / "mississippi-stud-five-card-hand-bonus.toml")
    assert isinstance(cfg.game, MississippiStudRules)
    return cfg.table_id, cfg.game


def _lir() -> tuple[str, LetItRideRules]:
    cfg = load_config(CONFIGS / "let-it-ride-five-card-hand-bonus.toml")
    assert isinstance(cfg.game, LetItRideRules)
    return cfg.table_id, cfg.game


def _hand_part(meter_for_1: Fraction) -> Fraction:
    """The hand's net per unit (655a.12(e)(1)): 100 % and 10 % of the meter, 500, 100, 50 for 1, else the wager lost."""
    paid = ROYAL * meter_for_1 + STRAIGHT_FLUSH * meter_for_1 / 10 + QUADS * 500 + FULL_HOUSE * 100 + FLUSH * 50
    return Fraction(paid, HANDS) - 1


def test_the_mississippi_stud_sheet_is_the_figure_worked_by_hand() -> None:
    _, rules = _ms()
    sheet = mississippi_stud_optional.five_card_hand_bonus(rules, {})
    # The meter at its 655a.12(e)(4) seed, $10,000 for 1; with a winning hand only, the Magic Card 20 for 1 on 5 of 52
    # draws (655a.12(e)(3)) and the Lucky Bonus 5 for 1 on 1 of the six positions (655a.2(a)).
    expected = _hand_part(Fraction(10_000)) + WINS * (20 * Fraction(5, 52) + 5 * Fraction(1, 6))
    assert sheet.house_edge == -expected == Fraction(3987, 6664)  # 59.828932 %
    assert sheet.hit_frequency == WINS  # a bonus is never a hit of its own
    rows = {r.name: r for r in sheet.rows}
    assert rows["magic_card_bonus"].contribution == Fraction(100, 52) * WINS
    assert rows["lucky_bonus"].probability == Fraction(1, 6) * WINS
    assert sheet.progressive is not None
    line = sheet.progressive.levels[0]
    # Each cent of meter adds its share on a royal flush (all) and a straight flush (a tenth), per 100-cent wager.
    assert line.slope == Fraction(ROYAL, HANDS * 100) + Fraction(STRAIGHT_FLUSH, HANDS * 1_000)
    # Finite now: the meter at which the line crosses 0, about $214,596.
    meter = sheet.progressive.break_even["five_card_hand_bonus"]
    assert meter is not None and line.house_edge_at(meter) == 0
    assert 21_459_605 <= meter < 21_459_606
    assert sheet.variance is not None and sheet.variance > 0
    (note,) = [n for n in sheet.notes if "Magic Card" in n]
    assert "(655a.1, 655a.11(i)(3)(i)" in note and "-214.802844%" in note and "refused" in note


def test_the_variance_is_worked_from_the_joint_distribution() -> None:
    """E[net^2] by enumeration of (hand row, Magic Card, Lucky Bonus), the bonuses only with a winning hand."""
    _, rules = _ms()
    sheet = mississippi_stud_optional.five_card_hand_bonus(rules, {})
    hand = {
        "royal_flush": (Fraction(ROYAL, HANDS), Fraction(10_000) - 1),
        "straight_flush": (Fraction(STRAIGHT_FLUSH, HANDS), Fraction(1_000) - 1),
        "four_of_a_kind": (Fraction(QUADS, HANDS), Fraction(499)),
        "full_house": (Fraction(FULL_HOUSE, HANDS), Fraction(99)),
        "flush": (Fraction(FLUSH, HANDS), Fraction(49)),
        "lose": (1 - WINS, Fraction(-1)),
    }
    mean = second = Fraction(0)
    for name, (p, net) in hand.items():
        for magic in (True, False):
            for lucky in (True, False):
                q = p * (Fraction(5, 52) if magic else Fraction(47, 52)) * (Fraction(1, 6) if lucky else Fraction(5, 6))
                x = net + (0 if name == "lose" else 20 * magic + 5 * lucky)
                mean += q * x
                second += q * x * x
    assert -mean == sheet.house_edge
    assert sheet.variance == second - mean * mean


def test_a_higher_meter_returns_more_and_the_smaller_let_it_ride_wager_gets_more_of_it() -> None:
    """643a.12(f)(4): one meter whatever the wager, so the smaller wager's edge is the lower."""
    _, rules = _lir()
    small, large = let_it_ride_optional.five_card_hand_bonus(rules, {})
    higher, _ = let_it_ride_optional.five_card_hand_bonus(rules, {"five_card_hand_bonus": 5_000_000})
    assert (small.wager, large.wager) == ("five_card_hand_bonus@100", "five_card_hand_bonus@10000")
    # 643a.12(f)(4): one meter whatever the wager, the Lucky Bonus on 1 of 7 positions (643a.2(a)), with a winning hand.
    extras = WINS * (Fraction(100, 52) + Fraction(5, 7))
    assert small.house_edge == -(_hand_part(Fraction(10_000)) + extras)  # 59.872520 %
    assert large.house_edge == -(_hand_part(Fraction(100)) + extras)  # 62.767525 %
    assert higher.house_edge < small.house_edge
    assert all(s.progressive and None not in s.progressive.break_even.values() for s in (small, large))
    assert all("(643a.1, 643a.11(f)(3)(v)(A)" in " ".join(s.notes) for s in (small, large))


def _settle_ms(rules: MississippiStudRules, cards: list[str], magic: str, lucky: int) -> list[Settled]:
    record: dict[str, Any] = {
        "chapter": "655a",
        # Folded at 3rd Street: the cards stay until the optional wagers are settled (655a.11(b)).
        "seats": [
            {
                "seat": 1,
                "cards": cards[:2],
                "wagers": {"ante": 500, "five_card_hand_bonus": 100},
                "folded_on": "street_3",
            }
        ],
        "community": cards[2:5],
        "meters": {"five_card_hand_bonus": 1_000_000, "mega": 29_000_000, "major": 3_200_000, "minor": 200_000},
        "magic_card": magic,
        "lucky_seat": lucky,
    }
    rows, _ = settle_mississippi_stud(rules, MississippiStudRound.model_validate(record))
    return [r for r in rows if r.wager in BONUS]


def _net(rows: list[Settled]) -> int:
    return sum(r.paid - r.collected for r in rows)


@pytest.mark.parametrize(
    ("cards", "hand_net"),
    [
        (["Ah", "Kh", "Qh", "Jh", "Th"], 1_000_000 - 100),  # royal flush: 100 % of the meter, the wager in it
        (["9s", "8s", "7s", "6s", "5s"], 100_000 - 100),  # straight flush: 10 %
        (["9s", "9h", "9d", "9c", "5s"], 49_900),  # 500 for 1
        (["9s", "9h", "9d", "5c", "5s"], 9_900),
        (["2d", "8d", "Jd", "Kd", "4d"], 4_900),
        (["Ad", "Kc", "Qs", "Jh", "Td"], -100),  # a straight loses (655a.7(d)(5): flush or better)
    ],
)
def test_settlement_pays_each_row_as_the_sheet_does(cards: list[str], hand_net: int) -> None:
    _, rules = _ms()
    sheet = mississippi_stud_optional.five_card_hand_bonus(rules, {})
    rows = _settle_ms(rules, cards, magic="2h" if "2d" in cards else "2d", lucky=6)
    assert [r.wager for r in rows] == ["five_card_hand_bonus"] and _net(rows) == hand_net
    pays = {r.name: r.contribution / r.probability for r in sheet.rows}
    assert {Fraction(hand_net, 100)} & set(pays.values())


def test_the_magic_card_pays_on_exactly_five_of_the_52_cards_the_system_can_draw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sheet's 5/52 is exact only if the draw is one card of the 52 and settlement pays the five the player holds;
    both checked: what the real draw chooses from, and settlement over every card it could choose.

    The same draws on a losing hand pay nothing (655a.1, 655a.11(i)(3)(i))."""
    offered: list[tuple[str, ...]] = []

    def choice(seq: Sequence[str]) -> str:
        offered.append(tuple(seq))
        return seq[0]

    monkeypatch.setattr(secrets, "choice", choice)  # the module rng draws with
    rng.draw_magic_card()
    assert len(offered[0]) == 52 == len(set(offered[0]))
    _, rules = _ms()
    flush = ["2d", "8d", "Jd", "Kd", "4d"]  # 50 for 1: the bonuses are paid with it
    paid = {c: _net(_settle_ms(rules, flush, magic=c, lucky=6)) for c in offered[0]}
    assert sorted(c for c, net in paid.items() if net > 4_900) == sorted(flush)
    assert {paid[c] for c in flush} == {4_900 + 20 * 100}  # the hand's 50 for 1 and the Magic Card's 20 for 1
    # The same draws on a losing hand pay nothing (655a.1, 655a.11(i)(3)(i)): the wager lost, no more.
    losing = ["Ah", "7c", "Kd", "4s", "9h"]
    assert {_net(_settle_ms(rules, losing, magic=c, lucky=6)) for c in offered[0]} == {-100}


def test_the_lucky_bonus_pays_one_position_of_the_table_and_the_lir_magic_card_counts_the_community_cards() -> None:
    """643a.1: the Magic Card may be one of the community cards, and pays with a winning hand only."""
    _, ms = _ms()
    flush = ["2d", "8d", "Jd", "Kd", "4d"]
    wins = [seat for seat in range(1, ms.seats + 1) if _net(_settle_ms(ms, flush, magic="2c", lucky=seat)) > 4_900]
    assert wins == [1]  # the player's box; the sheet's 1/seats counts every position, occupied or not
    assert _net(_settle_ms(ms, flush, magic="2c", lucky=1)) == 4_900 + 5 * 100
    assert _net(_settle_ms(ms, ["Ah", "7c", "Kd", "4s", "9h"], magic="2c", lucky=1)) == -100  # a losing hand
    _, lir = _lir()

    def settle_lir(cards: list[str], community: list[str]) -> int:
        record: dict[str, Any] = {
            "chapter": "643a",
            "seats": [
                {
                    "seat": 3,
                    "cards": cards,
                    "wagers": {"bet_1": 500, "bet_2": 500, "bet_3": 500, "five_card_hand_bonus": 100},
                }
            ],
            "community": community,  # 643a.1: the Magic Card may be a community card
            "meters": {"five_card_hand_bonus": 1_000_000},
            "magic_card": "9h",
            "lucky_seat": 3,
        }
        rows = [r for r in settle_let_it_ride(lir, LetItRideRound.model_validate(record))[0] if r.wager in BONUS]
        return _net(rows)

    assert settle_lir(["Ah", "7h", "Kh"], ["4h", "9h"]) == 4_900 + 2_000 + 500  # a flush: 50, 20 and 5 for 1
    assert settle_lir(["Ah", "7c", "Kd"], ["4s", "9h"]) == -100  # the same draws, a losing hand
