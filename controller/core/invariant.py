"""A state the code's own checks rule out, said as an error rather than an `assert`: the deployed daemon runs
optimised (`PYTHONOPTIMIZE=2`, systemd/tablectl.service), which strips every `assert`, and a check that guards money,
meters or a device's session must hold there too. tests/test_no_asserts.py keeps `assert` out of the packages."""

from __future__ import annotations

from typing import TypeVar

_T = TypeVar("_T")

INVARIANT_TILT = "tilt:invariant"


class InvariantBroken(RuntimeError):
    """A state the checks before this point rule out: a bug, named. In an engine step it raises the tilt
    `tilt:invariant` and the step changes nothing (controller.engine.round.RoundEngine.step); elsewhere it fails
    what it interrupted with this message (a supervised task's `task.failed`, a verb's one line on stderr)."""


def present(value: _T | None, what: str) -> _T:
    """`value`, which the caller's own checks guarantee is set; InvariantBroken naming `what` if it is not."""
    if value is None:
        raise InvariantBroken(f"{what} missing")
    return value
