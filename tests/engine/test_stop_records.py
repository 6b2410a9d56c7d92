"""Who asked a table to close, and what a table stopped at once tells its journal. `table.closing` (a close that waits
for the round in progress) and the `table.closed` of a close at once carry the `by` of their CloseTable (the first
Ctrl-C's `interrupt`, a supervisor's key); `table.stopped` (controller/engine/recovery.py `stopped`, journaled by the
shell on SIGTERM or a second Ctrl-C) names the phase, the round and the policy the restart's `recover` applies to it,
which the restart then does (`table.recovered` with the same policy). Pure: the engine as the tests step it."""

from __future__ import annotations

from controller.engine.inputs import CloseTable, Recover
from controller.engine.recovery import POLICIES, RECOVERY, policy_at, stopped
from controller.engine.state import Phase, TableState
from tests.engine.conftest import MakeTable


def test_a_close_that_waits_for_the_round_says_who_asked(make_table: MakeTable) -> None:
    t = make_table()
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    closing = t.feed(CloseTable(by="interrupt"))
    assert [(e.type, e.payload) for e in closing] == [("table.closing", {"after_round": 1, "by": "interrupt"})]


def test_a_close_at_once_says_who_asked(make_table: MakeTable) -> None:
    t = make_table()
    closed = t.feed(CloseTable(by="supervisor super-bob"))
    assert [(e.type, e.payload) for e in closed] == [
        ("table.closed", {"rounds_played": 1, "by": "supervisor super-bob"})
    ]


def test_a_stop_at_once_names_the_policy_the_restart_applies(make_table: MakeTable) -> None:
    t = make_table()
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    assert t.state.round is not None
    stop = stopped(t.state, "SIGTERM")
    assert stop.type == "table.stopped" and stop.round_id == t.state.round.round_id
    assert stop.payload == {
        "by": "SIGTERM",
        "phase": str(t.state.phase),
        "round_no": 1,
        "policy": policy_at(t.state),
        "what": POLICIES[policy_at(t.state)],
    }
    recovered = [e for e in t.feed(Recover()) if e.type == "table.recovered"]
    assert [e.payload["policy"] for e in recovered] == [stop.payload["policy"]]


def test_every_phase_has_the_policy_recover_applies() -> None:
    """Each phase's policy is one `recover` names (RECOVERY); tests/engine/test_recovery_policy.py drives the engine
    into each phase and checks the restart applies the policy the stop named."""
    assert set(RECOVERY) == set(Phase)
    assert {policy for phase, choose in RECOVERY.items() for policy, _ in [choose(TableState("t", phase))]} <= set(
        POLICIES
    )
