"""`tablectl settle` answers every documented example, and refuses bad input with a clear error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.settle.json"))


def settle(capsys: pytest.CaptureFixture[str], config: Path, round_file: Path) -> tuple[int, Any, str]:
    code = main(["settle", "--config", str(config), str(round_file)])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else None, err


def config_of(example: Path) -> Path:
    return ROOT / "configs" / f"{example.name.split('--')[0]}.toml"


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_settles_with_its_config(capsys: pytest.CaptureFixture[str], example: Path) -> None:
    assert config_of(example).exists(), f"{example.name} needs configs/{config_of(example).name}"
    code, result, err = settle(capsys, config_of(example), example)
    assert code == 0, err
    rows = [w for s in result["seats"] for w in s["wagers"]]
    assert rows and all(w["rule"] for w in rows)
    assert result["totals"]["paid"] == sum(w["paid"] for w in rows)
    for w in rows:  # exactly one of returned and collected is the wager
        assert sorted([w["returned"], w["collected"]]) == [0, w["amount"]]
    seats = [s["seat"] for s in result["seats"]]
    assert seats == sorted(seats, reverse=True) or result["chapter"] not in ("655a",)


def _wagers(result: dict[str, Any], seat: int) -> list[tuple[str, str, int, int]]:
    (s,) = [s for s in result["seats"] if s["seat"] == seat]
    return [(w["wager"], w["outcome"], w["paid"], w["collected"]) for w in s["wagers"]]


def test_655a_two_hits_of_the_major_are_paid_in_turn(capsys: pytest.CaptureFixture[str]) -> None:
    """Seat 6's straight flush takes the whole major, then seat 3's takes its $1,000 reseed (655a.12(c)(1) paytable C,
    (c)(3), (c)(4))."""
    example = ROOT / "docs/examples/mississippi-stud-progressive--two-hits-and-envy.settle.json"
    _, result, _ = settle(capsys, config_of(example), example)
    # Seat 6's straight flush takes the major meter ($1,800), which resets to $1,000 for 1 on a $1 wager;
    # seat 3's straight flush then takes that $1,000 (655a.12(c)(1) paytable C, (c)(3), (c)(4)).
    assert ("progressive", "win", 179_900, 0) in _wagers(result, 6)
    assert ("progressive", "win", 99_900, 0) in _wagers(result, 3)
    assert result["meters"]["after"]["major"] == 100_000
    # Envy: seat 5 is card-1001's other box, so it is envied only for seat 3's hand; seat 1 for both.
    assert [w for w in _wagers(result, 5) if w[0] == "envy_bonus"] == [("envy_bonus", "win", 30_000, 0)]
    assert [w for w in _wagers(result, 1) if w[0] == "envy_bonus"] == [("envy_bonus", "win", 30_000, 0)] * 2
    assert ("progressive", "win", 900, 0) in _wagers(result, 1)  # trips, 10 for 1 in paytable C


def test_655a_fold_and_bonuses(capsys: pytest.CaptureFixture[str]) -> None:
    example = ROOT / "docs/examples/mississippi-stud--fold-and-bonuses.settle.json"
    _, result, _ = settle(capsys, config_of(example), example)
    assert result["totals"] == {"paid": 130_200, "returned": 10_500, "collected": 1_000}
    assert _wagers(result, 2) == [
        ("ante", "lose", 0, 500),
        ("street_3", "lose", 0, 500),
        ("three_card_bonus", "win", 200, 0),
    ]


def test_chapter_mismatch_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"chapter": "643a", "seats": []}))
    code, _, err = settle(capsys, ROOT / "configs/mississippi-stud.toml", f)
    assert code == 2
    assert "\"chapter\" is '643a' but the config's table plays chapter 655a" in err


def test_invalid_record_names_the_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "r.json"
    f.write_text(
        json.dumps(
            {
                "chapter": "655a",
                "community": ["As", "Kd", "Xq"],
                "seats": [{"seat": 1, "cards": ["2c", "2d"], "wagers": {"ante": 500}}],
            }
        )
    )
    code, _, err = settle(capsys, ROOT / "configs/mississippi-stud.toml", f)
    assert code == 2 and "community" in err and "'Xq' is not a card" in err
    f.write_text("{not json")
    code, _, err = settle(capsys, ROOT / "configs/mississippi-stud.toml", f)
    assert code == 2 and "is not valid JSON" in err


def test_the_console_script_runs() -> None:
    example = EXAMPLES[0]
    proc = subprocess.run(
        [sys.executable, "-m", "controller.cli", "settle", "--config", str(config_of(example)), str(example)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["seats"]
