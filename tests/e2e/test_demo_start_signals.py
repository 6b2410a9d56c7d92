"""A SIGINT or SIGTERM at any stage of `tablectl demo`'s start stops it with one line and `tablectl run`'s exit statuses
(start26): the demo's start took neither (a SIGTERM ended it by the signal's default action with no line; a SIGINT went
to asyncio.run's cancel, which a `wait_for` of the retained anchor's read can swallow). The demo shares `run`'s
StartSignals (controller/shell/start_signals.py) and its runner; a real `tablectl demo` on its own simulators is sent
the signal once its log says it reached each stage (not after a delay).

A stop at start journals nothing of its own: the journal holds what the last run left, and the next start recovers
it as it was (the stop's line says so); a stop by the runner journals `table.stopped` (a stop at once) or closes the
table after its round (SIGINT once the table is open), and the demo says the rounds it played."""

from __future__ import annotations

import re
import signal
import sqlite3
from pathlib import Path

import pytest

from tests.broker import Mosquitto, fresh_id
from tests.e2e.sim_devices import DEMO
from tests.e2e.start_stages import AT_START, in_order, signalled_at, spoken

pytestmark = pytest.mark.e2e

STAGES = (
    "checking the config",
    "starting the simulators",
    "opening the journal",
    "reading the retained anchor",
    "restoring the table",
    "handlers installed",
)


def _events(journal: Path) -> list[str]:
    if not journal.exists():
        return []
    with sqlite3.connect(journal) as db:
        return [kind for (kind,) in db.execute("SELECT type FROM events ORDER BY seq")]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_at_each_stage_of_the_demos_start_stops_it_with_a_line(
    sig: signal.Signals, mosquitto: Mosquitto, tmp_path: Path
) -> None:
    outcomes: dict[str, str] = {}
    for n, stage in enumerate(STAGES):
        # Each start a table's first, on the broker too: a new journal under a table's retained anchor is a rollback.
        table = fresh_id()
        text = DEMO.read_text().replace('table_id = "demo-ms-1"', f'table_id = "{table}"', 1)
        config = tmp_path / f"table{n}.toml"
        config.write_text(text.replace('prefix = "tablectl"', f'prefix = "{table}"'))
        journal = tmp_path / f"journal{n}.sqlite"
        argv = ["demo", "--config", str(config), "--broker", mosquitto.url, "--quiet", "--seed", "7"]
        status, said = signalled_at(stage, sig, [*argv, "--journal", str(journal)])
        lines = spoken(said)
        if f"tablectl demo: stopped by {sig.name} while starting" in said:
            assert status == AT_START[sig], (stage, status, said)
            outcomes[stage] = "at start"
            assert len(lines) == 1 and lines[0].startswith(f"tablectl demo: stopped by {sig.name}"), (stage, said)
            assert "table.stopped" not in _events(journal), stage  # the engine never ran
        else:
            assert status == 0 and len(lines) == 1, (stage, status, said)
            assert re.fullmatch(r"tablectl: [0-9]+ round\(s\) played", lines[0]), said
            outcomes[stage] = "by the runner"
            events = _events(journal)
            assert events[-1] in ("table.stopped", "table.closed"), (stage, events[-3:])
    in_order(outcomes, STAGES)
