"""A table imports only its own chapter (issue 19: importing every chapter was about a third of the daemon's start).

Each check runs in a fresh interpreter (sys.modules of this test process already holds every chapter) and reads
which chapter packages it imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "643a": "let_it_ride",
    "655a": "mississippi_stud",
    "679a": "three_card_prime",
    "683a": "cajun_stud",
    "684a": "chapter_684a",
}


def chapters_imported(code: str) -> list[str]:
    script = """
import json, sys
import controller.cli.run  # the daemon's verb and everything it imports before reading the config
from pathlib import Path
from controller.cli.preflight import check_file
from controller.config.table import load_config
from controller.games.registry import chapter_of
report = check_file(Path(sys.argv[1]))  # what `tablectl run` checks before it starts
assert not report.errors, report
chapter_of(load_config(sys.argv[1]).game)
print(json.dumps(sorted({m.split(".")[2] for m in sys.modules if m.startswith("controller.games.") and
    m.count(".") >= 3})))
"""
    config = {
        "643a": "let-it-ride.toml",
        "655a": "mississippi-stud.toml",
        "679a": "three-card-prime.toml",
        "683a": "cajun-stud.toml",
        "684a": "chapter-684a.toml",
    }[code]
    out = subprocess.run(
        [sys.executable, "-c", script, str(ROOT / "configs" / config)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    found: list[str] = json.loads(out.stdout.splitlines()[-1])
    return found


@pytest.mark.parametrize("code", sorted(PACKAGES))
def test_a_table_imports_its_chapter_and_no_other(code: str) -> None:
    assert chapters_imported(code) == [PACKAGES[code]]


def test_every_chapter_still_listed_and_reachable_by_code() -> None:
    from controller.games.registry import CHAPTERS, REGISTRY, SPECS, chapters

    assert CHAPTERS == chapters() == tuple(sorted(PACKAGES))
    assert sorted(REGISTRY) == sorted(PACKAGES)
    for code in PACKAGES:
        assert REGISTRY[code].code == code
        assert SPECS[code] is REGISTRY[code].spec
    assert "999a" not in REGISTRY and REGISTRY.get("999a") is None
