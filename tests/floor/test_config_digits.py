"""Config patterns take ASCII digits only (as controller/mqtt/contract.py's): in pydantic-core's Rust regex and in
Python's `re` on text, \\d is every Unicode decimal digit, so FLOOR.toml's `starts_at = "0\\u0666:30"` (an
Arabic-Indic six) was accepted and printed so in every report's period, and a table's rules took
`ante_odds = "\\uff11 to 1"` (a fullwidth one). Each is now refused with the field and the fix named; the same text
in ASCII digits passes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.core.money import Odds
from floor.config import FloorConfigError, parse_floor_config
from tests.mqtt.test_contract_digits import ZEROS, foreign

ROOT = Path(__file__).resolve().parents[2]
# Where operators' and tables' text is read: every str pattern there spells its digits [0-9].
PACKAGES = ("controller", "floor", "link", "drivers")


def floor_toml(starts_at: str, start: str, end: str) -> str:
    return (
        f'[database]\ndsn = "x"\n[gaming_day]\nstarts_at = "{starts_at}"\n'
        f'[[shifts]]\nname = "day"\nstart = "{start}"\nend = "{end}"\n'
    )


clock_times = st.builds(lambda h, m: f"{h:02d}:{m:02d}", st.integers(0, 23), st.integers(0, 59))


@given(clock_times, st.sampled_from(ZEROS), st.integers(0, 3), st.sampled_from(["starts_at", "start", "end"]))
def test_a_clock_time_passes_exactly_when_its_digits_are_ascii(hhmm: str, zero: int, at: int, field: str) -> None:
    times = {"starts_at": "06:00", "start": "06:00", "end": "14:00", field: hhmm}
    config = parse_floor_config(floor_toml(times["starts_at"], times["start"], times["end"]))
    assert config.gaming_day.starts_at == times["starts_at"] and config.shifts[0].end == times["end"]
    i = [0, 1, 3, 4][at]
    times[field] = hhmm[:i] + foreign(hhmm[i], zero) + hhmm[i + 1 :]
    with pytest.raises(FloorConfigError) as err:
        parse_floor_config(floor_toml(times["starts_at"], times["start"], times["end"]))
    where = "gaming_day.starts_at" if field == "starts_at" else f"shifts[0].{field}"
    fix = 'e.g. "06:00"' if field == "starts_at" else '"HH:MM" on the 24-hour clock'
    assert f"{where}: String should match pattern '^([01][0-9]|2[0-3]):[0-5][0-9]$'" in str(err.value)
    assert fix in str(err.value)


@given(st.integers(1, 10_000), st.integers(1, 10), st.sampled_from(["to", "for"]), st.sampled_from(ZEROS))
def test_odds_pass_exactly_when_their_digits_are_ascii(numerator: int, denominator: int, kind: str, zero: int) -> None:
    """The rules' odds (e.g. 679a's Rules Submission `ante_odds`, read through Odds.parse as a field validator)."""
    text = f"{numerator:,} {kind} {denominator}"
    assert Odds.parse(text) == Odds(numerator, denominator, "to" if kind == "to" else "for")
    for bad in (
        f"{foreign(f'{numerator:,}', zero)} {kind} {denominator}",
        f"{numerator} {kind} {foreign(str(denominator), zero)}",
    ):
        with pytest.raises(ValueError, match=r"is not payout odds: write e\.g\. '500 to 1'"):
            Odds.parse(bad)


def test_no_text_pattern_in_the_packages_spells_a_digit_backslash_d() -> None:
    """A guard for the next pattern: a str literal (bytes patterns are ASCII already) holding \\d, outside docstrings,
    in the packages that validate outside text."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docstrings = {
                id(node.body[0].value)
                for node in ast.walk(tree)
                if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                and node.body
                and isinstance(node.body[0], ast.Expr)
                and isinstance(node.body[0].value, ast.Constant)
            }
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(value := node.value, str)
                    and id(node) not in docstrings
                ):
                    found += [f"{path.relative_to(ROOT)}:{node.lineno}: {value!r}"] if "\\d" in value else []
    assert not found, "spell digits [0-9], not \\d (every Unicode digit):\n" + "\n".join(found)
