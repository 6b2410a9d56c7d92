"""A SIGINT or SIGTERM at any stage of `tablectl run`'s start is acted on, promptly and with a line saying so (user25):
a SIGTERM before the runner's handlers ended the process by the signal's default action with no line, and a SIGINT
about 1.2 s in (the retained anchor's read, whose aiomqtt connect waits with `asyncio.wait_for`, which swallows a cancel
on Python 3.11) was lost: the table ran on. The real daemon runs on the demo table's simulated devices (their own
process, as an operator runs them) and is sent the signal once its log says it reached each stage (not after a delay).

The signal may land a little later than the line that paced it: a stage's outcome is then the next stage's, which is
either a stop at start (its line, exit 130 for SIGINT, the signal's own for SIGTERM) or, once the runner's handlers
are in, the runner's stop at once (`table stopped at once`, journaled, exit 0), or for a SIGINT that came once the
table had opened, its close between rounds. Never silence, never a table running on."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.broker import Mosquitto
from tests.e2e.sim_devices import DEMO, running_simulators
from tests.e2e.start_stages import AT_START, in_order, signalled_at, spoken

pytestmark = pytest.mark.e2e

# The start's stages as its log says them (controller/cli/run.py and controller/shell/runner.py, `start stage`; the
# devices' own `device online`), in order; the last is the runner's handlers taking over.
CLOSING = "closing the table after the round in progress"  # the runner's first Ctrl-C at an open table
STAGES = (
    "checking the config",
    "starting the devices",
    "device online",
    "loading the daemon",
    "opening the journal",
    "reading the retained anchor",
    "restoring the table",
    "handlers installed",
)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_at_each_stage_of_the_start_stops_it_with_a_line(
    sig: signal.Signals, mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    text = DEMO.read_text().replace('table_id = "demo-ms-1"', f'table_id = "{unique_id}"', 1)
    text = text.replace('prefix = "tablectl"', f'prefix = "{unique_id}"')
    outcomes: dict[str, str] = {}
    config = tmp_path / "table.toml"
    config.write_text(text)
    with running_simulators(tmp_path / "ports.json") as ports:
        for n, stage in enumerate(STAGES):
            journal = tmp_path / f"journal{n}.sqlite"  # each start a table's first: nothing to recover
            argv = ["run", "--config", str(config), "--ports", str(ports), "--broker", mosquitto.url]
            status, said = signalled_at(stage, sig, [*argv, "--journal", str(journal)])
            lines = spoken(said)
            if f"tablectl run: stopped by {sig.name} while starting" in said:
                assert status == AT_START[sig], (stage, status, said)
                outcomes[stage] = "at start"
                # The one operator line and nothing else: no traceback of a connection the stop cut (an aiomqtt client
                # cancelled in its connect ended with "Event loop is closed" here: controller/mqtt/session.py).
                assert len(lines) == 1 and lines[0].startswith(f"tablectl run: stopped by {sig.name}"), (stage, said)
            else:
                # At once; or, a SIGINT that came once the table had opened (a loaded machine), closed between rounds.
                stopped = "table stopped at once" in said or (CLOSING in said and sig is signal.SIGINT)
                assert stopped and status == 0, (stage, status, said)
                outcomes[stage] = "by the runner"
                assert lines == [], (stage, said)  # the runner's stop says it in the log alone
    in_order(outcomes, STAGES)
