"""Who asked a close that waits for the round in progress: `table.closing` says it, and so does the `table.closed`
that completes it once the round is over, also when the table was restarted in between on its stored state (the
`by` is kept with it). A state stored by older software (no `closing_by`) restores with none and says so once in the
log, never a silent reset (controller/store/snapshot.py). Pure: the engine as the tests step it, the state through
the journal's codec."""

from __future__ import annotations

import json

from structlog.testing import capture_logs

from controller.engine.inputs import CloseTable, Recover
from controller.engine.state import Phase
from controller.store import snapshot
from tests.engine.conftest import MakeTable, PureTable

BY = "supervisor super-bob"


def closing_mid_round(make_table: MakeTable) -> PureTable:
    t = make_table()
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    assert [e.payload for e in t.feed(CloseTable(by=BY))] == [{"after_round": 1, "by": BY}]
    return t


def play_out(t: PureTable) -> dict[str, object]:
    for street in ("street_3", "street_4", "street_5"):
        t.wager(1, street, 500)
    assert t.types()[-2:] == ["round.completed", "table.closed"] and t.state.phase is Phase.CLOSED
    return dict(t.events[-1].payload)


def test_the_close_after_the_round_says_who_asked(make_table: MakeTable) -> None:
    t = closing_mid_round(make_table)
    assert play_out(t) == {"rounds_played": 1, "by": BY}
    assert t.state.closing_by is None  # the close is done: the next one names its own


def test_a_restart_between_closing_and_closed_keeps_who_asked(make_table: MakeTable) -> None:
    t = closing_mid_round(make_table)
    t.state = snapshot.decode(snapshot.encode(t.state))
    assert t.state.closing and t.state.closing_by == BY
    assert play_out(t) == {"rounds_played": 1, "by": BY}


def test_a_close_stored_by_older_software_restores_with_nobody_named_and_says_so(make_table: MakeTable) -> None:
    t = closing_mid_round(make_table)
    doc = json.loads(snapshot.encode(t.state))
    del doc["state"]["closing_by"]  # as stored before `by` was kept
    with capture_logs() as logs:
        t.state = snapshot.decode(json.dumps(doc).encode())
    said = [e for e in logs if e["log_level"] == "warning"]
    assert len(said) == 1 and "who asked" in said[0]["event"] and said[0]["after_round"] == 1
    assert t.state.closing and t.state.closing_by is None
    with capture_logs() as logs:  # stored again in the new form: not said again at the next restart
        t.state = snapshot.decode(snapshot.encode(t.state))
    assert logs == [] and t.state.closing
    assert play_out(t) == {"rounds_played": 1}


def test_the_restart_s_recovery_resumes_the_round_and_the_close_names_who_asked(make_table: MakeTable) -> None:
    """The restart recovers the round in play (docs/recovery.md: its decisions resume); the close it was waiting for
    then completes as asked."""
    t = closing_mid_round(make_table)
    t.state = snapshot.decode(snapshot.encode(t.state))
    recovered = t.feed(Recover())
    assert t.types(recovered)[0] == "table.recovered" and t.state.closing_by == BY
    assert play_out(t) == {"rounds_played": 1, "by": BY}
    assert t.state.closing_by is None
