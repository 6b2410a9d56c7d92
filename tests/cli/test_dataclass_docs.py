"""Under -OO (systemd/tablectl.service), `controller.cli` spares `dataclasses` the `inspect.signature(cls)` it would
call to write each dataclass a docstring: ~190 a table start, ~6 ms of its CPU idle. A fresh interpreter each (this
process is not optimised), run as the unit runs it and not."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import inspect, json, sys
calls = []
real = inspect.signature
def counted(obj, *args, **kwargs):
    calls.append(getattr(obj, "__name__", "?"))
    return real(obj, *args, **kwargs)
inspect.signature = counted  # what dataclasses would call, counted
import controller.cli, dataclasses
@dataclasses.dataclass(frozen=True, slots=True)
class Seat:
    number: int
def f(a: int, b: str = "x") -> None: ...
made = list(calls)
print(json.dumps({"doc": Seat.__doc__, "calls": made, "seat": repr(Seat(3)),
                  "real": str(inspect.signature(f)), "same_inspect": dataclasses.inspect is inspect}))
"""


def probe(optimize: str | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONOPTIMIZE"}
    if optimize is not None:
        env["PYTHONOPTIMIZE"] = optimize
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True)
    found: dict[str, object] = json.loads(out.stdout)
    return found


def test_under_OO_a_dataclass_gets_its_bare_name_without_a_signature() -> None:
    found = probe("2")
    assert found["doc"] == "Seat" and found["calls"] == [] and found["seat"] == "Seat(number=3)"
    assert found["real"] == "(a: int, b: str = 'x') -> None"  # inspect itself is untouched for everyone else
    assert found["same_inspect"] is False


def test_unoptimised_and_under_O_dataclasses_are_left_alone() -> None:
    """-O keeps docstrings: a class without one gets the signature, as always (and the check can fail)."""
    for optimize in (None, "1"):
        found = probe(optimize)
        assert found["doc"] == "Seat(number: int)" and found["calls"] == ["Seat"] and found["same_inspect"] is True
