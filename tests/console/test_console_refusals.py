"""The table's terminal live log (controller/shell/console.py) says why a command or an input did nothing: a
`command.rejected` (the command gate's own payload, controller/supervisor/gate.py) and an `input.ignored` or
`input.refused` (the real engine's: tests/engine's pure table) had no line, so a command a supervisor sent from
elsewhere left the table's screen silent."""

from __future__ import annotations

from controller.core.events import JournaledEvent
from controller.shell.console import describe
from controller.supervisor.gate import Rejected
from drivers.interfaces import DeviceFaultCleared
from tests.engine.mississippi_table import make


def journaled(type_: str, payload: dict[str, object], rule: str | None = None) -> JournaledEvent:
    return JournaledEvent(
        seq=7,
        event_id="e7",
        boot_id="b",
        ts="2026-11-21T08:00:00.000000Z",
        table_id="t",
        round_id=None,
        type=type_,
        rule=rule,
        payload=payload,
        sealed=None,
    )


def test_a_rejected_command_says_the_verb_the_code_and_why() -> None:
    why = "the key's role (floorperson) may not use close_table"
    p = Rejected("role_not_allowed", why, "c0ffee", "close_table", "fp-1").payload()
    assert describe(journaled("command.rejected", p)) == f"COMMAND REJECTED: close_table (role_not_allowed): {why}"
    unread = Rejected("not_json", "not JSON").payload()
    assert describe(journaled("command.rejected", unread)) == "COMMAND REJECTED: a command (not_json): not JSON"


def test_an_ignored_input_says_what_in_which_phase_and_why() -> None:
    t = make()
    (e,) = [e for e in t.feed(DeviceFaultCleared("shoe", code="jam")) if e.type == "input.ignored"]
    line = describe(journaled(e.type, dict(e.payload), e.rule))
    assert line == f"{e.payload['input']} ignored in {e.payload['phase']}: {e.payload['reason']}"


def test_a_refused_input_says_so() -> None:
    p: dict[str, object] = {
        "input": "cash-out of seat 3",
        "reason": "seat 3 has a wager in the round",
        "phase": "dealing",
    }
    assert describe(journaled("input.refused", p, "605a.2(d)(1)")) == (
        "cash-out of seat 3 REFUSED in dealing: seat 3 has a wager in the round"
    )
