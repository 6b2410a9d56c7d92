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


def test_a_second_close_while_closing_keeps_the_first_asker_and_says_who_that_is(make_table: MakeTable) -> None:
    """A floor supervisor's close after the dealer's Ctrl-C (or a second supervisor's): the table is closing already,
    so the second asks nothing new. It used to replace the first's `by` (and journal a second `table.closing`); the
    first asker stands, and the second is told so on the record (`input.ignored` naming who asked), also after a
    restart on the stored state."""
    t = closing_mid_round(make_table)
    again = t.feed(CloseTable(by="interrupt"))
    said = (
        "the table is already closing after round 1, asked by supervisor super-bob: the close stands as asked, "
        "the table closes when the round is complete"
    )
    assert [(e.type, e.payload) for e in again] == [
        ("input.ignored", {"input": "close table", "reason": said, "phase": "decision"})
    ]
    t.state = snapshot.decode(snapshot.encode(t.state))
    assert [e.payload["reason"] for e in t.feed(CloseTable(by="interrupt"))] == [said]
    assert t.types().count("table.closing") == 1 and t.state.closing_by == BY
    assert play_out(t) == {"rounds_played": 1, "by": BY}


def test_a_second_close_of_a_close_stored_without_its_asker_says_that_is_not_known(make_table: MakeTable) -> None:
    t = closing_mid_round(make_table)
    t.state.closing_by = None  # as a close stored by older software restores (the test above)
    reason = [e.payload["reason"] for e in t.feed(CloseTable(by="interrupt"))]
    assert reason == [
        "the table is already closing after round 1, who asked is not recorded: the close stands as asked, the table "
        "closes when the round is complete"
    ]
    assert play_out(t) == {"rounds_played": 1}
