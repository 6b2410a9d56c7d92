"""Numbers in outside text are ASCII digits 0-9 (controller/core/digits.py). `str.isdigit()` is also true for
"\\u0661" (an Arabic-Indic one: int() reads it as 1) and "\\u00b2" (a superscript two: int() raises ValueError), so
`tablectl par --meter mega=\\u00b2` failed with int()'s own message and `--meter mega=\\u0661` priced a one-cent
meter; a scenario's seat key, a stored accounts record's seat and the seat in a device id likewise. Each parser now
refuses every non-ASCII digit, naming the problem and the fix, and reads the same text in ASCII digits. The guard
at the end keeps an isdigit() that is not paired with isascii() out of the packages (the skeleton driver's serial
line is tests/drivers/test_skeleton_driver.py's)."""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.accounts import codec
from controller.cli.journal import _count
from controller.cli.par import _meters
from controller.cli.verb import UsageError
from controller.config.table import load_config
from controller.core.digits import ascii_int, is_ascii_digits
from controller.engine.accounts import terminal_seat
from controller.engine.round import _station_seat
from controller.people.scenario import ScenarioError, parse_scenario
from controller.shell.logs import connected_to_journald
from controller.shell.sdnotify import watchdog_interval
from drivers.sim.line import default_timing
from floor.recall import RoundStory, render_round
from floor.sdnotify import Notifier
from tests.tablectl_runs import tablectl

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("controller", "floor", "link", "drivers")
# Every character isdigit() takes but 0-9: other scripts' decimal digits, superscripts, circled and other digits.
NON_ASCII_DIGITS = [c for c in map(chr, range(0x110000)) if c.isdigit() and not c.isascii()]
STUD = load_config(ROOT / "configs" / "mississippi-stud.toml")


@st.composite
def spoiled(draw: st.DrawFn, value: int) -> str:
    """`value` in ASCII digits with one digit swapped for a non-ASCII one (superscript, Arabic-Indic, circled...)."""
    text = str(value)
    i = draw(st.integers(0, len(text) - 1))
    return text[:i] + draw(st.sampled_from(NON_ASCII_DIGITS)) + text[i + 1 :]


def test_the_characters_are_what_the_bug_needs() -> None:
    assert {"\u00b2", "\u0661", "\uff11", "\u2460"} <= set(NON_ASCII_DIGITS) and len(NON_ASCII_DIGITS) > 700
    assert int("\u0661") == 1  # read as a number without a word...
    with pytest.raises(ValueError):
        int("\u00b2")  # ...or refused where an isdigit() check had let it through


@given(st.data(), st.integers(0, 10**12))
def test_the_helpers_take_ascii_digits_only(data: st.DataObject, value: int) -> None:
    assert is_ascii_digits(str(value)) and ascii_int(str(value)) == value
    text = data.draw(spoiled(value))
    assert not is_ascii_digits(text)
    with pytest.raises(ValueError, match="is not written in ASCII digits 0-9"):
        ascii_int(text)


@given(st.data(), st.integers(0, 10**9))
def test_a_meter_on_the_command_line_is_ascii_cents(data: st.DataObject, cents: int) -> None:
    assert _meters([f"mega={cents}"]) == {"mega": cents}
    item = f"mega={data.draw(spoiled(cents))}"
    with pytest.raises(UsageError, match=r"write LEVEL=CENTS, the cents in ASCII digits 0-9, e\.g\. --meter mega="):
        _meters([item])


@pytest.mark.parametrize("amount", ["\u00b2", "\u0661"])
def test_tablectl_par_refuses_a_non_ascii_meter_with_status_2(amount: str) -> None:
    """Through the real command line: status 2 and the fix, not int()'s message (status 1) nor a one-cent meter."""
    config = str(ROOT / "configs" / "let-it-ride-progressive.toml")
    run = tablectl("par", "--config", config, "--meter", f"mega={amount}")
    assert run.returncode == 2, run.stderr
    assert f"tablectl: --meter 'mega={amount}': write LEVEL=CENTS, the cents in ASCII digits 0-9" in run.stderr
    assert "Traceback" not in run.stderr and "invalid literal" not in run.stderr and not run.stdout


def _wagers(seat: str) -> dict[str, Any]:
    return {"round": [{"wagers": {seat: {"ante": 1000}}}]}


@given(st.data(), st.integers(1, 6))
def test_a_scenario_seat_is_ascii(data: st.DataObject, seat: int) -> None:
    """docs/scenarios.md: `wagers = { 1 = { ante = 1000 } }`; a seat key in other digits is refused, naming it."""
    assert list(parse_scenario(_wagers(str(seat)), STUD).scripted[0].wagers) == [seat]
    key = data.draw(spoiled(seat))
    with pytest.raises(ScenarioError) as err:
        parse_scenario(_wagers(key), STUD)
    assert f"round[0].wagers.{key}: {key!r} is not a seat of this table (1 to 6, in ASCII digits)" in str(err.value)


def _accounts_record(seat: str, cents: int) -> bytes:
    """A stored game-accounts copy (controller/accounts/codec.py's format), its sha256 made as the codec does, so
    only the seat key is wrong."""
    state = {"balances": {seat: cents}, "bought_in": cents, "wagered": 0, "won": 0, "returned": 0, "cashed_out": 0}
    body = {"format": codec.FORMAT, "version": codec.VERSION, "generation": 3, "state": {**state, "seq": 1}}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return json.dumps({**body, "sha256": digest}).encode()


