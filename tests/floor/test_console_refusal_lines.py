"""Why a command or an input did nothing, in the console's live log and the round recall: `command.rejected` (the
table's command gate, controller/supervisor/gate.py) and `input.ignored` / `input.refused` (the engine's reason in the
phase the input came in). A supervisor who sends a command from elsewhere reads the reason on the table's page. The
`command.rejected` payload is the gate's own (`Rejected.payload`); the `input.ignored` the real engine's (tests/engine's
pure table: a fault cleared that the shoe does not hold)."""

from __future__ import annotations

from datetime import date

from controller.supervisor.gate import Rejected
from drivers.interfaces import DeviceFaultCleared
from floor.console.table_extra import log_line
from tests.engine.mississippi_table import make
from tests.floor.archiving import events_published

WHY = "the key's role (floorperson) may not use close_table: a supervisor's key may"


def test_a_rejected_command_s_line_says_the_verb_the_code_and_why() -> None:
    p = Rejected("role_not_allowed", WHY, "c0ffee", "close_table", "fp-1").payload()
    line = log_line(
        {"table_id": "t1", "seq": 9, "ts": "2026-11-21T12:00:00Z", "type": "command.rejected", "payload": p}
    )
    assert line["text"] == f"close_table rejected (role_not_allowed): {WHY}"
    unread = Rejected("not_json", "not JSON: Expecting value").payload()  # nothing of the envelope readable
    line = log_line(
        {"table_id": "t1", "seq": 9, "ts": "2026-11-21T12:00:00Z", "type": "command.rejected", "payload": unread}
    )
    assert line["text"] == "a command rejected (not_json): not JSON: Expecting value"


def test_an_ignored_input_s_line_says_what_in_which_phase_and_why() -> None:
    t = make()
    ignored = [e for e in t.feed(DeviceFaultCleared("shoe", code="jam")) if e.type == "input.ignored"]
    assert len(ignored) == 1
    said = events_published("t1", list(t.events), date(2026, 11, 21))
    line = log_line(next(m for m in said if m["type"] == "input.ignored"))
    p = ignored[0].payload
    assert line["text"] == f"{p['input']} ignored in {p['phase']}: {p['reason']}"
    assert str(p["reason"]) and "bad" not in line
