"""679a Three Card Prime: operator-supplied rules, round records and settlement."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from controller.core.cards import CardError
from controller.core.settlement import Settled, SettlementError
from controller.games.three_card_prime.record import ThreeCardPrimeRound
from controller.games.three_card_prime.rules import ThreeCardPrimeRules
from controller.games.three_card_prime.settle import settle, settle_round
from tests.games.submitted_rules import submitted_game, submitted_rules

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "three-card-prime.toml"


def game() -> dict[str, Any]:
    return submitted_game(CONFIG)


def rules(**kw: Any) -> ThreeCardPrimeRules:
    return submitted_rules(ThreeCardPrimeRules, CONFIG, **kw)


def record(dealer: str, seats: list[dict[str, Any]], **kw: Any) -> ThreeCardPrimeRound:
    for s in seats:
        if isinstance(s.get("cards"), str):
            s["cards"] = s["cards"].split()
    return ThreeCardPrimeRound.model_validate({"chapter": "679a", "dealer": dealer.split(), "seats": seats, **kw})


def seat(n: int, cards: str, ante: int = 500, **kw: Any) -> dict[str, Any]:
    wagers = {"ante": ante} if kw.pop("folded", False) else {"ante": ante, "play": ante}
    wagers.update(kw.pop("wagers", {}))
    return {"seat": n, "cards": cards.split(), "wagers": wagers, "folded": "play" not in wagers, **kw}


def row(results: list[Settled], n: int, wager: str) -> Settled:
    (r,) = [x for x in results if x.seat == n and x.wager == wager]
    return r


def outcome(results: list[Settled], n: int, wager: str) -> tuple[str, int]:
    r = row(results, n, wager)
    return r.outcome, r.paid


# --- the config -------------------------------------------------------------------------------------------------


def test_example_config_is_a_valid_rules_submission() -> None:
    with CONFIG.open("rb") as f:
        data = tomllib.load(f)
    assert data["table_id"] == "tcp-table-01"
    r = ThreeCardPrimeRules.model_validate(data["game"])
    assert (r.chapter, r.pair_bonus_layout, r.bad_beat_minimum) == ("679a", "fourth_card", "flush")


@pytest.mark.parametrize(
    "field", ["hand_order", "ace_two_three", "ante_odds", "play_odds", "dealer_not_qualified", "folded_optional_wagers"]
)
def test_a_missing_required_rule_is_refused_naming_it(field: str) -> None:
    with pytest.raises(ValidationError, match=f"{field} is required: 679a") as err:
        rules(**{field: None})
    assert "e.g." in str(err.value) or "=" in str(err.value)  # the message carries the fix


@pytest.mark.parametrize(
    ("kw", "names"),
    [
        ({"pair_bonus_layout": None}, "pair_bonus_layout is required with pair_bonus_paytable"),
        ({"pair_bonus_hand": None}, "pair_bonus_hand is required"),
        ({"pair_bonus_hand": "best_three_of_five"}, "pair_bonus_hand = 'best_three_of_five' is not implemented"),
        ({"pair_bonus_paytable": {"flush": "3 to 1"}}, r"pair_bonus_paytable has no row for \['mini_royal'"),
        (
            {
                "pair_bonus_paytable": {
                    "pair": "1 to 1",
                    "high_card": "1 to 1",
                    "flush": "3 to 1",
                    "straight": "6 to 1",
                    "three_of_a_kind": "30 to 1",
                    "straight_flush": "40 to 1",
                    "mini_royal": "50 to 1",
                }
            },
            r"pair_bonus_paytable has rows for \['high_card'\]",
        ),
        ({"bad_beat_minimum": None}, "bad_beat_minimum is required with bad_beat_paytable"),
        ({"bad_beat_minimum": "straight"}, r"bad_beat_paytable has rows for \['flush'\]"),
        ({"prime_paytable": {"all_red": "3 to 1"}}, "prime_paytable needs its same_color row"),
        (
            {"all_six_paytable": {"five_aces": "9 to 1"}},
            r"all_six_paytable names unknown hand class\(es\) \['five_aces'\]",
        ),
        ({"ante_odds": "even money"}, "'even money' is not payout odds"),
        ({"hand_order": ["pair", "pair", "flush"]}, "hand_order must name each three-card class once"),
        (
            {
                "hand_order": [
                    "high_card",
                    "mini_royal",
                    "straight_flush",
                    "three_of_a_kind",
                    "straight",
                    "flush",
                    "pair",
                ]
            },
            "hand_order must end with high_card",
        ),
        ({"pair_bonus_paytable": None}, "pair_bonus_layout and pair_bonus_hand belong to the Pair Bonus Wager"),
    ],
)
def test_incomplete_or_unknown_rules_are_refused_naming_the_field(kw: dict[str, Any], names: str) -> None:
    with pytest.raises(ValidationError, match=names):
        rules(**kw)


def test_optional_wagers_can_be_left_out() -> None:
    r = rules(
        prime_paytable=None,
        pair_bonus_paytable=None,
        pair_bonus_layout=None,
        pair_bonus_hand=None,
        bad_beat_paytable=None,
        bad_beat_minimum=None,
        all_six_paytable=None,
    )
    assert not any(r.offers(w) for w in ("prime", "pair_bonus", "all_six"))
    rec = record("2c 3d 5h", [seat(1, "As Kd 9c", wagers={"prime": 100})])
    with pytest.raises(SettlementError, match=r"seats\[seat=1\]\.wagers\.prime: this table does not offer"):
        settle(r, rec)


# --- Ante and Play ----------------------------------------------------------------------------------------------


def test_player_beats_a_qualified_dealer() -> None:
    res = settle_round(rules(), record("Qc 7d 4s", [seat(2, "Kh 9c 3d", 1000)]))
    assert outcome(res, 2, "ante") == ("win", 1000)
    assert outcome(res, 2, "play") == ("win", 1000)


def test_player_loses_to_a_qualified_dealer() -> None:
    res = settle_round(rules(), record("8c 8d 4s", [seat(2, "Ah Kc 3d")]))
    assert [(x.wager, x.outcome, x.collected) for x in res] == [("ante", "lose", 500), ("play", "lose", 500)]


def test_dealer_below_queen_high_does_not_qualify() -> None:
    # The example Rules Submission: Ante wins, Play pushes; even a player hand lower than the dealer's.
    res = settle_round(rules(), record("Jc 9d 4s", [seat(2, "Th 8c 3d")]))
    assert outcome(res, 2, "ante") == ("win", 500)
    assert outcome(res, 2, "play") == ("push", 0)
    assert row(res, 2, "play").returned == 500
    res = settle_round(
        rules(dealer_not_qualified={"ante": "push", "play": "push"}), record("Jc 9d 4s", [seat(2, "Th 8c 3d")])
    )
    assert [x.outcome for x in res] == ["push", "push"]


def test_queen_high_qualifies() -> None:
    res = settle_round(rules(), record("Qc 9d 4s", [seat(2, "Jh 8c 3d")]))
    assert [x.outcome for x in res] == ["lose", "lose"]


def test_equal_hands_push() -> None:
    res = settle_round(rules(), record("Qc 9d 4s", [seat(2, "Qh 9c 4d")]))
    assert [(x.outcome, x.note) for x in res] == [("push", "tie with the dealer")] * 2


def test_a_pair_ranks_before_its_kicker() -> None:
    # K-K-2 beats Q-Q-A: the pair's rank decides before the kicker.
    res = settle_round(rules(), record("Qc Qd As", [seat(2, "Kh Kc 2d")]))
    assert outcome(res, 2, "ante") == ("win", 500)


def test_hand_order_comes_from_the_rules_submission() -> None:
    # The example ranks a straight above a flush; a submission ranking the flush higher reverses the result.
    rec = record("9s 7s 3s", [seat(2, "4h 5c 6d")])
    assert outcome(settle_round(rules(), rec), 2, "ante") == ("win", 500)
    order = ["mini_royal", "straight_flush", "three_of_a_kind", "flush", "straight", "pair", "high_card"]
    r = rules(hand_order=order, bad_beat_paytable=None, bad_beat_minimum=None)
    assert outcome(settle_round(r, rec), 2, "ante")[0] == "lose"


def test_ace_two_three_is_placed_by_the_rules() -> None:
    rec = record("Kc Qd Js", [seat(2, "Ah 2c 3d")])
    assert outcome(settle_round(rules(ace_two_three="lowest"), rec), 2, "ante")[0] == "lose"
    assert outcome(settle_round(rules(ace_two_three="second_highest"), rec), 2, "ante")[0] == "win"


def test_a_folded_player_loses_the_ante() -> None:
    res = settle_round(rules(), record("2c 3d 5h", [seat(2, "Ah Kc 3s", folded=True)]))
    assert [(x.wager, x.outcome, x.collected) for x in res] == [("ante", "lose", 500)]


def test_play_must_equal_the_ante() -> None:
    s = seat(2, "Ah Kc 3d", 500)
    s["wagers"]["play"] = 1000
    with pytest.raises(SettlementError, match=r"seats\[seat=2\]\.wagers\.play: 1000 is not the Ante \(500\).*679a"):
        settle(rules(), record("2c 3d 5h", [s]))
    s = seat(2, "Ah Kc 3d", folded=True)
    s["wagers"]["play"] = 500
    with pytest.raises(SettlementError, match="a player who folded made no Play Wager"):
        settle(rules(), record("2c 3d 5h", [s]))


def test_settlement_runs_counterclockwise_from_the_dealers_right() -> None:
    res, meters = settle(rules(), record("2c 3d 5h", [seat(1, "Ah Kc 3s"), seat(5, "9h 8c 6d"), seat(3, "Th 4c 7s")]))
    assert [x.seat for x in res] == [5, 5, 3, 3, 1, 1]
    assert meters == {}


# --- optional wagers --------------------------------------------------------------------------------------------


def test_prime_wins_on_one_color_and_loses_on_mixed() -> None:
    rec = record("Qc 7d 4s", [seat(2, "Kh 9d 3h", wagers={"prime": 200}), seat(1, "Ks 9c 2h", wagers={"prime": 200})])
    res = settle_round(rules(), rec)
    assert (row(res, 2, "prime").hand, outcome(res, 2, "prime")) == ("red", ("win", 600))
    assert outcome(res, 1, "prime") == ("lose", 0)
    assert row(res, 1, "prime").collected == 200


def test_pair_bonus_with_the_fourth_card() -> None:
    rec = record(
        "Qc 7d 4s",
        [
            seat(3, "Kh 9d 3c", fourth_card="9s", wagers={"pair_bonus": 100}),
            seat(2, "5h 5d 5c", fourth_card="Ah", wagers={"pair_bonus": 100}),
            seat(1, "Jh 8d 2c", fourth_card="6s", wagers={"pair_bonus": 100}),
        ],
    )
    res = settle_round(rules(), rec)
    # The example Rules Submission's Pair Bonus: pair 1 to 2, three of a kind 3 to 1 (configs/three-card-prime.toml).
    assert (row(res, 3, "pair_bonus").hand, outcome(res, 3, "pair_bonus")) == ("pair", ("win", 50))
    assert (row(res, 2, "pair_bonus").hand, outcome(res, 2, "pair_bonus")) == ("three_of_a_kind", ("win", 300))
    assert outcome(res, 1, "pair_bonus") == ("lose", 0)
    # The Ante compares only the three-card hand: seat 3's fourth card does not make its pair.
    assert outcome(res, 3, "ante") == ("win", 500)
    assert row(res, 3, "ante").hand == "high_card"


def test_the_fourth_card_is_required_and_only_with_a_pair_bonus() -> None:
    with pytest.raises(SettlementError, match=r"seats\[seat=3\]\.fourth_card: the player placed a Pair Bonus"):
        settle(rules(), record("Qc 7d 4s", [seat(3, "Kh 9d 3c", wagers={"pair_bonus": 100})]))
    with pytest.raises(SettlementError, match=r"seats\[seat=3\]\.fourth_card: 679a.9\(b\) deals a fourth card only"):
        settle(rules(), record("Qc 7d 4s", [seat(3, "Kh 9d 3c", fourth_card="2d")]))


def test_pair_bonus_with_one_community_card() -> None:
    r = rules(pair_bonus_layout="community_card")
    rec = record(
        "Qc 7d 4s",
        [
            seat(3, "Kh 9d 3c", wagers={"pair_bonus": 100}),
            seat(2, "8h 8d Tc", wagers={"pair_bonus": 100}),
            seat(1, "Jh 6d 2c", wagers={"pair_bonus": 100}),
        ],
        pair_bonus_community_card="3s",
    )
    res = settle_round(r, rec)
    assert outcome(res, 3, "pair_bonus") == ("win", 50)  # 3-3 with the community card, 1 to 2
    assert outcome(res, 2, "pair_bonus") == ("win", 50)
    assert outcome(res, 1, "pair_bonus") == ("lose", 0)
    assert row(res, 3, "pair_bonus").paytable == "Rules Submission (601a.2) pair_bonus_paytable (community_card)"


def test_community_layout_must_match_the_record() -> None:
    r = rules(pair_bonus_layout="community_card")
    with pytest.raises(SettlementError, match="pair_bonus_community_card: a player placed a Pair Bonus Wager"):
        settle(r, record("Qc 7d 4s", [seat(3, "Kh 9d 3c", wagers={"pair_bonus": 100})]))
    with pytest.raises(SettlementError, match=r"seats\[seat=3\]\.fourth_card"):
        settle(
            r,
            record(
                "Qc 7d 4s",
                [seat(3, "Kh 9d 3c", fourth_card="5c", wagers={"pair_bonus": 100})],
                pair_bonus_community_card="3s",
            ),
        )
    with pytest.raises(SettlementError, match=r"pair_bonus_community_card: 679a.9\(g\) deals it only"):
        settle(rules(), record("Qc 7d 4s", [seat(3, "Kh 9d 3c")], pair_bonus_community_card="3s"))


def test_bad_beat_pays_on_the_play_wager_when_a_flush_loses() -> None:
    rec = record("Jh Th 9h", [seat(4, "9s 7s 3s", 500), seat(2, "4c 5d 6s", 500), seat(1, "Kc Kd 2s", 500)])
    res = settle_round(rules(), rec)
    assert [(x.wager, x.outcome) for x in res if x.seat == 4] == [
        ("ante", "lose"),
        ("play", "lose"),
        ("bad_beat_bonus", "win"),
    ]
    bb = row(res, 4, "bad_beat_bonus")
    assert (bb.amount, bb.paid, bb.returned, bb.hand, bb.odds) == (0, 1000, 0, "flush", "2 to 1")
    # "Flush or higher" follows hand_order, which ranks the straight above the flush; a pair is below it.
    assert row(res, 2, "bad_beat_bonus").paid == 2500
    assert [x.wager for x in res if x.seat == 1] == ["ante", "play"]
    # A Rules Submission ranking the flush above the straight, with the straight-or-higher table.
    order = ["mini_royal", "straight_flush", "three_of_a_kind", "flush", "straight", "pair", "high_card"]
    table = {**game()["bad_beat_paytable"], "straight": "4 to 1"}
    res = settle_round(rules(hand_order=order, bad_beat_minimum="straight", bad_beat_paytable=table), rec)
    assert (row(res, 2, "bad_beat_bonus").paid, row(res, 4, "bad_beat_bonus").paid) == (2000, 1000)


def test_no_bad_beat_when_the_player_wins_or_folds() -> None:
    res = settle_round(rules(), record("Jh Th 2h", [seat(4, "9s 8s 7s"), seat(3, "9c 7c 3c", folded=True)]))
    assert not [x for x in res if x.wager == "bad_beat_bonus"]


def test_all_six_is_the_players_three_and_the_dealers_three() -> None:
    rec = record(
        "Kc Kd 4s", [seat(3, "Kh 4c 4d", wagers={"all_six": 100}), seat(2, "9h 7c 2d", wagers={"all_six": 100})]
    )
    res = settle_round(rules(), rec)
    assert (row(res, 3, "all_six").hand, outcome(res, 3, "all_six")) == ("full_house", ("win", 2000))
    assert (row(res, 2, "all_six").hand, outcome(res, 2, "all_six")) == ("pair", ("lose", 0))


def test_folded_players_optional_wagers_follow_the_rules_submission() -> None:
    rec = record("Qc 7d 4s", [seat(3, "Kh 9d 3h", folded=True, wagers={"prime": 100})])
    assert outcome(settle_round(rules(), rec), 3, "prime") == ("win", 300)
    res = settle_round(rules(folded_optional_wagers="collected"), rec)
    assert (row(res, 3, "prime").outcome, row(res, 3, "prime").collected) == ("lose", 100)


# --- the record -------------------------------------------------------------------------------------------------


def test_duplicate_cards_are_refused() -> None:
    with pytest.raises(CardError, match=r"duplicate card.*Kh"):
        settle(rules(), record("Kh 7d 4s", [seat(3, "Kh 9d 3c")]))
    with pytest.raises(CardError, match=r"duplicate card.*2c"):
        settle(
            rules(),
            record("Qh 7d 4s", [seat(3, "Kh 9d 3c", fourth_card="2c", wagers={"pair_bonus": 1}), seat(2, "Kc 9h 2c")]),
        )


def test_three_cards_each() -> None:
    with pytest.raises(SettlementError, match=r"seats\[seat=3\]\.cards: 2 cards"):
        settle(rules(), record("Kh 7d 4s", [seat(3, "Ks 9d")]))
    with pytest.raises(SettlementError, match="dealer: 4 cards"):
        settle(rules(), record("Kh 7d 4s 2c", [seat(3, "Ks 9d 3c")]))


def test_unknown_wagers_are_refused() -> None:
    with pytest.raises(ValidationError, match="unknown wager"):
        record("Kh 7d 4s", [seat(3, "Ks 9d 3c", wagers={"raise": 100})])


# --- the documented examples ------------------------------------------------------------------------------------


def example(case: str) -> ThreeCardPrimeRound:
    path = ROOT / "docs" / "examples" / f"three-card-prime--{case}.settle.json"
    return ThreeCardPrimeRound.model_validate(json.loads(path.read_text()))


def test_example_fourth_card_bonuses() -> None:
    res, meters = settle(rules(), example("fourth-card-bonuses"))
    assert res[0].seat == 6
    assert outcome(res, 1, "ante") == ("win", 1000)  # mini-royal beats the dealer's straight flush
    assert outcome(res, 1, "prime") == ("win", 1500)
    assert (row(res, 1, "pair_bonus").hand, outcome(res, 1, "pair_bonus")) == ("mini_royal", ("win", 5_000))
    assert (row(res, 1, "all_six").hand, outcome(res, 1, "all_six")) == ("six_card_royal_flush", ("win", 100_000))
    assert row(res, 4, "bad_beat_bonus").paid == 1000
    assert outcome(res, 6, "ante") == ("lose", 0)
    assert outcome(res, 6, "pair_bonus") == ("win", 100)  # a folded player's Pair Bonus still plays here
    assert meters == {}


def test_example_dealer_not_qualified() -> None:
    res = settle_round(rules(), example("dealer-not-qualified"))
    assert [(x.seat, x.wager, x.outcome, x.paid) for x in res] == [
        (3, "ante", "win", 500),
        (3, "play", "push", 0),
        (3, "prime", "lose", 0),
        (2, "ante", "win", 1000),
        (2, "play", "push", 0),
        (2, "pair_bonus", "win", 250),
    ]
