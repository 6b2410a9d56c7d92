"""`tablectl sim-devices --state-file`: the simulated shoe keeps its undealt cards across a restart of the simulators'
own process, as a real shoe keeps them when the computer beside it restarts (drivers/sim/state.py). Real processes
and real ptys: the simulators in `tablectl sim-devices`, the reference shuffler and shoe drivers in this process.
A bad state file is refused before any simulator starts, naming the file and the fix.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path

import pytest

from drivers.interfaces import DealingShoe, DeviceOnline, ShuffleCompleted, Shuffler, StackDispensed
from drivers.registry import create_driver
from tests.drivers.conftest import Recorder
from tests.e2e.sim_devices import DEMO, ROOT, read_until, running_simulators, started
from tests.tablectl_runs import TABLECTL

pytestmark = pytest.mark.e2e


async def _ports(path: Path) -> dict[str, str]:
    ports: dict[str, str] = json.loads(await asyncio.to_thread(path.read_text))
    return ports


async def _shuffled_and_two_dealt(ports: Path) -> list[str]:
    """The shuffler shuffles (the simulators load the shoe with its order) and the shoe deals a stack of two: the
    shuffler's card order."""
    port = await _ports(ports)
    shuffler = create_driver("shuffler", {"driver": "reference-shuffler", "port": port["shuffler"]})
    heard = Recorder()
    await shuffler.start(heard)
    try:
        assert isinstance(shuffler, Shuffler)
        await heard.next(DeviceOnline)
        await shuffler.shuffle()
        order = list((await heard.next(ShuffleCompleted)).order or ())
    finally:
        await shuffler.stop()
    assert len(order) == 52
    assert await _two_dealt(ports) == order[:2]
    return order


async def _two_dealt(ports: Path) -> list[str]:
    port = await _ports(ports)
    shoe = create_driver("shoe", {"driver": "reference-shoe", "port": port["shoe"]})
    heard = Recorder()
    await shoe.start(heard)
    try:
        assert isinstance(shoe, DealingShoe)
        await heard.next(DeviceOnline)
        await shoe.dispense_stack(2)
        return list((await heard.next(StackDispensed)).cards)
    finally:
        await shoe.stop()


async def test_the_shoe_deals_on_from_its_cards_after_the_simulators_restart(tmp_path: Path) -> None:
    state = tmp_path / "sim-state.json"
    extra = ["--seed", "7", "--state-file", str(state)]
    with running_simulators(tmp_path / "ports.json", extra=extra) as ports:
        order = await _shuffled_and_two_dealt(ports)
    assert json.loads(state.read_text())["shoe"]["cards"] == order[2:]
    with running_simulators(tmp_path / "ports-again.json", extra=extra) as ports:
        assert await _two_dealt(ports) == order[2:4], "the restarted simulators' shoe deals on from its cards"
    assert json.loads(state.read_text())["shoe"]["cards"] == order[4:]


@pytest.mark.parametrize(
    ("cards", "said"),
    [(["Ah", "Kd", "7c"], "the simulated shoe holds 3 card(s) from {state}"), (None, "{state} does not exist yet")],
)
def test_sim_devices_says_what_the_shoe_took_from_its_state_file(
    tmp_path: Path, cards: list[str] | None, said: str
) -> None:
    """An operator restarting the simulators sees whether the shoe came back with its cards or empty."""
    state = tmp_path / "sim-state.json"
    if cards is not None:
        state.write_text(json.dumps({"version": 1, "shoe": {"cards": cards}}))
    proc = started([*TABLECTL, "sim-devices", "--config", str(DEMO), "--state-file", str(state)])
    lines: list[str] = []
    try:
        read_until(proc, "simulators running", lines)
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    assert said.format(state=state) in "".join(lines), "".join(lines)


@pytest.mark.parametrize(
    ("text", "problem"),
    [("{not json", "not JSON"), ('{"version": 1, "shoe": {"cards": "Ah Kd"}}', 'expected {"version": 1')],
)
def test_a_bad_state_file_is_refused_before_the_simulators_start(tmp_path: Path, text: str, problem: str) -> None:
    state = tmp_path / "sim-state.json"
    state.write_text(text)
    argv = [*TABLECTL, "sim-devices", "--config", str(DEMO), "--state-file", str(state)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"--state-file: simulator state {state}: {problem}" in done.stderr, done.stderr
    assert "fix or delete it" in done.stderr and "simulators running" not in done.stdout
