"""`tablectl demo --sim-state FILE` says what the simulated shoe took from the file, in the words of `tablectl
sim-devices --state-file` (controller/cli/options.py `kept_cards`): an operator restarting the demo sees whether the
shoe came back with its cards or empty. Before, the demo said nothing of it. Real processes, ptys and journals; no
broker (the table journals and plays on without one).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from drivers.sim.state import SimStateFile
from tests.tablectl_runs import tablectl

pytestmark = pytest.mark.e2e

NO_BROKER = "mqtt://127.0.0.1:1"


def _demo(journal: Path, state: Path, *quiet: str) -> tuple[str, str]:
    proc = tablectl(
        "demo", "--rounds", "1", "--pace", "0", "--seed", "2", "--journal", str(journal), "--sim-state", str(state),
        "--broker", NO_BROKER, *quiet,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout, proc.stderr


def test_the_demo_says_what_the_simulated_shoe_took_from_its_state_file(tmp_path: Path) -> None:
    state = tmp_path / "sim-state.json"
    out, _ = _demo(tmp_path / "one.sqlite", state)
    assert f"the simulated shoe starts empty: {state} does not exist yet; it is written at the shoe's first load" in out
    assert out.index("does not exist yet") < out.index("round 1 complete")
    SimStateFile(state).save_shoe(["As", "Kd", "Qh", "Jc", "Ts"])
    out, err = _demo(tmp_path / "two.sqlite", state, "--quiet")
    assert out == ""  # --quiet: the line goes to stderr, stdout stays empty
    assert f"the simulated shoe holds 5 card(s) from {state}; every change is written there" in err
