"""Every procedure of issue 13, live: `tablectl simulate` plays docs/examples scenarios through the real reference
drivers, the device simulators on real pseudo-terminals and a real journal, and `tablectl settle --journal` settles the
journaled rounds again. Players on several boxes (655a.11(i)(1)(v), 683a.12(f)), exposed community cards (683a.13(d)),
stub counts in every chapter (643a.10(d)-(f), 683a.8(e)-(g), 684a.10(d)-(f)), 683a.8 and 683a.9 dealing and the
fallback between methods (683a.13(g)), per-wager limits (683a.7(d)), and the scenario vocabulary: panel keys, signed
commands, ticks of the clock, lone optional wagers.

Both commands run through main() in this process (tests/tablectl_runs.here): the tests read their events, output and
exit status, which a child interpreter (half a second and more each to start and import the verb) would not change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.sim_devices import ROOT
from tests.tablectl_runs import here

pytestmark = pytest.mark.e2e

EXAMPLES = ROOT / "docs" / "examples"
Event = dict[str, Any]


def simulate(config: Path, scenario: Path, *extra: str) -> list[Event]:
    proc = here("simulate", "--config", str(config), "--scenario", str(scenario), *extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines()]


def example(config: str, case: str, *extra: str) -> list[Event]:
    return simulate(ROOT / "configs" / f"{config}.toml", EXAMPLES / f"{config}--{case}.scenario.toml", *extra)


def in_round(e: Event, round_no: int) -> bool:
    return bool((e["round_id"] or "").endswith(f"r{round_no:06d}"))


def of(events: list[Event], type_: str, round_no: int | None = None) -> list[Event]:
    return [e for e in events if e["type"] == type_ and (round_no is None or in_round(e, round_no))]


def settle_journaled(config: Path, journal: Path, round_id: str) -> dict[str, Any]:
    proc = here("settle", "--config", str(config), "--journal", str(journal), "--round", round_id)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def with_game(tmp_path: Path, config: str, **settings: object) -> Path:
    """configs/<config>.toml with these [game] settings added (TOML values as Python writes them here)."""
    text = (ROOT / "configs" / f"{config}.toml").read_text()
    lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
    path = tmp_path / f"{config}.toml"
    path.write_text(text.replace("[game]\n", "[game]\n" + lines, 1))
    return path


# -- item 1: one player on several boxes -------------------------------------------------------------------------


def test_no_envy_bonus_for_the_players_own_box_live_655a_11_i_1_v() -> None:
    """The issue's case, live: seats 3 and 4 bound on the dealer panel; seat 3's straight flush pays seat 1 the $300
    Envy Bonus (655a.12(c)(5)) and seat 4 none (655a.11(i)(1)(v)); the hit is validated by a signed command."""
    events = example("mississippi-stud-progressive", "envy-bound-player")
    [bound] = of(events, "player.bound")
    assert (bound["rule"], bound["payload"]) == ("655a.7(e)", {"player": 1, "seats": [3, 4], "by": "dealer"})
    envy = [(e["payload"]["seat"], e["payload"]["paid"], e["rule"]) for e in of(events, "envy_bonus.settled")]
    assert envy == [(1, 30_000, "655a.11(i)(1)(v)")]
    assert of(events, "no_more_bets")[0]["payload"]["bound"] == {"1": [3, 4]}
    record = of(events, "round.recorded")[0]["payload"]["record"]
    assert {s["seat"]: s.get("player") for s in record["seats"]} == {1: None, 3: "1", 4: "1"}
    assert [e["payload"]["seat"] for e in of(events, "progressive.paid")] == [3]


def test_the_683a_12_f_limit_is_per_player_live_and_settle_reads_the_journal(tmp_path: Path) -> None:
    """683a.12(f), 683a.7(e): a floorperson binds seats 3 and 4 by a signed bind_player; their royal and straight
    flushes share one $50,000 limit. `tablectl settle --journal` recomputes the round from the journal with the same
    binding and pays the same."""
    journal = tmp_path / "cajun.sqlite"
    events = example("cajun-stud", "payout-limit-bound-player", "--journal", str(journal))
    assert [(e["payload"]["verb"], e["payload"]["role"]) for e in of(events, "command.accepted")] == [
        ("bind_player", "floorperson")
    ]
    assert of(events, "player.bound")[0]["payload"]["seats"] == [3, 4]
    live = {
        e["payload"]["seat"]: (e["payload"]["paid"], e["payload"]["payout_limit_rule"])
        for e in of(events, "hand.settled")
    }
    assert live == {6: (200_000, None), 4: (2_000_000, None), 3: (3_000_000, "683a.12(f)")}
    again = settle_journaled(ROOT / "configs/cajun-stud.toml", journal, of(events, "round.recorded")[0]["round_id"])
    assert {s["seat"]: s["paid"] for s in again["seats"]} == {6: 200_000, 4: 2_000_000, 3: 3_000_000}
    assert "683a.12(f) payout limit" in next(s for s in again["seats"] if s["seat"] == 3)["wagers"][-1]["note"]


# -- item 2: exposed community cards -------------------------------------------------------------------------------


def test_683a_13_d_live_settles_the_optional_wagers_and_the_record_recomputes(tmp_path: Path) -> None:
    """683a.13(d) from the dealer panel: every Ante and Raise Wager back (seat 4's Ante, collected at its fold, too),
    the Pocket Bonus, Board Bonus, Lo Ball and All-Six Bonus Wagers settled under 683a.11(i); seat 6's lone Pocket
    Bonus Wager handed back (683a.7(d)(1)); the journaled record recomputes the same with `tablectl settle`."""
    journal = tmp_path / "cajun.sqlite"
    events = example("cajun-stud", "exposed-community", "--journal", str(journal))
    assert [(e["payload"]["seat"], e["rule"]) for e in of(events, "wager.returned")] == [(6, "683a.7(d)(2)")]
    [void] = of(events, "round.voided")
    assert void["rule"] == "683a.13(d)"
    assert void["payload"]["returned"] == {
        "2": {"ante": 500, "raise_1": 1000},
        "4": {"ante": 500},
        "5": {"ante": 1000, "raise_1": 1000},
    }
    settled = [
        (e["type"], e["payload"]["seat"], e["rule"], e["payload"]["paid"])
        for e in events
        if e["type"].endswith(".settled")
    ]
    assert settled == [
        ("lo_ball.settled", 4, "683a.11(i)(3)(i)", 0),
        ("pocket_bonus.settled", 2, "683a.11(i)(1)(ii)", 15_000),
        ("board_bonus.settled", 2, "683a.11(i)(2)(ii)", 500),
        ("all_six_bonus.settled", 2, "683a.11(i)(4)(ii)", 500),
    ]
    [recorded] = of(events, "round.recorded")
    assert recorded["payload"]["record"]["community_exposed"] is True
    again = settle_journaled(ROOT / "configs/cajun-stud.toml", journal, recorded["round_id"])
    optional = [(w["wager"], w["paid"]) for s in again["seats"] for w in s["wagers"] if w["rule"] != "683a.13(d)"]
    assert optional == [("lo_ball", 0), ("pocket_bonus", 15_000), ("board_bonus", 500), ("all_six_bonus", 500)]
    assert again["totals"]["returned"] == 4000 + 500 + 500 + 100  # Antes and Raises, and the three winning wagers


@pytest.mark.parametrize(("config", "rule"), [("demo", "655a.13(d)"), ("let-it-ride", "643a.13(d)")])
def test_every_chapter_with_community_cards_voids_on_an_exposure_live(config: str, rule: str) -> None:
    """655a.13(d), 643a.13(d): the hands are void and every wager returned (the progressive contributions too)."""
    events = example(config, "exposed-community" if config == "demo" else "irregularities")
    assert of(events, "round.voided", 1)[0]["rule"] == rule
    assert not [e for e in events if e["type"].endswith(".settled") and in_round(e, 1)]


# -- items 3 and 4: stub counts, 683a.8 and 683a.9 dealing, the fallback ----------------------------------------------


def test_683a_8_manual_shoe_all_six_first_stub_counts_and_irregularities_live() -> None:
    """683a.8(c), (d): the All-Six Bonus cards first, then the players', then the community; 683a.8(e)-(g): the stub
    counted every second round, a misdeal voids; 683a.13(b) a card drawn in error; 683a.13(d) while dealing."""
    events = example("cajun-stud-manual-shoe", "all-six-and-stub-count")
    to = [e["payload"]["to"] for e in of(events, "card.dealt", 1)]
    assert to == ["all_six_bonus"] * 4 + ["seat:1", "seat:3", "seat:1", "seat:3"] + ["community"] * 3
    assert {e["rule"] for e in of(events, "card.dealt", 1)} == {"683a.8(c)"}
    assert of(events, "stub.discarded", 1)[0]["rule"] == "683a.8(d)"
    six = of(events, "all_six_bonus.settled", 1)[0]
    assert (six["payload"]["hand"], six["payload"]["paid"]) == ("royal_flush", 100_000)
    assert [(e["type"], e["rule"]) for e in events if e["type"].startswith("stub") and in_round(e, 2)] == [
        ("stub_count.requested", "683a.8(e)"),
        ("stub_count.mismatch", "683a.8(g)"),
    ]
    assert of(events, "round.voided", 2)[0]["rule"] == "683a.8(g)"
    assert of(events, "card.drawn_in_error", 3)[0]["rule"] == "683a.13(b)"
    assert of(events, "stub.counted", 3)[0]["rule"] == "683a.8(f)"
    assert [
        e["type"]
        for e in events
        if in_round(e, 4)
        and e["type"] in ("community.exposed", "round.voided", "board_bonus.settled", "all_six_bonus.settled")
    ] == [
        "community.exposed",
        "round.voided",
        "board_bonus.settled",
        "all_six_bonus.settled",
    ]
    assert [e["payload"]["paid"] for e in events if e["type"].endswith("bonus.settled") and in_round(e, 4)] == [
        100,
        500,
    ]


def test_683a_9_dealt_from_the_hand_live(tmp_path: Path) -> None:
    """683a.9(b), (c): from the hand, the All-Six Bonus cards first as from a manual shoe, then the stub."""
    config = with_game(tmp_path, "cajun-stud", dealing_method="hand")
    scenario = tmp_path / "hand.scenario.toml"
    scenario.write_text(
        '[[round]]\ndeck = "Ac Kc Qc 5h  Jc 2s Tc 2d  9c 9h 2c"\n'
        "wagers = { 1 = { ante = 500, all_six_bonus = 100 }, 3 = { ante = 1000 } }\n"
    )
    events = simulate(config, scenario)
    assert [(e["type"], e["rule"]) for e in events if e["rule"] and e["rule"].startswith("683a.9")] == [
        ("no_more_bets", "683a.9(a)(3)"),
        ("lockout.confirmed", "683a.9(a)(3)"),
        ("deal.started", "683a.9(b)"),
        ("deal.awaiting_dealer", "683a.9(b)"),
        ("all_six_bonus.dealt", "683a.9(b)"),
        ("cards.dealt", "683a.9(b)"),
        ("cards.dealt", "683a.9(b)"),
        ("community.dealt", "683a.9(b)"),
        ("stub.discarded", "683a.9(c)"),
    ]
    assert of(events, "all_six_bonus.dealt")[0]["sealed"]["cards"] == ["Ac", "Kc", "Qc", "5h"]


def test_683a_13_g_the_manual_shoe_takes_over_and_the_shoe_returns_live() -> None:
    events = example("cajun-stud", "shoe-out-of-order")
    assert of(events, "round.voided", 1)[0]["rule"] == "683a.13(f)"
    [marked] = of(events, "device.out_of_order")
    assert (marked["rule"], marked["payload"]["takes_over"]) == ("683a.13(g)", "manual_shoe")
    assert {e["rule"] for e in of(events, "card.dealt", 2)} == {"683a.8(c)"}
    assert [e["payload"]["to"] for e in of(events, "card.dealt", 2)][:4] == ["all_six_bonus"] * 4
    assert of(events, "device.back_in_service")[0]["payload"]["dealing_method"] == "automated_shoe"
    assert {e["rule"] for e in of(events, "cards.dealt", 3)} == {"683a.10(b)"}
    assert len(of(events, "round.completed")) == 2


@pytest.mark.parametrize(
    ("config", "chapter", "wagers"),
    [
        ("let-it-ride", "643a", "{ bet_1 = 500, bet_2 = 500, bet_3 = 500 }"),
        ("cajun-stud", "683a", "{ ante = 500 }"),
        ("chapter-684a", "684a", "{ ante = 500, odds = 500 }"),
    ],
)
def test_stub_counts_without_a_counting_shuffler_live(tmp_path: Path, config: str, chapter: str, wagers: str) -> None:
    """643a.10(d)-(f), 683a.10(d)-(f), 684a.10(d)-(f): counted every round here; round 1 makes 52, round 2 is miscounted
    and not a misdeal: void, the deck removed, the table blocked for a floorperson (the scenario ends there)."""
    path = with_game(tmp_path, config, shuffler_counts=False, stub_count_every=1)
    scenario = tmp_path / "stub.scenario.toml"
    scenario.write_text(
        f"[[round]]\nwagers = {{ 1 = {wagers} }}\n[[round]]\nwagers = {{ 1 = {wagers} }}\nstub_count = 3\n"
    )
    events = simulate(path, scenario)
    assert [(e["type"], e["rule"]) for e in events if e["type"] in ("stub_count.requested", "stub.counted")][:2] == [
        ("stub_count.requested", f"{chapter}.10(d)"),
        ("stub.counted", f"{chapter}.10(e)"),
    ]
    assert [(e["type"], e["rule"]) for e in of(events, "deck.removed") + of(events, "round.voided")] == [
        ("deck.removed", f"{chapter}.10(f)"),
        ("round.voided", f"{chapter}.10(f)"),
    ]
    assert events[-1]["type"] == "table.closed"


# -- item 6: per-wager limits ------------------------------------------------------------------------------------


def test_per_wager_limits_live_683a_7_d(tmp_path: Path) -> None:
    """The issue's case: a $1 All-Six Bonus Wager taken at the posted $1 minimum (configs/cajun-stud.toml), 50 cents
    refused; on a table posting no limits of its own the Ante's $5 minimum refuses the $1 wager."""
    scenario = tmp_path / "limits.scenario.toml"
    scenario.write_text(
        "[[round]]\nwagers = { 2 = { ante = 500, all_six_bonus = 100 } }\n"
        '[[round.actions]]\nat = "betting.opened"\nplace = { seat = 3, spot = "all_six_bonus", amount = 50 }\n'
    )
    events = simulate(ROOT / "configs/cajun-stud.toml", scenario)
    taken = [(e["payload"]["seat"], e["payload"]["amount"], e["rule"]) for e in of(events, "wager.accepted")]
    assert (2, 100, "683a.7(d)(5)") in taken
    [refused] = of(events, "wager.rejected")
    assert (refused["payload"]["amount"], refused["rule"]) == (50, "683a.7(d)(5)")
    assert "outside the table limits $1.00 to $25.00" in refused["payload"]["reason"]
    plain = tmp_path / "plain.toml"
    text = (ROOT / "configs/cajun-stud.toml").read_text()
    plain.write_text(text[: text.index("[game.wager_limits]")] + text[text.index("[mqtt]") :])
    scenario.write_text(
        "[[round]]\nwagers = { 2 = { ante = 500 } }\n"
        '[[round.actions]]\nat = "betting.opened"\nplace = { seat = 2, spot = "all_six_bonus", amount = 100 }\n'
    )
    [refused] = of(simulate(plain, scenario), "wager.rejected")
    assert "outside the table limits $5.00 to $100.00" in refused["payload"]["reason"]


# -- item 5: the rest of the vocabulary -------------------------------------------------------------------------------


def test_ticks_of_the_clock_and_a_signed_verify_deck_live_655a_3_c_5_f() -> None:
    events = example("demo", "clock-deck-change-and-idle")
    due = of(events, "deck.change_due")
    assert [(e["rule"], e["round_id"]) for e in due] == [("655a.3(c)(2)", "demo-ms-1-r000001")]
    assert [e["rule"] for e in of(events, "cards.inspection_due")] == ["655a.5(f)"]
    assert [(e["type"], e["rule"]) for e in events if e["type"] in ("deck.verified", "cards.inspected")] == [
        ("deck.verified", "655a.4(a)"),
        ("cards.inspected", "655a.5(f)"),
    ]
    assert [e["payload"]["round_no"] for e in of(events, "round.completed")] == [1, 2]


def test_679a_lone_bonus_and_wrong_card_count_live() -> None:
    events = example("three-card-prime", "lone-bonus-and-wrong-count")
    assert [(e["payload"]["seat"], e["rule"]) for e in of(events, "wager.returned")] == [(3, "679a.7(d)(3)")]
    assert of(events, "round.voided", 1)[0]["rule"] == "679a.9(f)"
    assert of(events, "round.completed", 2)


def test_684a_shoe_out_of_order_without_a_fallback_and_no_community_card_live() -> None:
    events = example("chapter-684a", "shoe-out-of-order")
    ignored = [e["payload"]["reason"] for e in of(events, "input.ignored")]
    assert "chapter 684a deals no community card" in ignored
    assert of(events, "table.blocked")[0]["payload"]["reasons"] == {
        "no_method": "the shoe is out of order and no other dealing method is configured"
    }
    assert of(events, "device.back_in_service") and len(of(events, "round.completed")) == 2


def test_643a_irregularities_and_a_bound_player_live() -> None:
    events = example("let-it-ride", "irregularities")
    assert of(events, "round.voided", 2)[0]["rule"] == "643a.13(c)"
    assert [(e["payload"]["seat"], e["rule"]) for e in of(events, "wager.returned")] == [(6, "643a.7(f)")]
    assert of(events, "player.bound")[0]["rule"] == "643a.7(k)"
    assert len(of(events, "round.completed")) == 1
