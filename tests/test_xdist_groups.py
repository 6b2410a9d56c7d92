"""`dev.py test` runs the suite on two pytest-xdist workers with `--dist loadgroup`, and a module whose fixture costs
seconds (tests/floor/test_floor_e2e.py's tables and floor) is kept on one worker by `xdist_group`. pytest 9.2 made
that mark do nothing, silently (pytest-dev/pytest-xdist#1386): every module fixture was made on both workers. This
runs a real two-worker pytest on a small suite and fails if a group's tests end up on more than one worker, so a
version bump that breaks the grouping is caught here rather than in CI's minutes."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

GROUPED = """
import pytest

pytestmark = pytest.mark.xdist_group("made_once")


@pytest.mark.parametrize("n", range(6))
def test_grouped(n: int) -> None:
    pass
"""
FREE = """
import pytest


@pytest.mark.parametrize("n", range(6))
def test_free(n: int) -> None:
    pass
"""


def test_an_xdist_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "test_free.py").write_text(FREE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not this repository's options
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, module in re.findall(r"^\[(gw[0-9]+)\] .*PASSED (test_[a-z]+)\.py::", run.stdout, re.M):
        workers[module].add(worker)
    assert len(workers["test_free"] | workers["test_grouped"]) == 2, run.stdout  # both worked: the next can fail
    assert len(workers["test_grouped"]) == 1, (
        "pytest-xdist spread an xdist_group over both workers (pytest 9.2 with xdist 3.8 does: "
        "pytest-dev/pytest-xdist#1386); keep pytest below the version that breaks it in pyproject.toml\n" + run.stdout
    )
