"""systemd's own tools, found or the test skipped (failed in CI, where .ci/run installs them), and `systemd-analyze
verify` on a unit: the table's unit is checked with them (tests/systemd/test_unit.py), and so are the floor service's
and the link controller's (test_service_units.py). Shared here, so that neither test module imports the other."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

# Where `pip install` puts the console script on a table PC, as the units name it.
INSTALLED_AT = "/usr/local/bin/tablectl"
# The most `systemd-analyze security --offline=true` may rate a unit's exposure.
MAX_EXPOSURE = 2.0


def tool(name: str) -> str:
    found = shutil.which(name) or next((p for p in (f"/usr/bin/{name}", f"/bin/{name}") if os.access(p, os.X_OK)), None)
    if found is None:
        why = f"{name} is not installed (Debian package `systemd`; .ci/run installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why}: the unit cannot be checked in CI", pytrace=False)
        pytest.skip(why)
    return found


def verify(unit: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool("systemd-analyze"), "verify", "--man=no", str(unit)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=unit.parent,
    )
