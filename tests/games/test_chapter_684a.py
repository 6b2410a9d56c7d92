"""684a (name unknown): operator-supplied rules, round records and settlement."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from controller.core.cards import CardError
from controller.core.settlement import Settled, SettlementError
from controller.games.chapter_684a.record import Chapter684aRound
from controller.games.chapter_684a.rules import Chapter684aRules
from controller.games.chapter_684a.settle import settle, settle_round
from tests.games.submitted_rules import submitted_rules

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "chapter-684a.toml"


def rules(**kw: Any) -> Chapter684aRules:
    return submitted_rules(Chapter684aRules, CONFIG, **kw)


def record(dealer: str, seats: list[dict[str, Any]], **kw: Any) -> Chapter684aRound:
    return Chapter684aRound.model_validate({"chapter": "684a", "dealer": dealer.split(), "seats": seats, **kw})


def seat(n: int, cards: str, ante: int = 500, raise_: int | None = None, **kw: Any) -> dict[str, Any]:
    folded = kw.pop("folded", False)
    wagers = {"ante": ante, "odds": ante}
    if not folded:
        wagers["raise"] = 2 * ante if raise_ is None else raise_
    wagers.update(kw.pop("wagers", {}))
    return {"seat": n, "cards": cards.split(), "wagers": wagers, "folded": folded, **kw}


def row(results: list[Settled], n: int, wager: str) -> Settled:
    (r,) = [x for x in results if x.seat == n and x.wager == wager]
    return r


def outcomes(results: list[Settled], n: int) -> list[tuple[str, str, int]]:
    return [(x.wager, x.outcome, x.paid) for x in results if x.seat == n]


# --- the config -------------------------------------------------------------------------------------------------


def test_example_config_is_a_valid_rules_submission() -> None:
    with CONFIG.open("rb") as f:
        data = tomllib.load(f)
    assert data["table_id"] == "c684a-table-01"
    r = Chapter684aRules.model_validate(data["game"])
    assert (r.chapter, r.raise_multiples, r.dealer_not_qualified.raise_) == ("684a", [1, 2, 3], "push")
    assert not r.offers("four_card_bonus") and r.offers("prime") and r.offers("all_six")


@pytest.mark.parametrize(
    "field",
    [
        "dealer_qualifies",
        "raise_multiples",
        "ante_odds",
        "raise_odds",
        "dealer_not_qualified",
        "odds_paytable",
        "odds_when_player_loses",
        "folded_optional_wagers",
    ],
)
def test_a_missing_required_rule_is_refused_naming_it(field: str) -> None:
    with pytest.raises(ValidationError, match=f"{field} is required: 684a"):
        rules(**{field: None})


@pytest.mark.parametrize(
    ("kw", "names"),
    [
        (
            {"four_card_bonus_paytable": {"four_of_a_kind": "50 to 1"}},
            "four_card_bonus_paytable: the Four Card Bonus Wager cannot be offered",
        ),
        (
            {"four_card_bonus_hand": "best_four_of_five"},
            "four_card_bonus_paytable: the Four Card Bonus Wager cannot be",
        ),
        ({"prime_hand": None}, "prime_hand is required with prime_paytable"),
        ({"prime_hand": "three_of_five_same_color"}, "prime_hand = 'three_of_five_same_color' is not implemented"),
        ({"all_six_hand": None}, "all_six_hand is required with all_six_paytable"),
        ({"all_six_paytable": None}, "all_six_hand belongs to the all_six wager"),
        (
            {"all_six_paytable": {"five_aces": "9 to 1"}},
            r"all_six_paytable names unknown hand class\(es\) \['five_aces'\]",
        ),
        ({"odds_paytable": {"royal_flush": "100 to 1"}}, r"odds_paytable has no row for \['high_card'"),
        ({"raise_multiples": []}, "raise_multiples"),
        ({"raise_odds": "double"}, "'double' is not payout odds"),
        ({"dealer_qualifies": {"min_class": "ace_king", "high_cards": []}}, "'ace_king' is not a five-card class"),
        ({"dealer_qualifies": {"min_class": "high_card"}}, r"dealer_qualifies\.high_cards"),
        ({"dealer_not_qualified": {"ante": "win", "raise": "push"}}, r"dealer_not_qualified\.odds"),
    ],
)
def test_incomplete_or_unknown_rules_are_refused_naming_the_field(kw: dict[str, Any], names: str) -> None:
    with pytest.raises(ValidationError, match=names):
        rules(**kw)


# --- Ante, Odds and Raise ---------------------------------------------------------------------------------------


def test_player_beats_a_qualified_dealer_and_the_odds_wager_pays_by_hand() -> None:
    res = settle_round(rules(), record("Ac Kd 9s 7c 3h", [seat(2, "5h 5d 5s 8c 2d", 1000)]))
    assert outcomes(res, 2) == [("ante", "win", 1000), ("odds", "win", 3000), ("raise", "win", 2000)]
    assert row(res, 2, "odds").odds == "3 to 1"


def test_player_loses_to_a_qualified_dealer() -> None:
    rec = record("8c 8d 9s 7c 3h", [seat(2, "Ah Kc Qd 2s 5c")])
    assert outcomes(settle_round(rules(), rec), 2) == [("ante", "lose", 0), ("odds", "lose", 0), ("raise", "lose", 0)]
    res = settle_round(rules(odds_when_player_loses="push"), rec)
    assert [x.outcome for x in res] == ["lose", "push", "lose"]


def test_equal_hands_push() -> None:
    res = settle_round(rules(), record("Ac Kd 9s 7c 3h", [seat(2, "Ah Ks 9d 7h 3c")]))
    assert [x.outcome for x in res] == ["push"] * 3


def test_dealer_below_the_qualifying_hand() -> None:
    # Ace-queen high is below the example's ace-king: Ante wins, Raise and Odds push.
    rec = record("Ac Qd 9s 7c 3h", [seat(2, "2h 4s 6d 8h Tc")])
    assert outcomes(settle_round(rules(), rec), 2) == [("ante", "win", 500), ("odds", "push", 0), ("raise", "push", 0)]
    r = rules(dealer_not_qualified={"ante": "push", "raise": "win", "odds": "paytable"})
    assert outcomes(settle_round(r, rec), 2) == [("ante", "push", 0), ("odds", "win", 500), ("raise", "win", 1000)]


def test_qualifying_hand_comes_from_the_rules_submission() -> None:
    rec = record("Ac Kd 9s 7c 3h", [seat(2, "2h 4s 6d 8h Tc")])
    assert row(settle_round(rules(), rec), 2, "ante").outcome == "lose"  # ace-king qualifies
    r = rules(dealer_qualifies={"min_class": "pair", "high_cards": ["4"]})
    assert row(settle_round(r, rec), 2, "raise").outcome == "push"  # needs a pair of fours or better
    rec = record("4c 4d 9s 7c 3h", [seat(2, "2h 2s 6d 8h Tc")])
    assert row(settle_round(r, rec), 2, "raise").outcome == "lose"


def test_raise_must_be_an_allowed_multiple_of_the_ante() -> None:
    with pytest.raises(SettlementError, match=r"seats\[seat=2\]\.wagers\.raise: 1500 is not an allowed Raise"):
        settle(rules(raise_multiples=[2]), record("Ac Kd 9s 7c 3h", [seat(2, "2h 4s 6d 8h Tc", raise_=1500)]))
    # The example allows one, two or three Antes: one and a half is none of them.
    with pytest.raises(SettlementError, match=r"seats\[seat=2\]\.wagers\.raise: 750 is not an allowed Raise"):
        settle(rules(), record("Ac Kd 9s 7c 3h", [seat(2, "2h 4s 6d 8h Tc", raise_=750)]))
    s = seat(2, "2h 4s 6d 8h Tc", folded=True)
    s["wagers"]["raise"] = 1000
    with pytest.raises(SettlementError, match="a player who folded made no Raise Wager"):
        settle(rules(), record("Ac Kd 9s 7c 3h", [s]))
    rec = record("Ac Kd 9s 7c 3h", [seat(2, "2h 2s 6d 8h Tc", raise_=1500)])
    res = settle_round(rules(raise_multiples=[1, 3]), rec)
    assert row(res, 2, "raise").paid == 1500


def test_ante_and_odds_are_required() -> None:
    s = seat(2, "2h 4s 6d 8h Tc")
    del s["wagers"]["odds"]
    with pytest.raises(SettlementError, match=r"seats\[seat=2\]\.wagers\.odds: 684a.10\(b\)"):
        settle(rules(), record("Ac Kd 9s 7c 3h", [s]))


def test_a_folded_player_loses_ante_and_odds() -> None:
    res = settle_round(rules(), record("Ac Kd 9s 7c 3h", [seat(2, "2h 4s 6d 8h Tc", folded=True)]))
    assert [(x.wager, x.outcome, x.collected) for x in res] == [("ante", "lose", 500), ("odds", "lose", 500)]


def test_settlement_runs_counterclockwise_from_the_dealers_right() -> None:
    rec = record("Ac Kd 9s 7c 3h", [seat(1, "2h 4s 6d 8h Tc"), seat(6, "2c 4c 6c 8c Td"), seat(4, "2d 4d 6h 8s Th")])
    res, meters = settle(rules(), rec)
    assert [x.seat for x in res] == [6, 6, 6, 4, 4, 4, 1, 1, 1]
    assert meters == {}


# --- optional wagers --------------------------------------------------------------------------------------------


def test_prime_wins_when_all_five_cards_are_one_color() -> None:
    rec = record(
        "Ac Kd 9s 7c 3h",
        [seat(2, "2h 4d 6d 8h Th", wagers={"prime": 100}), seat(1, "2c 4s 6s 8c Td", wagers={"prime": 100})],
    )
    res = settle_round(rules(), rec)
    assert (row(res, 2, "prime").hand, row(res, 2, "prime").paid) == ("red", 1800)  # 18 to 1
    assert (row(res, 1, "prime").outcome, row(res, 1, "prime").collected) == ("lose", 100)


def test_all_six_is_the_players_five_and_the_all_six_bonus_card() -> None:
    rec = record(
        "Ac Kd 9s 7c 3h",
        [seat(2, "5h 5d 5s 8c 2d", wagers={"all_six": 100}), seat(1, "Jc Tc 6h 4d 2s", wagers={"all_six": 100})],
        all_six_bonus_card="8d",
    )
    res = settle_round(rules(), rec)
    assert (row(res, 2, "all_six").hand, row(res, 2, "all_six").paid) == ("full_house", 2000)
    assert (row(res, 1, "all_six").hand, row(res, 1, "all_six").outcome) == ("high_card", "lose")


def test_the_all_six_bonus_card_is_dealt_only_with_an_all_six_wager() -> None:
    with pytest.raises(SettlementError, match="all_six_bonus_card: a player placed an All-Six Bonus Wager"):
        settle(rules(), record("Ac Kd 9s 7c 3h", [seat(2, "5h 5d 5s 8c 2d", wagers={"all_six": 100})]))
    with pytest.raises(SettlementError, match="all_six_bonus_card: no player placed an All-Six Bonus Wager"):
        settle(rules(), record("Ac Kd 9s 7c 3h", [seat(2, "5h 5d 5s 8c 2d")], all_six_bonus_card="8d"))


def test_folded_players_optional_wagers_follow_the_rules_submission() -> None:
    rec = record("Ac Kd 9s 7c 3h", [seat(2, "2h 4d 6d 8h Th", folded=True, wagers={"prime": 100})])
    assert row(settle_round(rules(), rec), 2, "prime").paid == 1800
    assert row(settle_round(rules(folded_optional_wagers="collected"), rec), 2, "prime").outcome == "lose"


def test_wagers_not_offered_are_refused() -> None:
    r = rules(prime_paytable=None, prime_hand=None)
    with pytest.raises(SettlementError, match=r"seats\[seat=2\]\.wagers\.prime: this table does not offer"):
        settle(r, record("Ac Kd 9s 7c 3h", [seat(2, "2h 4d 6d 8h Th", wagers={"prime": 100})]))
    with pytest.raises(SettlementError, match=r"wagers\.four_card_bonus: this table does not offer"):
        settle(rules(), record("Ac Kd 9s 7c 3h", [seat(2, "2h 4d 6d 8h Th", wagers={"four_card_bonus": 100})]))


# --- the record -------------------------------------------------------------------------------------------------


def test_duplicate_cards_are_refused() -> None:
    with pytest.raises(CardError, match=r"duplicate card.*Ac"):
        settle(rules(), record("Ac Kd 9s 7c 3h", [seat(2, "Ac 4d 6d 8h Th")]))
    with pytest.raises(CardError, match=r"duplicate card.*Th"):
        settle(
            rules(),
            record("Ac Kd 9s 7c 3h", [seat(2, "2h 4d 6d 8h Th", wagers={"all_six": 100})], all_six_bonus_card="Th"),
        )


def test_five_cards_each() -> None:
    with pytest.raises(SettlementError, match=r"seats\[seat=2\]\.cards: 4 cards"):
        settle(rules(), record("Ac Kd 9s 7c 3h", [seat(2, "2h 4d 6d 8h")]))
    with pytest.raises(SettlementError, match="dealer: 3 cards"):
        settle(rules(), record("Ac Kd 9s", [seat(2, "2h 4d 6d 8h Th")]))


# --- the documented examples ------------------------------------------------------------------------------------


def example(case: str) -> Chapter684aRound:
    path = ROOT / "docs" / "examples" / f"chapter-684a--{case}.settle.json"
    return Chapter684aRound.model_validate(json.loads(path.read_text()))


def test_example_raise_and_all_six() -> None:
    res, meters = settle(rules(), example("raise-and-all-six"))
    assert outcomes(res, 1) == [
        ("ante", "win", 500),
        ("odds", "win", 2500),
        ("raise", "win", 1000),
        ("prime", "win", 1800),
        ("all_six", "win", 100_000),
    ]
    assert row(res, 1, "all_six").hand == "six_card_royal_flush"
    assert outcomes(res, 3) == [("ante", "win", 500), ("odds", "win", 500), ("raise", "win", 1000)]
    assert [(x.wager, x.outcome, x.collected) for x in res if x.seat == 5] == [
        ("ante", "lose", 500),
        ("odds", "lose", 500),
        ("all_six", "lose", 100),
    ]
    assert meters == {}


def test_example_dealer_not_qualified() -> None:
    res = settle_round(rules(), example("dealer-not-qualified"))
    assert [(x.seat, x.wager, x.outcome, x.paid) for x in res] == [
        (4, "ante", "win", 500),
        (4, "odds", "push", 0),
        (4, "raise", "push", 0),
        (2, "ante", "win", 1000),
        (2, "odds", "push", 0),
        (2, "raise", "push", 0),
    ]
