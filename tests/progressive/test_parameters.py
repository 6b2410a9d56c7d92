"""The chapters' meter figures: 655a.12(c)(3) and (e)(4) as printed, 643a.12(d)(3), (e)(3), (f)(4) from the config."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from controller.games.cajun_stud.rules import CajunStudRules
from controller.games.let_it_ride.progressives import LET_IT_RIDE_MINIMUMS, ConfiguredMeter
from controller.games.let_it_ride.rules import MIN_METER, LetItRideRules
from controller.games.mississippi_stud import paytables as ms
from controller.games.mississippi_stud.progressives import mississippi_stud_progressive
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.registry import table_progressives
from controller.progressive.parameters import (
    LevelParameters,
    ParameterError,
    ProgressiveOptions,
    TableProgressives,
    percent_to_ppm,
    ppm_to_percent,
)


def figures(table: TableProgressives) -> dict[str, tuple[int, int, str, str, int | None]]:
    return {
        name: (
            lv.seed_cents,
            lv.reseed_cents,
            ppm_to_percent(lv.primary_ppm),
            ppm_to_percent(lv.reserve_ppm),
            lv.limit_cents,
        )
        for name, lv in table.levels.items()
    }


@pytest.mark.parametrize(
    ("paytable", "expected"),
    [
        # 655a.12(c)(3), $1 wager: seed/reseed "for 1" and the incrementation rates, as the regulation prints them.
        ("A", {"progressive": (1_000_000, 1_000_000, "21", "0", None)}),
        ("B", {"mega": (1_000_000, 1_000_000, "11", "0", None), "major": (100_000, 100_000, "10", "0", None)}),
        (
            "C",
            {
                "mega": (1_000_000, 1_000_000, "9", "0", None),
                "major": (100_000, 100_000, "7", "0", None),
                "minor": (25_000, 25_000, "3", "0", None),
            },
        ),
        (
            "D",
            {
                "mega": (1_000_000, 1_000_000, "10", "0", None),
                "major": (100_000, 100_000, "8", "0", None),
                "minor": (25_000, 25_000, "3", "0", None),
            },
        ),
    ],
)
def test_655a_progressive_payout_wager_meters(paytable: str, expected: dict[str, Any]) -> None:
    rules = MississippiStudRules.model_validate({"chapter": "655a", "progressive_paytable": paytable})
    table = table_progressives(rules)
    assert figures(table) == expected
    progressive = table.for_wager("progressive")
    assert (progressive.rule, progressive.wager_cents) == ("655a.12(c)(3)", 100)
    assert {lv.rule for lv in progressive.levels} == {f"655a.12(c)(3) paytable {paytable}"}
    # The levels are the ones the settlement pays from, reseeded where settlement reseeds them.
    assert {k: v * 100 for k, v in ms.PROGRESSIVE_SEED_FOR_1[paytable].items()} == {
        name: lv.reseed_cents for name, lv in table.levels.items()
    }


def test_655a_five_dollar_wager_and_five_card_hand_bonus() -> None:
    rules = MississippiStudRules.model_validate(
        {
            "chapter": "655a",
            "progressive_paytable": "C",
            "progressive_wager_cents": 500,
            "five_card_hand_bonus": True,
            "five_card_hand_bonus_wager_cents": 100,
        }
    )
    table = table_progressives(rules, ProgressiveOptions(limits_cents={"minor": 500_000}))
    assert figures(table) == {
        "mega": (5_000_000, 5_000_000, "9", "0", None),
        "major": (500_000, 500_000, "7", "0", None),
        "minor": (125_000, 125_000, "3", "0", 500_000),
        # 655a.12(e)(4): seed $10,000 for 1, reseed $0, primary 13 %, reserve 8 %.
        "five_card_hand_bonus": (1_000_000, 0, "13", "8", None),
    }
    assert table.for_wager("five_card_hand_bonus").rule == "655a.12(e)(4)"
    assert table.levels["five_card_hand_bonus"].reseed_cents == ms.FIVE_CARD_HAND_BONUS_RESEED


def test_655a_rates_are_fixed_by_the_regulation() -> None:
    rules = MississippiStudRules.model_validate({"chapter": "655a", "progressive_paytable": "A"})
    with pytest.raises(ParameterError, match=r"655a.12\(c\)\(3\) and \(e\)\(4\) fix the reserve rates"):
        table_progressives(rules, ProgressiveOptions(reserve_percent={"progressive": Decimal(2)}))
    with pytest.raises(ParameterError, match=r"names meter\(s\) mega but this table's meters are progressive"):
        table_progressives(rules, ProgressiveOptions(limits_cents={"mega": 2_000_000}))
    with pytest.raises(ParameterError, match="limit_cents 999999 is below the seed"):
        table_progressives(rules, ProgressiveOptions(limits_cents={"progressive": 999_999}))
    with pytest.raises(ParameterError, match="paytables A, B, C and D"):
        mississippi_stud_progressive("E", 100)


LET_IT_RIDE = {
    "chapter": "643a",
    "let_it_ride_paytable": "A",
    "three_card_progressive": True,
    "three_card_progressive_paytable": "A",
    "three_card_progressive_initial_cents": 100_000,
    "three_card_progressive_reset_cents": 150_000,
    "three_card_progressive_rate_percent": 12.5,
    "five_card_progressive": True,
    "five_card_progressive_initial_cents": 1_000_000,
    "five_card_progressive_reset_cents": 1_000_000,
    "five_card_progressive_rate_percent": 4.25,
    "five_card_hand_bonus": True,
    "five_card_hand_bonus_initial_cents": 2_500_000,
    "five_card_hand_bonus_reset_cents": 1_000_000,
    "five_card_hand_bonus_rate_percent": 15,
}


def test_643a_meters_come_from_the_rules_submission() -> None:
    rules = LetItRideRules.model_validate(LET_IT_RIDE)
    table = table_progressives(
        rules,
        ProgressiveOptions(
            reserve_percent={"five_card_hand_bonus": 2.5}, limits_cents={"three_card_progressive": 1_000_000}
        ),
    )
    assert figures(table) == {
        "three_card_progressive": (100_000, 150_000, "12.5", "0", 1_000_000),
        "five_card_progressive": (1_000_000, 1_000_000, "4.25", "0", None),
        "five_card_hand_bonus": (2_500_000, 1_000_000, "15", "2.5", None),
    }
    assert [p.rule for p in table.progressives] == ["643a.12(d)(3)", "643a.12(e)(3)", "643a.12(f)(4)"]
    assert [p.wager for p in table.progressives] == [
        "three_card_progressive",
        "five_card_progressive",
        "five_card_hand_bonus",
    ]
    # One table of minimums: the chapter rules and the meters agree on it.
    assert LET_IT_RIDE_MINIMUMS == MIN_METER


@pytest.mark.parametrize(
    ("level", "field", "value", "message"),
    [
        (
            "three_card_progressive",
            "initial_cents",
            99_999,
            r"643a.12\(d\)\(3\) sets a minimum of 100000 cents \(\$1,000",
        ),
        ("three_card_progressive", "reset_cents", 0, r"643a.12\(d\)\(3\) sets a minimum of 100000 cents"),
        (
            "five_card_progressive",
            "initial_cents",
            999_999,
            r"643a.12\(e\)\(3\) sets a minimum of 1000000 cents \(\$10,0",
        ),
        ("five_card_hand_bonus", "reset_cents", 999_999, r"643a.12\(f\)\(4\) sets a minimum of 1000000 cents"),
    ],
)
def test_643a_minimum_initial_and_reset_amounts(level: str, field: str, value: int, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ConfiguredMeter.model_validate(
            {"level": level, "initial_cents": 10_000_000, "reset_cents": 10_000_000, "rate_percent": 5, field: value}
        )


def test_643a_table_without_a_figure_names_it() -> None:
    # LetItRideRules refuses it first; a rules object built another way is refused here too.
    # Deliberately incomplete (no paytable letter): model_construct builds it without validation.
    partial = LetItRideRules.model_construct(  # type: ignore[call-arg]
        chapter="643a",
        three_card_progressive=True,
        three_card_progressive_initial_cents=100_000,
        three_card_progressive_reset_cents=100_000,
        three_card_progressive_rate_percent=None,
    )

    with pytest.raises(ParameterError, match=r"three_card_progressive_rate_percent is missing: 643a.12\(d\)\(3\)"):
        table_progressives(partial)


def test_rates_are_exact_or_refused() -> None:
    assert percent_to_ppm(21, "r") == 210_000
    assert percent_to_ppm(4.25, "r") == 42_500
    assert percent_to_ppm("0.0001", "r") == 1
    assert percent_to_ppm(Decimal("100"), "r") == 1_000_000
    for bad, message in (
        (0.00001, "finer than 0.0001"),
        (101, "outside 0 to 100"),
        (-1, "outside"),
        ("x", "not a percentage"),
        (True, "not a percentage"),
        (float("nan"), "outside"),
    ):
        with pytest.raises(ParameterError, match=message):
            percent_to_ppm(bad, "five_card_progressive_rate_percent")
    with pytest.raises(ValidationError, match="add up to more than the whole wager"):
        LevelParameters(level="x", seed_cents=0, reseed_cents=0, primary_ppm=900_000, reserve_ppm=200_000, rule="t")


def test_level_names_are_unique_across_the_table() -> None:
    rules = MississippiStudRules.model_validate({"chapter": "655a", "progressive_paytable": "A"})
    one = table_progressives(rules).progressives[0]
    with pytest.raises(ValidationError, match="fed by both progressive and progressive"):
        TableProgressives(progressives=(one, one))


def test_chapters_without_progressives_have_no_meters() -> None:
    cajun = CajunStudRules.model_validate({"chapter": "683a", "ante_paytable": "A"})

    assert table_progressives(cajun) == TableProgressives()
