"""Chapter 683a's par sheet (controller.par.cajun_stud): every 683a.12 letter, checked against what can be derived
apart from it: the Mississippi Stud analysis where the chapters' tables coincide, and class counts worked by hand."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from controller.par import cajun_stud, mississippi_stud, mississippi_stud_optional

# One worker runs the module: its tests share 683a's main game, solved once (the module fixture).
pytestmark = pytest.mark.xdist_group("par_cajun_stud")


@pytest.fixture(scope="module")
def main_a() -> cajun_stud.MainGame:
    return cajun_stud.analyse_main("A")


def test_paytable_a_is_mississippi_stud_and_is_solved_the_same(main_a: cajun_stud.MainGame) -> None:
    """683a.12(a) paytable A is 655a.12(a) row for row, and 683a.11(b)-(g) asks its three decisions where 655a.11 asks
    its Streets: the two analyses (one summing in half-Antes) must agree on every figure and every decision."""
    ms = mississippi_stud.analyse_main()
    assert main_a.sheet.house_edge == ms.sheet.house_edge == Fraction(53223, 1082900)
    assert main_a.sheet.average_wager == ms.sheet.average_wager
    assert main_a.sheet.variance == ms.sheet.variance
    assert [r.probability for r in main_a.sheet.rows] == [r.probability for r in ms.sheet.rows]
    for mine, theirs in (
        (main_a.strategy.third, ms.strategy.third),
        (main_a.strategy.fourth, ms.strategy.fourth),
        (main_a.strategy.fifth, ms.strategy.fifth),
    ):
        assert np.array_equal(mine, theirs)


@pytest.mark.parametrize(
    ("letter", "edge"), [("B", Fraction(2911, 19110)), ("C", Fraction(916501, 6497400))], ids=["B", "C"]
)
def test_paytables_b_and_c_pay_two_pair_3_to_2_and_hold_far_more(letter: str, edge: Fraction) -> None:
    game = cajun_stud.analyse_main(letter)
    sheet = game.sheet
    assert sheet.house_edge == edge  # 15.232862 % and 14.105658 %: two pair at 3 to 2 costs ~14 points over A
    assert sum(r.probability for r in sheet.rows) == 1
    two_pair = next(r for r in sheet.rows if r.name == "two_pair")
    assert two_pair.pays == "3 to 2"
    # Every decision point's shares add up to the hands that reach it; the strategy never raises 2x.
    for point in cajun_stud.POINTS.values():
        shares = {d.action: d.share for d in sheet.decisions if d.point == point}
        assert shares["2x"] == 0
    first = {d.action: d.share for d in sheet.decisions if d.point == cajun_stud.POINTS[1]}
    assert sum(first.values()) == 1
    assert first["3x"] == Fraction(78, 1326)  # any pair


def test_exact_ties_at_the_third_raise_are_priced_both_ways_as_mississippi_studs_are() -> None:
    """One solver (controller.par.stud) for 655a and 683a: Cajun Stud has the same ties="more" option, and its sheet
    says, as 655a's does, what raising on the exact ties at the third Raise Wager would change (not the house edge)."""
    folding = cajun_stud.analyse_main("B").sheet
    raising = cajun_stud.analyse_main("B", ties="more").sheet
    assert raising.house_edge == folding.house_edge == Fraction(2911, 19110)
    assert raising.average_wager is not None and folding.average_wager is not None
    assert f"{float(raising.average_wager):.6f}" == "3.555778"
    assert raising.average_wager > folding.average_wager
    assert folding.notes == (
        "on 10.480007% of deals the third Raise Wager (683a.11(f)) is an exact tie between folding and a wager "
        "(the same expected result); this sheet folds on them. Raising on them instead, the house edge is unchanged "
        "and the average total wager is 3.555778 Antes, element of risk 4.283975% (docs/par.md)",
    )
    assert not raising.notes


def test_the_first_raise_is_3x_on_any_pair(main_a: cajun_stud.MainGame) -> None:
    groups = mississippi_stud.third_street_groups(main_a.strategy)
    assert sorted(groups[3]) == sorted(r + r for r in "23456789TJQKA")
    table = main_a.strategy_tables[0]
    assert table.rules[0].startswith("raise 3x: AA KK")
    assert any(t.point.startswith("Third Raise Wager (683a.11(f))") for t in main_a.strategy_tables)


