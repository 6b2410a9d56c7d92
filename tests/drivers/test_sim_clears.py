"""A sim script's [[clears]] (the attendant clears a fault the table holds) and a fault the device reports by itself
(`report = true`): read at load, with a bad entry refused naming the file, the entry and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from drivers.sim.faults import Fault, FaultKind, Trigger
from drivers.sim.script import ScriptedClear, ScriptedFault, SimScriptError, load_sim_script

SCRIPT = """
[[faults]]
device = "shoe"
fault = "jam"
when = "remove_stub 1"
report = true

[[clears]]
device = "shoe"
code = "jam"
when = "fault 1"
detail = "taken out by hand"

[[clears]]
device = "shuffler"
code = "stopped"
"""


def test_clears_and_a_reported_fault_load(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(SCRIPT)
    script = load_sim_script(path)
    assert script.faults == (ScriptedFault("shoe", Fault(FaultKind.JAM, report=True), Trigger("remove_stub", 1)),)
    assert script.clears == (
        ScriptedClear("shoe", "jam", Trigger("fault", 1), "taken out by hand"),
        ScriptedClear("shuffler", "stopped", None, ""),
    )


CLEAR = '[[clears]]\ndevice = "shoe"\n'


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            '[[clears]]\ndevice = "wager_station_1"\ncode = "jam"',
            "clears[0]: device='wager_station_1': only the fault of a shuffler, shoe or progressive_sign",
        ),
        (CLEAR + 'code = "Jam!"', "clears[0]: code='Jam!': the fault code the shoe reported"),
        (CLEAR, "clears[0]: code=None"),
        (CLEAR + 'code = "jam"\nwhen = "shuffle 1"', "clears[0]: a shoe never sees 'shuffle'"),
        (CLEAR + 'code = "jam"\nwhen = "later"', "clears[0]: when='later'"),
        (CLEAR + 'code = "jam"\nby = "me"', "clears[0]: unknown key(s) by; expected code, detail, device, when"),
        (CLEAR + 'code = "jam"\ndetail = 3', "clears[0]: detail must be text"),
        ('clears = "shoe"', "clears must be a list of [[clears]] tables"),
        (
            '[[faults]]\ndevice = "shuffler"\nfault = "count_51"\nreport = true',
            "faults[0]: report = true is for a fault a device finds by itself (jam, lamp_failure, stopped), "
            "not count_51",
        ),
        ('[[faults]]\ndevice = "shoe"\nfault = "jam"\nreport = "yes"', "faults[0]: report must be true or false"),
    ],
)
def test_a_bad_clear_names_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(SimScriptError) as caught:
        load_sim_script(path)
    assert str(caught.value).startswith(f"{path}: ") and problem in str(caught.value), str(caught.value)
