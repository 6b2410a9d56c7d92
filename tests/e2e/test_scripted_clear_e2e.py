"""End to end through `tablectl simulate` (real ptys, real journal): the scripted shoe finds a jam between rounds and
reports it (`report = true`), the table holds it and blocks round 2 (.13(g)); the scenario's attendant clears the jam
(`clear` action), the shoe says so (`fault_cleared`) and round 2 plays. A sim script's [[clears]] does the same
without a journal to wait on: the clear follows the device's own report (`when = "fault 1"`). A bad clear is refused
at load."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import TableConfig, demo_config
from controller.people.demo import ScriptedPolicy, ScriptedRound, play
from drivers.sim.script import load_sim_script
from tests.e2e.sim_devices import ROOT
from tests.tablectl_runs import tablectl

pytestmark = pytest.mark.e2e

TIMEOUT = 120  # failure bound only: the two rounds take a few seconds
NO_BROKER = "mqtt://127.0.0.1:1"
JAM = '[[faults]]\ndevice = "shoe"\nfault = "jam"\nwhen = "remove_stub 1"\nreport = true\n'
SCENARIO = (
    "rounds = 2\n[[round]]\nwagers = { 1 = { ante = 1000 } }\n[[round]]\nwagers = { 2 = { ante = 500 } }\n"
    + JAM
    + '[[actions]]\nat = "table.blocked"\nclear = { device = "shoe", code = "jam", detail = "taken out by hand" }\n'
)


def _simulate(scenario: Path) -> subprocess.CompletedProcess[str]:
    return tablectl("simulate", "--config", str(ROOT / "configs/demo.toml"), "--scenario", str(scenario))


def test_a_scripted_clear_lifts_the_held_jam_and_round_2_plays(tmp_path: Path) -> None:
    scenario = tmp_path / "cleared.scenario.toml"
    scenario.write_text(SCENARIO)
    proc = _simulate(scenario)
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert "round.voided" not in types and types.count("round.completed") == 2
    fault = types.index("device.fault")
    assert events[fault]["payload"]["device_id"] == "shoe" and events[fault]["payload"]["code"] == "jam"
    blocked = types.index("table.blocked")
    assert "device:shoe" in events[blocked]["payload"]["reasons"]
    said = events[types.index("device.fault_cleared")]
    assert said["rule"] == "655a.13(g)" and said["payload"]["detail"] == "taken out by hand"
    lifted = types.index("table.block_cleared")
    assert events[lifted]["payload"]["by"] == "shoe said fault jam cleared"
    opened = [i for i, t in enumerate(types) if t == "betting.opened"]
    assert fault < blocked < types.index("device.fault_cleared") < lifted < opened[1]


@pytest.mark.parametrize(
    ("clear", "problem"),
    [
        (
            '{ device = "wager_station_1", code = "jam" }',
            "actions[0].clear: device='wager_station_1': only the fault of a shuffler",
        ),
        ('{ device = "shoe" }', "actions[0].clear: code=None: the fault code the shoe reported"),
        ('{ device = "shoe", code = "jam", when = "fault 1" }', 'actions[0].clear: a table { device = "shoe"'),
        ('"shoe"', 'actions[0].clear: a table { device = "shoe", code = "jam" }'),
    ],
)
def test_a_bad_clear_is_refused_naming_the_field(tmp_path: Path, clear: str, problem: str) -> None:
    scenario = tmp_path / "bad.scenario.toml"
    scenario.write_text(
        f'[[round]]\nwagers = {{ 1 = {{ ante = 1000 }} }}\n[[actions]]\nat = "table.blocked"\nclear = {clear}\n'
    )
    proc = _simulate(scenario)
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"{scenario}: " in proc.stderr and problem in proc.stderr, proc.stderr


def _journal(path: Path) -> list[tuple[str, dict[str, Any]]]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute("select type, payload from events order by seq").fetchall()
    finally:
        db.close()
    return [(t, json.loads(p)) for t, p in rows]


async def test_a_sim_script_clear_follows_the_devices_own_report(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(JAM + '[[clears]]\ndevice = "shoe"\ncode = "jam"\nwhen = "fault 1"\n')
    data = demo_config().model_dump()
    data["table_id"] = "scripted-clear"
    played = play(
        TableConfig.model_validate(data),
        rounds=2,
        broker=NO_BROKER,
        seed=5,
        journal_path=tmp_path / "j.sqlite",
        policy=ScriptedPolicy([ScriptedRound(wagers={1: {"ante": 1000}})]),
        sim_script=load_sim_script(tmp_path / "s.toml"),
    )
    async with asyncio.timeout(TIMEOUT):
        assert await played == 2
    events = _journal(tmp_path / "j.sqlite")
    types = [t for t, _ in events]
    assert "round.voided" not in types and types.count("round.completed") == 2
    completed = [i for i, t in enumerate(types) if t == "round.completed"]
    assert types.index("device.unusable") < types.index("device.fault_cleared") < completed[1]
    assert [p["code"] for t, p in events if t == "device.fault_cleared"] == ["jam"]


def test_a_clear_for_a_code_the_scenarios_faults_never_report_is_refused_at_load(tmp_path: Path) -> None:
    """The scenario's [[faults]] say the shoe reports a jam: a clear of "stopped" could never lift anything. Before, the
    table ignored the shoe's fault_cleared and the run waited ~30 s to end with "the table did not close"."""
    scenario = tmp_path / "never.scenario.toml"
    scenario.write_text(SCENARIO.replace('code = "jam", detail', 'code = "stopped", detail'))
    proc = _simulate(scenario)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr[-3000:]
    assert f"{scenario}: actions[0].clear: code='stopped': the scenario's [[faults]] have the shoe report only jam" in (
        proc.stderr
    )


