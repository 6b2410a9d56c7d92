"""Recovery after a crash at every step of a round, for every chapter and dealing method (docs/recovery.md).

A crash here stops the engine dead after step k and drops the device commands that step produced (the journal
held the step, the devices never heard of it); the restart round-trips the state through its stored form and
sends Recover. Whatever k, the round must end exactly once as the chapter allows, every wager settled or
returned once, and the table must play on with the round numbers continuing.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest

from controller.core.events import DomainEvent
from controller.engine.commands import LockSeat, UnlockSeat
from controller.engine.inputs import CriticalStateInvalid, OpenTable, Recover, Tick
from controller.engine.round import RoundEngine
from controller.engine.spec import DealingMethod
from controller.engine.state import Phase, TableState
from controller.games.registry import SPECS
from drivers.interfaces import WagerDetected
from tests.journal.conftest import MakeCrashTable, RulesOf

CASES: list[tuple[str, DealingMethod | None, dict[str, object]]] = [
    ("643a", "automated_shoe", {}),
    ("643a", "manual_shoe", {}),
    ("643a", "hand", {}),
    ("655a", "automated_shoe", {}),
    ("655a", "manual_shoe", {}),
    ("655a", "hand", {}),
    ("655a", "automated_shoe", {"shuffler_counts": False, "stub_count_every": 1}),
    ("679a", None, {"stub_count_every": 1}),
    ("683a", None, {}),
    ("684a", None, {}),
]
IDS = [f"{c}-{m or 'default'}" + ("-stub" if o else "") for c, m, o in CASES]
TERMINAL = ("round.completed", "round.voided")
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def _steps_of_first_round(
    make: MakeCrashTable, chapter: str, method: DealingMethod | None, opts: dict[str, object]
) -> int:
    t = make(chapter, method, **opts)
    t.play_until(lambda s: s.rounds_played >= 2)
    return t.steps


@pytest.mark.parametrize(("chapter", "method", "opts"), CASES, ids=IDS)
def test_a_crash_after_any_step_recovers_as_the_chapter_allows(
    make_crash_table: MakeCrashTable, chapter: str, method: DealingMethod | None, opts: dict[str, object]
) -> None:
    n = _steps_of_first_round(make_crash_table, chapter, method, opts)
    phases_hit: Counter[str] = Counter()
    for k in range(1, n):
        t = make_crash_table(chapter, method, **opts)
        t.check_steps = False  # the first run checked every step of this prefix
        t.crash_at = k
        with pytest.raises(t.Crashed):
            t.play_until(lambda s: s.rounds_played >= 3)
        crashed = t.state
        phase = crashed.phase
        phases_hit[str(phase)] += 1
        before = list(t.events)
        accepted_before = {
            (e.round_id, e.payload["seat"], e.payload["spot"], e.payload["amount"])
            for e in before
            if e.type == "wager.accepted"
        }
        after = t.restart()
        assert after[0].type == "table.recovered", (k, phase, after[:2])
        assert after[0].payload["phase"] == str(phase)
        rid = crashed.round.round_id if crashed.round else None
        if phase is Phase.DEALING:
            void = next(e for e in after if e.type == "round.voided")
            want = t.engine.rule("13(f)") if t.method == "automated_shoe" else t.engine.rule("13(c)")
            assert (after[0].payload["policy"], after[0].rule, void.rule) == ("void", want, want)
            locked = next(e for e in before if e.type == "no_more_bets")
            for seat, wagers in locked.payload["wagers"].items():
                for spot, cents in wagers.items():
                    assert void.payload["returned"][seat][spot] == cents, (k, seat, spot)
        # The stations' reports of chips already taken are confirmed, never taken again.
        again = [
            e
            for e in after
            if e.type == "wager.accepted"
            and (e.round_id, e.payload["seat"], e.payload["spot"], e.payload["amount"]) in accepted_before
        ]
        assert again == [], k
        t.play_until(lambda s: s.rounds_played >= 3 and s.phase is Phase.BETTING)
        ends = Counter(e.round_id for e in t.events if e.type in TERMINAL)
        assert all(v == 1 for v in ends.values()), (k, ends)
        if rid is not None:
            assert ends[rid] == 1, (k, phase)
            voided = any(e.type == "round.voided" and e.round_id == rid for e in t.events)
            assert voided == (phase is Phase.DEALING), (k, phase)
        opened = [e.payload["round_no"] for e in t.events if e.type == "betting.opened"]
        assert sorted(set(opened)) == list(range(1, max(opened) + 1)), (k, opened)
    # Every phase a round passes through was crashed into at least once.
    expected = {"shuffling", "betting", "locking", "decision"}
    if t.method in ("automated_shoe", "manual_shoe"):
        expected.add("dealing")
    if t.method == "hand":
        expected.add("dealt")
    if opts.get("stub_count_every"):
        expected.add("stub_count")
    assert expected <= set(phases_hit), phases_hit


def test_betting_reopens_and_a_repeated_report_is_confirmed_not_taken(make_crash_table: MakeCrashTable) -> None:
    t = make_crash_table("655a", "automated_shoe")
    t.play_until(lambda s: t.placed.get(1, 0) == 2)
    assert t.state.phase is Phase.BETTING
    t.commands.clear()
    out = t.restart(stations_report=False)
    rec = out[0]
    assert (rec.type, rec.rule, rec.payload["policy"]) == ("table.recovered", "655a.7(c)", "reopen_betting")
    assert rec.payload["wagers"] == {"1": {"ante": 500, "three_card_bonus": 100}}
    # Every station was unlocked again and betting opened once they confirmed.
    assert sorted(c.seat for c in t.commands if isinstance(c, UnlockSeat)) == [1, 2, 3, 4, 5, 6]
    assert [e.type for e in out[1:]] == ["betting.opened"] and out[1].payload["round_no"] == 1
    same = t.feed(WagerDetected("wager_station_1", seat=1, spot="ante", amount_cents=500))
    assert [(e.type, e.rule, e.payload["amount"]) for e in same] == [("wager.confirmed", "655a.7(d)(1)", 500)]
    more = t.feed(WagerDetected("wager_station_1", seat=1, spot="ante", amount_cents=1000))
    assert [(e.type, e.payload["amount"]) for e in more] == [("wager.accepted", 1000)]  # the latest reading stands


def test_a_crash_before_the_locks_reached_the_stations_locks_them_again(make_crash_table: MakeCrashTable) -> None:
    t = make_crash_table("655a", "automated_shoe")
    # The step that announced "no more bets" was journaled; its lock commands never reached a station.
    t.crash_when(lambda s: s.phase is Phase.LOCKING)
    assert t.state.round is not None and t.state.round.locks_pending == {1, 2, 3, 4, 5, 6}
    t.commands.clear()
    out = t.restart(stations_report=False)
    assert (out[0].payload["policy"], out[0].rule) == ("relock", "655a.10(a)(2)")
    assert sorted(c.seat for c in t.commands if isinstance(c, LockSeat)) == [1, 2, 3, 4, 5, 6]
    assert "lockout.confirmed" in [e.type for e in out]


def test_a_deal_interrupted_in_an_automated_shoe_is_void_under_13f(make_crash_table: MakeCrashTable) -> None:
    t = make_crash_table("655a", "automated_shoe")
    t.crash_when(lambda s: s.phase is Phase.DEALING and s.round is not None and s.round.stacks_dispensed == 2)
    assert t.state.round is not None
    wagers = {str(n): dict(st.wagers) for n, st in t.state.round.seats.items()}
    out = t.restart()
    assert [e.type for e in out][:3] == ["table.recovered", "round.voided", "shuffle.started"]
    assert out[0].payload["cards_recorded"] == 4
    void = out[1]
    assert void.rule == "655a.13(f)" and void.payload["returned"] == wagers
    assert "reshuffled with any cards already dealt" in void.payload["remedy"]
    assert t.state.phase is Phase.BETTING and t.state.round is not None and t.state.round.number == 2


def test_a_manual_shoe_deal_interrupted_is_void_under_13c(make_crash_table: MakeCrashTable) -> None:
    t = make_crash_table("643a", "manual_shoe")
    t.play_until(lambda s: s.phase is Phase.DEALING and s.round is not None and len(s.round.dealt) == 3)
    out = t.restart()
    assert (out[0].rule, out[1].type, out[1].rule) == ("643a.13(c)", "round.voided", "643a.13(c)")
    assert "incorrect number of cards" in out[0].payload["what"] or "incorrect number" in out[1].payload["reason"]


def test_decisions_resume_with_the_seat_whose_turn_it_was(make_crash_table: MakeCrashTable) -> None:
    t = make_crash_table("655a", "automated_shoe")
    t.play_until(lambda s: s.phase is Phase.DECISION and s.round is not None and s.round.turn == 2)
    out = t.restart()
    assert [e.type for e in out][:2] == ["table.recovered", "decision.requested"]
    assert (out[0].payload["policy"], out[0].rule, out[0].payload["seat"]) == ("resume_decisions", "655a.11(b)", 2)
    ask = out[1].payload
    assert (ask["seat"], ask["decision"], ask["reissued"], ask["allowed"]) == (2, "street_3", True, [500, 1000, 1500])
    # The street wager seat 1 already made is reported by its station and confirmed, not taken twice.
    # Three seats of Ante and both bonuses, and the 3rd Street Wager seat 1 made: all there, none taken twice.
    assert [e.type for e in out[2:]] == ["wager.confirmed"] * 10
    t.play_until(lambda s: s.rounds_played >= 2)
    done = next(e for e in t.events if e.type == "round.completed")
    assert done.payload["players"] == [1, 2, 3]


def test_a_deal_from_the_hand_resumes_from_the_shufflers_order(make_crash_table: MakeCrashTable) -> None:
    t = make_crash_table("679a", stub_count_every=5)
    t.play_until(lambda s: s.phase is Phase.DEALT)
    assert t.state.round is not None
    dealt = list(t.state.round.dealt)
    out = t.restart()
    assert [e.type for e in out][:2] == ["table.recovered", "deal.awaiting_dealer"]
    assert out[0].payload["policy"] == "resume_deal" and out[1].payload["reissued"] is True
    t.play_until(lambda s: s.phase is not Phase.DEALT)
    assert t.state.round is not None and t.state.round.dealt == dealt


def test_a_stub_count_is_asked_again(make_crash_table: MakeCrashTable) -> None:
    t = make_crash_table("679a", stub_count_every=1)
    t.play_until(lambda s: s.phase is Phase.STUB_COUNT)
    assert t.state.round is not None
    expected = t.state.round.stub_expected
    out = t.restart()
    assert [e.type for e in out][:2] == ["table.recovered", "stub_count.requested"]
    assert out[1].rule == "679a.9(d)" and out[1].sealed == {"expected": expected}


def test_a_shuffle_is_asked_again_under_13e(make_crash_table: MakeCrashTable) -> None:
    t = make_crash_table("683a")
    # Crash right after settlement: the round is complete and the shuffle asked for, the shuffler never heard.
    t.crash_when(lambda s: s.rounds_played >= 1 and s.phase is Phase.SHUFFLING)
    assert any(e.type == "round.completed" for e in t.events)
    t.commands.clear()
    out = t.restart()
    assert (out[0].payload["policy"], out[0].rule) == ("reshuffle", "683a.13(e)")
    assert [c.verb for c in t.commands].count("shuffle") == 1


def test_a_closed_table_opens_as_usual_and_a_recover_is_ignored(rules_of: RulesOf) -> None:
    engine = RoundEngine(SPECS["655a"], rules_of("655a"))
    state, out = engine.step(TableState("t1"), Recover())
    assert [e.type for e in out if isinstance(e, DomainEvent)] == ["input.ignored"] and state.phase is Phase.CLOSED


def test_a_state_that_cannot_be_restored_is_a_tilt_that_blocks_play(rules_of: RulesOf) -> None:
    engine = RoundEngine(SPECS["655a"], rules_of("655a"))
    s = TableState("t1", rounds_played=41)
    events: list[DomainEvent] = []
    for inp in (CriticalStateInvalid("copy 0 (seq 9) fails its sha256 check"), Tick(T0), OpenTable()):
        s, effects = engine.step(s, inp)
        events += [e for e in effects if isinstance(e, DomainEvent)]
    tilt = events[0]
    assert (tilt.type, tilt.payload["tilt"]) == ("critical_state.invalid", "critical_state")
    assert "sha256" in tilt.payload["reason"]
    assert s.phase is Phase.BLOCKED and set(s.blocks) == {"critical_state"}
    assert "fails its sha256 check" in s.blocks["critical_state"]
    assert [e.type for e in events] == ["critical_state.invalid", "table.opened", "table.blocked"]
    assert "betting.opened" not in [e.type for e in events] and s.rounds_played == 41