@given(st.data(), st.integers(1, 7), st.integers(1, 10**7))
def test_a_stored_accounts_seat_is_ascii(data: st.DataObject, seat: int, cents: int) -> None:
    ledger, generation = codec.decode(_accounts_record(str(seat), cents))
    assert (ledger.balances, generation) == ({seat: cents}, 3)
    key = data.draw(spoiled(seat))
    with pytest.raises(ValueError) as err:
        codec.decode(_accounts_record(key, cents))
    assert str(err.value) == f"balance of {key!r}: not a seat (a seat is written in ASCII digits 0-9)"


@given(st.data(), st.integers(1, 7))
def test_the_seat_in_a_device_id_is_ascii(data: st.DataObject, seat: int) -> None:
    """A device id that is not wager_station_<seat> / wager_terminal_<seat> in ASCII digits is another device (the
    engine's irregularity path), never an int() that raises inside a step or a seat read from other digits."""
    assert terminal_seat(f"wager_terminal_{seat}") == seat and _station_seat(f"wager_station_{seat}") == seat
    key = data.draw(spoiled(seat))
    assert terminal_seat(f"wager_terminal_{key}") is None and _station_seat(f"wager_station_{key}") is None


@given(st.data(), st.integers(1, 10**9))
def test_systemd_and_cli_numbers_are_ascii(data: st.DataObject, value: int) -> None:
    """WATCHDOG_USEC (both services), JOURNAL_STREAM, `tablectl journal -n` and TABLECTL_SIM_BAUD."""
    text = data.draw(spoiled(value))
    assert watchdog_interval({"WATCHDOG_USEC": str(value)}) == value / 1_000_000
    assert watchdog_interval({"WATCHDOG_USEC": text}) is None
    assert not connected_to_journald(sys.stderr, {"JOURNAL_STREAM": f"{text}:{value}"})
    assert _count(str(value)) == value
    with pytest.raises(argparse.ArgumentTypeError, match=r"is not a whole number in ASCII digits: give e\.g\. -n 20"):
        _count(text)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("WATCHDOG_USEC", str(value))
        assert Notifier(None).watchdog_interval == value / 2_000_000
        env.setenv("WATCHDOG_USEC", text)
        assert Notifier(None).watchdog_interval is None
        env.setenv("TABLECTL_SIM_BAUD", str(value))
        assert default_timing().baud == value
        env.setenv("TABLECTL_SIM_BAUD", text)
        with pytest.raises(ValueError, match=r"is not a whole number of baud, e\.g\. 115200"):
            default_timing()


@given(st.data(), st.lists(st.integers(1, 12), min_size=1, max_size=4, unique=True))
def test_a_recalled_rounds_seats_are_ordered_without_int_on_other_digits(data: st.DataObject, seats: list[int]) -> None:
    """`tablectl floor recall`: the archived wagers' seat keys are a table's payload. A key in other digits is listed
    after the seats, as archived, where int() raised on "\\u00b2" (a traceback) or sorted "\\u0661" as seat 1."""
    odd = data.draw(spoiled(data.draw(st.integers(1, 12))))
    wagers = {key: {"ante": 500} for key in [odd, *map(str, seats)]}
    text = render_round(RoundStory("r1", "t1", "2026-11-21", "completed", "a", "b", wagers=wagers))
    listed = [
        line.split(":")[0].removeprefix("    seat ") for line in text.splitlines() if line.startswith("    seat ")
    ]
    assert listed == [*map(str, sorted(seats)), odd]


# An isdigit() (or isdecimal(), isnumeric()) meant to take every script's digits, as "path: source" -> why. None yet.
UNICODE_DIGITS_INTENDED: dict[str, str] = {}
DIGIT_TESTS = ("isdigit", "isdecimal", "isnumeric")


def _unpaired_digit_tests(path: Path) -> list[tuple[int, str]]:
    """(line, source) of each isdigit/isdecimal/isnumeric in `path` not preceded in the same `and` by isascii() on the
    same text: `s.isascii() and s.isdigit()` passes, `s.isdigit()` and `str.isdigit` (as a key or filter) do not."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    paired: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            checked: set[str] = set()
            for value in node.values:
                if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and not value.args:
                    text = ast.dump(value.func.value)
                    if value.func.attr == "isascii":
                        checked.add(text)
                    elif value.func.attr in DIGIT_TESTS and text in checked:
                        paired.add(id(value.func))
    return [
        (node.lineno, ast.get_source_segment(source, node) or node.attr)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in DIGIT_TESTS and id(node) not in paired
    ]


def test_no_isdigit_in_the_packages_takes_other_scripts_digits() -> None:
    """A guard for the next parser: every isdigit() on outside text pairs with isascii() first (or uses
    controller.core.digits), unless UNICODE_DIGITS_INTENDED says why not."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {segment}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, segment in _unpaired_digit_tests(path)
        if f"{path.relative_to(ROOT)}: {segment}" not in UNICODE_DIGITS_INTENDED
    ]
    assert not found, (
        "isdigit() is true for '\\u00b2' (int() refuses it) and '\\u0661' (int() reads 1): write "
        "`s.isascii() and s.isdigit()` or controller.core.digits.is_ascii_digits(s) (a test meant for every "
        "script's digits: UNICODE_DIGITS_INTENDED, with why):\n" + "\n".join(found)
    )


def test_the_guard_finds_what_it_is_for(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def a(s, t):\n"
        "    ok = s.isascii() and s.isdigit()\n"
        "    bad = s.isdigit()\n"
        "    crossed = t.isascii() and s.isdecimal()\n"
        "    after = s.isnumeric() and s.isascii()\n"
        "    return sorted(s, key=str.isdigit)\n",
        encoding="utf-8",
    )
    assert [line for line, _ in _unpaired_digit_tests(probe)] == [3, 4, 5, 6]
