"""The balance property over live engine rounds (issue 7 "done when"): Let It Ride with both progressives and
Mississippi Stud paytable C, random seated players, random deals (hits included: scripted decks put a royal or a
straight flush in front of a seat now and then), voids, every hit validated. After every round, per level:
contributions == display growth + reserve + paid (+ overflow), to the micro-cent, where the test keeps its own
books of what the wagers put in (at the configured rates) and what the hits paid."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.core.cards import STANDARD_DECK
from controller.engine.inputs import ValidateJackpot
from controller.engine.state import Phase
from controller.games.let_it_ride.rules import LetItRideRules
from controller.progressive.model import MICRO
from tests.engine.conftest import ChapterTable, PureTable

LIR = {
    "three_card_progressive": True,
    "three_card_progressive_paytable": "A",
    "three_card_progressive_initial_cents": 100_000,
    "three_card_progressive_reset_cents": 100_000,
    "three_card_progressive_rate_percent": 15.0,
    "five_card_progressive": True,
    "five_card_progressive_initial_cents": 1_000_000,
    "five_card_progressive_reset_cents": 1_000_000,
    "five_card_progressive_rate_percent": 15.0,
    "three_card_progressive_wagers_cents": [100, 500],
    "five_card_progressive_wagers_cents": [100, 500],
}
ROYAL = ["As", "Ks", "Qs", "Js", "Ts"]  # a mini-royal in spades: 100% of the three-card meter


def _validate_all(t: PureTable) -> None:
    while t.state.phase is Phase.JACKPOT and t.state.pending_hits:
        h = t.state.pending_hits[0]
        t.feed(ValidateJackpot(h.seat, h.level, h.hit, "floor-test", "floorperson"))


def _rules() -> LetItRideRules:
    return LetItRideRules.model_validate(
        {"chapter": "643a", "dealing_method": "automated_shoe", "let_it_ride_paytable": "A", **LIR}
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), rounds=st.integers(1, 5))
def test_lir_balance_over_live_rounds(chapter_table: ChapterTable, seed: int, rounds: int) -> None:
    from controller.games.let_it_ride.spec import LetItRideSpec

    rng = random.Random(seed)
    plan = []
    for _ in range(rounds):
        players = sorted(rng.sample(range(1, 8), rng.randint(1, 7)))
        progressive = {
            n: {
                spot: rng.choice([100, 500])
                for spot in ("three_card_progressive", "five_card_progressive")
                if rng.random() < 0.7
            }
            for n in players
        }
        hit = rng.random() < 0.4
        cards = list(STANDARD_DECK)
        rng.shuffle(cards)
        if hit:  # seat players[0] holds As Ks Qs; the community stack is Js (community#2), Ts (community#1), burn
            rest = [c for c in cards if c not in ROYAL]
            n = len(players)
            cards = [*ROYAL[:3], *rest[: 3 * (n - 1)], "Js", "Ts", *rest[3 * (n - 1) :]]
        plan.append((players, progressive, cards))
    # A royal with a Three-Card Progressive Wager on it must be paid from that meter (the property is not vacuous).
    must_hit = any(
        cards[:3] == ROYAL[:3] and "three_card_progressive" in prog[players[0]] for players, prog, cards in plan
    )
    t = chapter_table(LetItRideSpec(), _rules(), "automated_shoe", [cards for _, _, cards in plan])
    rates = {lv.level: lv.primary_ppm + lv.reserve_ppm for lv in t.engine.meter_params.levels.values()}
    start = t.state.meters
    assert start is not None
    books = {level: 0 for level in rates}  # micro-cents contributed, from the test's own arithmetic
    paid = {level: 0 for level in rates}
    for players, progressive, _ in plan:
        for n in players:
            for bet in ("bet_1", "bet_2", "bet_3"):
                t.wager(n, bet, 500)
            for spot, cents in progressive[n].items():
                assert t.wager(n, spot, cents)[0].type == "wager.accepted"
                books[spot] += cents * rates[spot]
        t.press("no_more_bets")
        while t.state.phase is Phase.DECISION:
            t.press("let_it_ride")
        _validate_all(t)
        assert t.state.phase is not Phase.JACKPOT
    for e in t.events:
        if e.type == "progressive.paid":
            paid[e.payload["level"]] += e.payload["amount"]
    meters = t.state.meters
    assert meters is not None and meters.balance_problems() == []
    for level in rates:
        lv, lv0 = meters.level(level), start.level(level)
        growth = (lv.display_micro - lv.house_funded_micro) - (lv0.display_micro - lv0.house_funded_micro)
        assert books[level] == growth + lv.reserve_micro + paid[level] * MICRO + lv.overflow_micro, level
        assert lv.wins_cents == paid[level]
    if must_hit:
        assert paid["three_card_progressive"] > 0
