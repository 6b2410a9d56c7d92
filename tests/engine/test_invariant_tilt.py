"""A step that finds a state the engine's own checks rule out (a bug) changes nothing but raises the tilt
`tilt:invariant`, with the step and what was missing in `critical_state.invalid`; the daemon does not stop and, the
deployed interpreter running optimised (PYTHONOPTIMIZE=2 strips `assert`), does not go on unchecked either
(controller/core/invariant.py). The broken state is made by hand: no input sequence reaches it."""

from __future__ import annotations

import dataclasses

import pytest

from controller.core.invariant import INVARIANT_TILT, InvariantBroken, present
from controller.engine.inputs import ClearTilt
from controller.engine.state import Phase
from drivers.interfaces import LockAcknowledged
from tests.engine.mississippi_table import make


def test_a_step_on_a_broken_invariant_raises_the_tilt_and_changes_nothing_else() -> None:
    t = make()
    t.wager(1, "ante", 500)  # 655a: betting open, a round in progress
    assert t.state.phase is Phase.BETTING and t.state.round is not None
    broken = dataclasses.replace(t.state, round=None)  # betting with no round: a state no step makes
    t.state = broken
    # A station's unlock confirmation while betting is open reads the round in progress (controller.engine.betting).
    events = t.feed(LockAcknowledged("wager_station_1", seat=1, locked=False))
    assert [e.type for e in events] == ["critical_state.invalid"]
    payload = events[0].payload
    assert payload["tilt"] == INVARIANT_TILT
    assert payload["reason"] == "LockAcknowledged: the round in progress missing"
    assert "a bug" in str(payload["remedy"]) and "void the round" in str(payload["remedy"])
    # Nothing of the failed step is kept: only the tilt's block is new.
    assert t.state == dataclasses.replace(
        broken, blocks={INVARIANT_TILT: f"critical state invalid: {payload['reason']}"}
    )

    # A supervisor's signed clear lifts it like any tilt (the table goes on from there).
    cleared = t.feed(ClearTilt(INVARIANT_TILT, "sup-1", "supervisor", "round voided by hand"))
    assert [e.type for e in cleared][:2] == ["tilt.cleared", "table.block_cleared"]
    assert INVARIANT_TILT not in t.state.blocks


def test_present_names_what_is_missing() -> None:
    assert present(0, "a count") == 0  # set but falsy is present
    with pytest.raises(InvariantBroken, match=r"^the progressive meters missing$"):
        present(None, "the progressive meters")