def test_the_payout_limit_cuts_only_the_rows_above_it() -> None:
    """At a $100 Ante with the $50,000 limit of 683a.12(f): 10 Antes on a royal flush (500 to 1) or a straight flush
    (100 to 1) would win more than the limit; four of a kind (40 to 1 on $1,000: $40,000) is paid in full."""
    free = cajun_stud.analyse_main("B")
    capped = cajun_stud.analyse_main("B", 10_000, 5_000_000)
    assert capped.sheet.house_edge > free.sheet.house_edge
    by_name = {r.name: r for r in free.sheet.rows}
    for row in capped.sheet.rows:
        if row.name in ("four_of_a_kind", "full_house"):
            assert row.contribution == by_name[row.name].contribution
    royal = next(r for r in capped.sheet.rows if r.name == "royal_flush")
    assert royal.contribution == royal.probability * Fraction(5_000_000, 10_000)  # every royal paid the limit


def test_pocket_bonus_counts_are_the_two_card_hands_by_hand() -> None:
    """683a.6(c): 6 pairs of aces, 12 suited and 36 unsuited ace with a jack, queen or king, 12 x 6 = 72 other
    pairs, of the 1,326 two-card hands."""
    expected = {"pair_of_aces": 6, "suited_ace": 12, "unsuited_ace": 36, "pair": 72, "lose": 1200}
    edges = {"A": Fraction(10, 221), "B": Fraction(15, 221), "C": Fraction(22, 221)}
    for letter, edge in edges.items():
        sheet = cajun_stud.pocket_bonus(letter)
        assert {r.name: r.probability * 1326 for r in sheet.rows} == expected
        assert sheet.house_edge == edge


def test_lo_ball_counts_and_letters() -> None:
    """683a.11(i)(3): 7 high is four rank sets (7-5-4-3-2, 7-6-4-3-2, 7-6-5-3-2, 7-6-5-4-2; 7-6-5-4-3 is a straight)
    in 4**5 - 4 suit patterns that are not a flush; 8 high is C(6, 4) - 1 = 14 rank sets. Queen high loses under A,
    pushes under B."""
    a, b = cajun_stud.lo_ball("A"), cajun_stud.lo_ball("B")
    rows = {r.name: r for r in b.rows}
    assert rows["seven_high"].probability * 2_598_960 == 4 * 1020
    assert rows["eight_high"].probability * 2_598_960 == 14 * 1020
    assert rows["queen_high"].pays == "push" and rows["queen_high"].contribution == 0
    assert "queen_high" not in {r.name for r in a.rows}  # "Loss": counted in the losing row
    assert (a.house_edge, b.house_edge) == (Fraction(111, 1274), Fraction(183, 2548))


@pytest.mark.parametrize("letter", "ABCD")
def test_board_bonus_is_the_655a_three_card_bonus(letter: str) -> None:
    """683a.12(c) A-D are 655a.12(d) A-D row for row, on the same three-card hands (683a.6(d), 655a.6(c))."""
    assert cajun_stud.board_bonus(letter).house_edge == mississippi_stud_optional.three_card_bonus(letter).house_edge


def test_all_six_bonus_every_letter() -> None:
    """683a.12(e) A-E are 655a.12(f) A-E; E pays the diamond six-card royal flush apart (one hand in 20,358,520).
    655a's analysis is asked for A (no six-card row) and E (both) only: each of its calls counts 20 million hands."""
    edges = {letter: cajun_stud.all_six_bonus(letter).house_edge for letter in "ABCDE"}
    assert edges == {
        "A": Fraction(15306, 149695),
        "B": Fraction(55546, 363545),
        "C": Fraction(26393, 391510),
        "D": Fraction(12816, 149695),
        "E": Fraction(460562, 2544815),
    }
    for letter in "AE":
        assert edges[letter] == mississippi_stud_optional.six_card_bonus(letter).house_edge
    e = {r.name: r for r in cajun_stud.all_six_bonus("E").rows}
    assert e["six_card_royal_flush_diamonds"].probability == Fraction(1, 20_358_520)
    assert e["six_card_royal_flush_hearts_spades_or_clubs"].probability == Fraction(3, 20_358_520)
