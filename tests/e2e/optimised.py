"""The environment systemd's units run tablectl in (`PYTHONOPTIMIZE=2 PYTHONNODEBUGRANGES=1`: python -OO -X
no_debug_ranges), for the tests that start the table, the floor and the link as their units do
(tests/e2e/test_optimised_e2e.py, tests/floor/test_optimised_floor.py, tests/link/test_optimised_link.py)."""

from __future__ import annotations

import os
from pathlib import Path

UNIT = {"PYTHONOPTIMIZE": "2", "PYTHONNODEBUGRANGES": "1"}  # the Environment= of systemd/tablectl*.service


def cache(tmp: Path) -> Path:
    """Where a process started with unit_env() writes its bytecode, `*.opt-2.pyc` files."""
    return tmp / "pycache"


def unit_env(tmp: Path) -> dict[str, str]:
    """The unit's settings to lay over the test's environment, with bytecode written as modules load into a cache of
    the test's own (the source directories may not be writable; PYTHONDONTWRITEBYTECODE empty is unset): an installed
    service has it compiled (systemd/README.md), and without it check-config warns (tests/cli/test_bytecode.py)."""
    return {**UNIT, "PYTHONPYCACHEPREFIX": str(cache(tmp)), "PYTHONDONTWRITEBYTECODE": ""}


def env(tmp: Path, optimised: bool = True) -> dict[str, str]:
    """A whole environment: the unit's settings (or none, and no PYTHONOPTIMIZE the test's may hold), bytecode
    written into the test's own cache either way."""
    base = {k: v for k, v in os.environ.items() if k not in {*UNIT, "PYTHONDONTWRITEBYTECODE"}}
    mine = unit_env(tmp) if optimised else {"PYTHONPYCACHEPREFIX": str(cache(tmp))}
    return {**base, **mine, "XDG_STATE_HOME": str(tmp), "PYTHONUNBUFFERED": "1"}
