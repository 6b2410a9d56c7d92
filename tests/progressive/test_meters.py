"""The meter model on amounts typed in from the regulation text: contributions, hits in turn, reseeds, voids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.core.events import DomainEvent
from controller.games.let_it_ride.progressives import ConfiguredMeter
from controller.games.mississippi_stud.progressives import (
    mississippi_stud_five_card_hand_bonus,
    mississippi_stud_progressive,
)
from controller.games.mississippi_stud.record import MississippiStudRound
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.settle import settle
from controller.progressive.meters import close_round, contribute, hit, problems, reset, seed_missing, void_round
from controller.progressive.model import (
    MICRO,
    FixedFromMeter,
    LevelMeters,
    MeterError,
    Meters,
    PercentOfMeter,
    apply,
    replay,
)
from controller.progressive.parameters import ProgressiveParameters, TableProgressives


def table(*progressives: ProgressiveParameters) -> TableProgressives:
    return TableProgressives(progressives=progressives)


def seeded(params: TableProgressives) -> tuple[Meters, list[DomainEvent]]:
    return seed_missing(Meters(), params)


def at(params: TableProgressives, shown: dict[str, int]) -> Meters:
    """Meters standing at these displays (as if the house had seeded them there), for hits at known amounts."""
    return Meters(
        {name: LevelMeters(name, display_micro=c * MICRO, house_funded_micro=c * MICRO) for name, c in shown.items()},
        {},
        0,
    )


def through_json(events: list[DomainEvent]) -> list[DomainEvent]:
    """What the journal gives back: the events as JSON and back, so replay uses only what was written."""
    text = json.dumps([{"type": e.type, "rule": e.rule, "payload": e.payload, "round_id": e.round_id} for e in events])
    return [DomainEvent(d["type"], d["rule"], d["payload"], d["round_id"]) for d in json.loads(text)]


PAYTABLE_D_1 = table(mississippi_stud_progressive("D", 100))


def test_seeds_are_10000_1000_and_250_for_1_of_the_wager() -> None:
    # 655a.12(c)(3) paytable D, $1 Progressive Payout Wager: mega $10,000, major $1,000, minor $250.
    meters, events = seeded(PAYTABLE_D_1)
    assert meters.display() == {"mega": 1_000_000, "major": 100_000, "minor": 25_000}
    assert [(e.type, e.rule, e.payload["level"]) for e in events] == [
        ("meter.seeded", "655a.12(c)(3) paytable D", "mega"),
        ("meter.seeded", "655a.12(c)(3) paytable D", "major"),
        ("meter.seeded", "655a.12(c)(3) paytable D", "minor"),
    ]
    assert all(lv.house_funded_micro == lv.display_micro for lv in meters.levels.values())
    # $5 wager: five times as much.
    five = seeded(table(mississippi_stud_progressive("D", 500)))[0]
    assert five.display() == {"mega": 5_000_000, "major": 500_000, "minor": 125_000}
    # Seeding again adds nothing: the house's money is counted once.
    assert seed_missing(meters, PAYTABLE_D_1) == (meters, [])


def test_a_dollar_wager_adds_10_8_and_3_cents_under_paytable_d() -> None:
    """605a.7(a)(1): the meter the players see increases with each wager, by the rate, to the cent."""
    meters, _ = seeded(PAYTABLE_D_1)
    meters, events = contribute(meters, PAYTABLE_D_1, "progressive", 100, seat=3, round_id="r1")
    assert meters.display() == {"mega": 1_000_010, "major": 100_008, "minor": 25_003}
    assert [e.payload["delta"]["display_micro"] for e in events] == [10 * MICRO, 8 * MICRO, 3 * MICRO]
    assert {e.type for e in events} == {"meter.contributed"} and {e.round_id for e in events} == {"r1"}
    assert [e.payload["primary_percent"] for e in events] == ["10", "8", "3"]
    assert (events[0].payload["meter_before_cents"], events[0].payload["meter_after_cents"]) == (1_000_000, 1_000_010)
    mega = meters.levels["mega"]
    assert (mega.in_count, mega.in_cents, mega.contributed_micro) == (1, 100, 10 * MICRO)


def test_fractions_of_a_cent_are_carried_not_lost() -> None:
    # A Rules-Submission rate of 4.25 % (643a.12(e)(3) leaves it to the certificate holder): 4.25 cents a dollar.
    five_card = ConfiguredMeter(
        level="five_card_progressive", initial_cents=1_000_000, reset_cents=1_000_000, rate_percent=4.25
    ).parameters()
    params = table(ProgressiveParameters(wager="five_card_progressive", rule="643a.12(e)(3)", levels=(five_card,)))
    meters, _ = seeded(params)
    shown = []
    for i in range(4):
        meters, _ = contribute(meters, params, "five_card_progressive", 100, seat=1, round_id=f"r{i}")
        shown.append(meters.display()["five_card_progressive"] - 1_000_000)
    assert shown == [4, 8, 12, 17]  # 4.25, 8.5, 12.75, 17.0 cents
    assert meters.levels["five_card_progressive"].display_micro == 1_000_000 * MICRO + 17 * MICRO


def test_two_hits_of_a_level_in_one_round_are_paid_in_turn() -> None:
    """Seat 6 is paid first (655a.11(h)), the major reseeds and seat 3 is paid that."""
    # Paytable B: a straight flush wins 100% of the major (655a.12(c)(1)). Seat 6 is paid first (655a.11(h)),
    # the major reseeds to $1,000 for 1 (655a.12(c)(3)) and seat 3 is paid that (655a.12(c)(4)).
    params = table(mississippi_stud_progressive("B", 100))
    meters = at(params, {"mega": 1_250_000, "major": 180_000})
    meters, paid6, events6 = hit(
        meters, params, "major", PercentOfMeter(100), seat=6, round_id="r7", rule="655a.11(i)(1)(iv)"
    )
    meters, paid3, _ = hit(
        meters, params, "major", PercentOfMeter(100), seat=3, round_id="r7", rule="655a.11(i)(1)(iv)"
    )
    assert (paid6, paid3) == (180_000, 100_000)
    assert meters.display() == {"mega": 1_250_000, "major": 100_000}
    assert [e.type for e in events6] == ["meter.hit", "meter.reseeded"]
    assert events6[0].payload["seat"] == 6 and events6[0].rule == "655a.11(i)(1)(iv)"
    assert events6[1].rule == "655a.12(c)(3) paytable B" and events6[1].payload["house_funded_micro"] == 100_000 * MICRO
    major = meters.levels["major"]
    assert (major.hits, major.wins_cents, major.paid_by_attendant_cents, major.cycle) == (2, 280_000, 280_000, 2), (
        "605a.7(a)(3) and 605a.7(a)(4): the attendant's meter and the cumulative payout meter hold both hits"
    )
    assert problems(meters, params) == []


def test_the_model_pays_what_settlement_pays() -> None:
    # docs/examples/mississippi-stud-progressive--two-hits-and-envy: two straight flushes under paytable D.
    rules = MississippiStudRules.model_validate({"chapter": "655a", "progressive_paytable": "D", "adjacent_boxes": 2})
    example = Path("docs/examples/mississippi-stud-progressive--two-hits-and-envy.settle.json")
    record = MississippiStudRound.model_validate(json.loads(example.read_text()))
    rows, after = settle(rules, record)
    settled = [
        r.paid + r.returned
        for r in rows
        if r.wager == "progressive" and r.outcome == "win" and r.odds and "meter" in r.odds
    ]
    params = table(mississippi_stud_progressive("D", 100))
    meters = at(params, dict(record.meters))
    paid = []
    for seat in (6, 3):  # the straight flushes, counterclockwise
        meters, p, _ = hit(
            meters, params, "major", PercentOfMeter(100), seat=seat, round_id=record.round_id, rule="655a.11(i)(1)(iv)"
        )
        paid.append(p)
    assert paid == settled == [180_000, 100_000]
    assert meters.display() == after


def test_ten_percent_then_royal_in_one_round_under_paytable_a() -> None:
    params = table(mississippi_stud_progressive("A", 100))
    meters = at(params, {"progressive": 1_234_567})
    meters, paid_sf, _ = hit(
        meters, params, "progressive", PercentOfMeter(10), seat=5, round_id="r", rule="655a.11(i)(1)(iv)"
    )
    assert (paid_sf, meters.display()["progressive"]) == (123_456, 1_111_111)  # 10 % in whole cents
    meters, paid_royal, events = hit(
        meters, params, "progressive", PercentOfMeter(100), seat=2, round_id="r", rule="655a.11(i)(1)(iv)"
    )
    assert (paid_royal, meters.display()["progressive"]) == (1_111_111, 1_000_000)
    assert [e.type for e in events] == ["meter.hit", "meter.reseeded"]


def test_five_card_hand_bonus_reseeds_at_0_from_its_8_percent_reserve() -> None:
    """655a.12(e)(4): seed $10,000 for 1, reseed $0, primary 13 %, reserve 8 %."""
    params = table(mississippi_stud_five_card_hand_bonus(100))
    meters, _ = seeded(params)
    assert meters.display() == {"five_card_hand_bonus": 1_000_000}
    for i in range(50):
        meters, _ = contribute(meters, params, "five_card_hand_bonus", 100, seat=1 + i % 6, round_id=f"r{i}")
    lv = meters.levels["five_card_hand_bonus"]
    assert (lv.display_cents, lv.reserve_micro) == (1_000_000 + 50 * 13, 50 * 8 * MICRO)
    meters, paid, events = hit(
        meters, params, "five_card_hand_bonus", PercentOfMeter(100), seat=4, round_id="r49", rule="655a.11(i)(3)(iii)"
    )
    assert paid == 1_000_650
    # The reserve ($4.00) becomes the new meter; the house adds nothing to a $0 reseed.
    assert meters.display() == {"five_card_hand_bonus": 400}
    assert events[1].payload["from_reserve_micro"] == 400 * MICRO and events[1].payload["house_funded_micro"] == 0
    assert meters.levels["five_card_hand_bonus"].reserve_micro == 0


def test_reserve_short_of_the_reseed_is_topped_up_by_the_house() -> None:
    meter = ConfiguredMeter(
        level="three_card_progressive", initial_cents=100_000, reset_cents=100_000, rate_percent=15, reserve_percent=5
    ).parameters()
    params = table(ProgressiveParameters(wager="three_card_progressive", rule="643a.12(d)(3)", levels=(meter,)))
    meters, _ = seeded(params)
    meters, _ = contribute(meters, params, "three_card_progressive", 500, seat=2, round_id="r1")  # 75c + 25c reserve
    meters, paid, events = hit(
        meters,
        params,
        "three_card_progressive",
        PercentOfMeter(100),
        seat=2,
        round_id="r1",
        rule="643a.11(f)(3)(iii)(D)",
    )
    assert paid == 100_075 and meters.display() == {"three_card_progressive": 100_000}
    assert (events[1].payload["from_reserve_micro"], events[1].payload["house_funded_micro"]) == (
        25 * MICRO,
        (100_000 - 25) * MICRO,
    )


def test_limit_sends_the_rest_to_overflow() -> None:
    params = table(mississippi_stud_progressive("A", 100, limits_cents={"progressive": 1_000_050}))
    meters, _ = seeded(params)
    for i in range(3):  # 21c each: 1_000_021, 1_000_042, then 8c to the display and 13c to overflow
        meters, _ = contribute(meters, params, "progressive", 100, seat=1, round_id=f"r{i}")
    lv = meters.levels["progressive"]
    assert (lv.display_cents, lv.overflow_micro) == (1_000_050, 13 * MICRO)
    meters, events = void_round(meters, "r2", rule="655a.13(e)")
    lv = meters.levels["progressive"]
    assert (lv.display_cents, lv.overflow_micro, lv.in_count, lv.reversed_count) == (1_000_042, 0, 2, 1)
    assert events[0].type == "meter.contributions_reversed" and events[0].rule == "655a.13(e)"


def test_void_reverses_exactly_and_only_its_own_round() -> None:
    meters0, _ = seeded(PAYTABLE_D_1)
    meters, _ = contribute(meters0, PAYTABLE_D_1, "progressive", 100, seat=1, round_id="r1")
    meters, _ = close_round(meters, "r1")
    after_r1 = meters
    meters, _ = contribute(meters, PAYTABLE_D_1, "progressive", 500, seat=2, round_id="r2")
    meters, _ = contribute(meters, PAYTABLE_D_1, "progressive", 100, seat=4, round_id="r2")
    meters, events = void_round(meters, "r2", rule="655a.13(d)")
    assert [e.payload["level"] for e in events] == ["mega", "major", "minor"]
    assert {
        name: (lv.display_micro, lv.contributed_micro, lv.in_count, lv.in_cents) for name, lv in meters.levels.items()
    } == {
        name: (lv.display_micro, lv.contributed_micro, lv.in_count, lv.in_cents) for name, lv in after_r1.levels.items()
    }
    assert meters.levels["mega"].reversed_cents == 600 and meters.open_rounds == {}
    # A second void of the same round, or a void of a settled round, takes nothing back.
    assert void_round(meters, "r2", rule="655a.13(d)") == (meters, [])
    assert void_round(meters, "r1", rule="655a.13(d)") == (meters, [])


def test_void_after_a_hit_of_the_level_is_refused() -> None:
    meters, _ = seeded(PAYTABLE_D_1)
    meters, _ = contribute(meters, PAYTABLE_D_1, "progressive", 100, seat=1, round_id="r1")
    meters, _, _ = hit(
        meters, PAYTABLE_D_1, "minor", PercentOfMeter(100), seat=1, round_id="r1", rule="655a.11(i)(1)(iv)"
    )
    with pytest.raises(MeterError, match="minor meter has paid a hit since"):
        void_round(meters, "r1", rule="655a.13(d)")


def test_audited_reset_moves_the_display_to_removed() -> None:
    meters, _ = seeded(PAYTABLE_D_1)
    meters, _ = contribute(meters, PAYTABLE_D_1, "progressive", 100, seat=1, round_id="r1")
    with pytest.raises(MeterError, match="reason"):
        reset(meters, PAYTABLE_D_1, "mega", reason=" ", authorised_by="fp-7")
    meters, events = reset(meters, PAYTABLE_D_1, "mega", reason="meter fault, ticket 42", authorised_by="fp-7")
    assert [e.type for e in events] == ["meter.reset", "meter.reseeded"] and events[0].rule == "605a.7(a)(5)"
    assert meters.levels["mega"].removed_micro == 1_000_010 * MICRO and meters.display()["mega"] == 1_000_000
    assert problems(meters, PAYTABLE_D_1) == []


def test_fixed_award_and_bad_awards() -> None:
    meters = at(PAYTABLE_D_1, {"mega": 1_000_000, "major": 100_000, "minor": 25_000})
    meters, paid, _ = hit(
        meters, PAYTABLE_D_1, "minor", FixedFromMeter(5_000), seat=1, round_id="r", rule="test", paid_by="system"
    )
    assert paid == 5_000 and meters.display()["minor"] == 20_000
    by = (meters.levels["minor"].paid_by_system_cents, meters.levels["minor"].paid_by_attendant_cents)
    assert by == (5_000, 0), "605a.7(a)(2): an award the system pays directly is on its own meter"
    with pytest.raises(MeterError, match="more than the meter"):
        hit(meters, PAYTABLE_D_1, "minor", FixedFromMeter(20_001), seat=1, round_id="r", rule="test")
    for bad in (0, 101, True):
        with pytest.raises(MeterError, match="whole percent from 1 to 100"):
            PercentOfMeter(bad)
    with pytest.raises(MeterError, match="above 0"):
        contribute(meters, PAYTABLE_D_1, "progressive", 0, seat=1, round_id="r")
    with pytest.raises(ValueError, match="feeds no progressive meter"):
        contribute(meters, PAYTABLE_D_1, "ante", 100, seat=1, round_id="r")
    with pytest.raises(MeterError, match="has not been seeded"):
        contribute(Meters(), PAYTABLE_D_1, "progressive", 100, seat=1, round_id="r")


def test_events_replay_to_the_same_meters_and_refuse_gaps_and_forgeries() -> None:
    """605a.7(a)(6): the meters change only through their events; a gap or a forged contribution is refused."""
    meters, log = seeded(PAYTABLE_D_1)
    for step in range(3):
        meters, events = contribute(meters, PAYTABLE_D_1, "progressive", 100, seat=step + 1, round_id="r1")
        log += events
    meters, _, events = hit(
        meters, PAYTABLE_D_1, "major", PercentOfMeter(100), seat=3, round_id="r1", rule="655a.11(i)(1)(iv)"
    )
    log += events
    meters, events = close_round(meters, "r1")
    log += events
    assert replay(through_json(log)) == meters
    with pytest.raises(MeterError, match="missing or repeated"):
        replay(log[:4] + log[5:])
    with pytest.raises(MeterError, match="missing or repeated"):
        replay(log[:5] + log[4:])
    # No alteration of the meters but through a hit, an audited reset or a void's reversal.
    forged = DomainEvent(
        "meter.contributed", "x", {"seq": meters.seq + 1, "level": "mega", "delta": {"display_micro": -1}}, "r9"
    )
    with pytest.raises(MeterError, match="only a hit, an audited reset or a void"):
        apply(meters, forged)
    assert apply(meters, DomainEvent("round.voided", "655a.13(d)", {})) is meters


def test_problems_name_a_meter_the_config_dropped() -> None:
    meters, _ = seeded(table(mississippi_stud_progressive("C", 100)))
    found = problems(meters, table(mississippi_stud_progressive("B", 100)))
    assert found == [
        "meter 'minor' holds 25000 cents but the config no longer has it: restore it, or reset it "
        "(audited) before removing it"
    ]