def test_a_clear_due_for_a_fault_the_device_does_not_hold_fails_at_once_naming_the_step(tmp_path: Path) -> None:
    """A shoe may report "empty" unscripted, so the load lets the clear through; when it is due the shoe holds only its
    jam: the run fails at once naming the step and what the shoe holds, instead of waiting out the timeout."""
    scenario = tmp_path / "unheld.scenario.toml"
    scenario.write_text(SCENARIO.replace('code = "jam", detail', 'code = "empty", detail'))
    proc = _simulate(scenario)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "the simulated floor could not act: " in proc.stderr
    assert (
        f"{scenario}: actions[0]: clear shoe 'empty' at table.blocked 1: the table never heard the shoe report 'empty' "
        "(it holds jam)" in proc.stderr
    )
    assert "did not close" not in proc.stderr and "did not play out" not in proc.stderr
    types = [json.loads(line)["type"] for line in proc.stdout.splitlines()]
    assert "device.fault_cleared" not in types and types.count("round.completed") == 1


async def test_a_sim_scripts_sign_fault_locks_progressive_wagering_out_and_its_clear_lifts_it(tmp_path: Path) -> None:
    """docs/examples/demo--sign-lamp-failure.sim.toml: the sign's scripted lamp failure is a `sign:lamp_failure`
    lock-out (no round blocked); its [[clears]] entry lifts it. Before, a sim script could not name a sign's fault."""
    data = demo_config().model_dump()
    data["table_id"] = "scripted-sign-clear"
    played = play(
        TableConfig.model_validate(data),
        rounds=2,
        broker=NO_BROKER,
        seed=5,
        journal_path=tmp_path / "j.sqlite",
        policy=ScriptedPolicy([ScriptedRound(wagers={1: {"ante": 1000, "progressive": 100}})]),
        sim_script=load_sim_script(ROOT / "docs/examples/demo--sign-lamp-failure.sim.toml"),
    )
    async with asyncio.timeout(TIMEOUT):
        assert await played == 2
    events = _journal(tmp_path / "j.sqlite")
    types = [t for t, _ in events]
    assert "table.blocked" not in types and types.count("round.completed") == 2
    locked = next(
        i for i, (t, p) in enumerate(events) if t == "progressive.locked_out" and "sign:lamp_failure" in p["reasons"]
    )
    said = types.index("device.fault_cleared")
    assert events[said][1]["device"] == "progressive_sign" and events[said][1]["code"] == "lamp_failure"
    assert events[said][1]["detail"] == "lamps replaced" and events[said][1]["still_held"] == []
    unlocked = types.index("progressive.unlocked", said)
    assert locked < said < unlocked
