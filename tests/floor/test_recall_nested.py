"""A round's recall (`tablectl floor round`) and the console's live log show an event's nested fields: their line was
`key=value` of the payload's scalars alone, so a `table.recovered` that follows a stop on purpose (`after_stop`
{seq, by}) read exactly like one after a crash, and a `deal.started`'s devices out of order were left out. The
events are the real engine's (tests/engine's pure table: a restart in a round after a SIGTERM), archived by the
floor's real writer in a real PostgreSQL cluster; the CLI runs as a child process."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from controller.engine.inputs import Recover, StopRecord
from controller.store import snapshot
from floor.console.table_extra import log_line
from floor.recall import summarize
from tests.engine.mississippi_table import make
from tests.floor.archiving import events_published, msg, writer
from tests.tablectl_runs import here

pytestmark = pytest.mark.floor
DAY = date(2026, 11, 21)
AFTER = "after the stop at seq 40 (SIGTERM)"


def test_a_restart_after_a_stop_says_the_stop_and_a_crash_s_does_not() -> None:
    base = {"phase": "betting", "policy": "reopen_betting", "what": "betting opens again", "round_no": 3}
    after = summarize("table.recovered", {**base, "after_stop": {"seq": 40, "by": "SIGTERM"}})
    crash = summarize("table.recovered", base)
    assert AFTER in after and "after the stop" not in crash
    assert after.startswith(crash)  # the same words, and the stop


def test_a_restart_with_no_more_bets_refused_says_it_with_what_lifts_it() -> None:
    """remedy26: `no_more_bets_refused` in words after the stop, within the fields a line shows (a restart in betting
    has eight: its `wagers` are not shown, nested two deep)."""
    lifts = "put the shoe back in service (655a.13(g)), or a floorperson directs a reshuffle (655a.5(a))"
    pending = {"rule": "655a.9(a)(1)", "reason": "the cards cannot be dealt", "blocks": ["shuffle_order"]}
    p = {
        "phase": "betting",
        "policy": "reopen_betting",
        "what": "betting opens again",
        "round_no": 3,
        "wagers": {"1": {"ante": 500}},
        "blocks": {"shuffle_order": "no card order"},
        "after_stop": {"seq": 40, "by": "SIGTERM"},
        "no_more_bets_refused": {**pending, "remedy": lifts},
    }
    line = summarize("table.recovered", p)
    assert line.endswith(f'{AFTER}, "no more bets" refused (655a.9(a)(1)) until: {lifts}'), line


def test_devices_out_of_order_are_named_and_other_nested_fields_shown_by_name() -> None:
    line = summarize("deal.started", {"dealing_method": "hand", "out_of_order": {"shoe": "hand", "shuffler": None}})
    assert "dealing_method=hand" in line
    assert "shoe out of order (hand took over); shuffler out of order" in line
    # A container's own fields in dollars where they are amounts (tests/floor/test_recall_money_schema.py), and a
    # list of words as words.
    other = summarize("x.y", {"totals": {"ante_cents": 1500, "count": 2}, "still_held": ["jam", "misfeed"]})
    assert other == "totals {ante_cents=$15.00, count=2}, still_held [jam, misfeed]"


async def test_the_cli_and_the_live_log_show_a_restart_in_a_round_after_a_stop(floor_dsn: str, tmp_path: Path) -> None:
    t = make()  # betting open: a round in progress
    t.state = snapshot.decode(snapshot.encode(t.state))
    recovered = [e for e in t.feed(Recover(after_stop=StopRecord(40, "SIGTERM"))) if e.type == "table.recovered"]
    assert recovered and recovered[0].round_id is not None and recovered[0].payload["after_stop"]["by"] == "SIGTERM"
    said = events_published("ms-nest", list(t.events), DAY)
    w = await writer(floor_dsn)
    assert (await w.write([msg(m) for m in said])).events_new == len(said)

    config = tmp_path / "floor.toml"
    config.write_text(f'[database]\ndsn = "{floor_dsn}"\n[mqtt]\nprefix = "floor"\n')
    run = here("floor", "--config", config, "round", str(recovered[0].round_id))
    assert run.returncode == 0, run.stderr
    line = next(x for x in run.stdout.splitlines() if "table.recovered" in x)
    assert AFTER in line, run.stdout
    # The console's live log (the table page's `tv-log`) draws the line the view makes of the event as published
    # (the archive's jsonb orders a payload's keys its own way: the same fields, another order).
    logged = log_line(next(m for m in said if m["type"] == "table.recovered"))
    assert logged["text"].endswith(AFTER) and line.endswith(AFTER)
