"""Every `tablectl` verb and sub-verb (controller/cli, floor/cli, link/cli) answers a bad argument with a non-zero exit
and one line that names the problem and the fix, never a traceback, a hang or a read of /dev/zero until memory runs
out. The verbs run in this process through main(); the files are real (a FIFO, a directory, /dev/zero, a binary and
an empty file), and nothing here needs a broker or a database: each case is refused before either is reached."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.cli import numbers, options
from controller.cli.main import main
from controller.cli.preflight import check_file

ROOT = Path(__file__).resolve().parents[2]
CFG = str(ROOT / "configs" / "demo.toml")
FLOOR = str(ROOT / "configs" / "floor.toml")
LINK = str(ROOT / "configs" / "link.toml")
ROUND = str(ROOT / "docs" / "examples" / "let-it-ride--progressive-envy.settle.json")

# Numbers as a person might mistype them: Unicode digits int() would read (U+0665, a fullwidth 5), spaces (U+3000
# too), an underscore, a sign, too many digits for any count, and what float() takes for a number.
BAD_NUMBERS = ["", "abc", "\u0665", "\uff15", " 5 ", "\u30005", "1_000", "9" * 5000, "1e999", "nan", "-3"]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "dir").mkdir()
    (tmp_path / "bad.toml").write_text("not = [toml\n")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "empty.toml").write_text("")
    os.mkfifo(tmp_path / "fifo")
    return {
        "missing": str(tmp_path / "missing.toml"),
        "a directory": str(tmp_path / "dir"),
        "not TOML": str(tmp_path / "bad.toml"),
        "not UTF-8": str(tmp_path / "bin.toml"),
        "a FIFO": str(tmp_path / "fifo"),
        "/dev/zero": "/dev/zero",
        "an empty string": "",
    }


def file_cases(files: dict[str, str]) -> Iterator[tuple[str, list[str]]]:
    """(what, argv) for every option or operand that names a file to read."""
    takes_file: list[tuple[str, Callable[[str], list[str]]]] = [
        ("demo --config", lambda f: ["demo", "--rounds", "1", "--config", f]),
        ("demo --script", lambda f: ["demo", "--rounds", "1", "--script", f]),
        ("simulate --scenario", lambda f: ["simulate", "--config", CFG, "--scenario", f]),
        ("simulate --config", lambda f: ["simulate", "--scenario", f, "--config", f]),
        ("run --config", lambda f: ["run", "--config", f]),
        ("run --ports", lambda f: ["run", "--config", CFG, "--ports", f]),
        ("devices --config", lambda f: ["devices", "--config", f]),
        ("sim-devices --script", lambda f: ["sim-devices", "--config", CFG, "--script", f]),
        ("settle ROUND", lambda f: ["settle", "--config", CFG, f]),
        ("settle --config", lambda f: ["settle", "--config", f, ROUND]),
        ("par --config", lambda f: ["par", "--config", f]),
        (
            "command send --key",
            lambda f: ["command", "send", "--key", f, "--key-id", "a", "--table", "t", "open_table"],
        ),
        ("journal verify --segment", lambda f: ["journal", "verify", "--segment", f]),
        ("journal tail --config", lambda f: ["journal", "tail", "--config", f]),
        ("floor status", lambda f: ["floor", "--config", f, "status"]),
        ("floor check-config", lambda f: ["floor", "--config", f, "check-config"]),
        ("floor console keys", lambda f: ["floor", "--config", f, "console", "keys"]),
        ("report --day", lambda f: ["report", "--config", f, "--day", "2026-11-21"]),
        ("report export", lambda f: ["report", "--config", f, "export", "--day", "2026-11-21"]),
        ("link report", lambda f: ["link", "--config", f, "report"]),
        ("link check-config", lambda f: ["link", "--config", f, "check-config"]),
        ("link send --key", lambda f: ["link", "--config", LINK, "send", "open_link", "--key-id", "m", "--key", f]),
    ]
    for verb, argv in takes_file:
        for kind, path in files.items():
            if kind == "not TOML" and verb in ("settle ROUND", "command send --key", "link send --key"):
                continue
            yield f"{verb}: {kind}", argv(path)


def number_cases() -> Iterator[tuple[str, list[str]]]:
    takes_number: list[tuple[str, Callable[[str], list[str]]]] = [
        ("demo --rounds", lambda n: ["demo", "--rounds", n]),
        ("demo --seed", lambda n: ["demo", "--rounds", "1", "--seed", n]),
        ("demo --pace", lambda n: ["demo", "--rounds", "1", "--pace", n]),
        ("demo --http", lambda n: ["demo", "--floor", "--http", f"127.0.0.1:{n}"]),
        ("sim-devices --seed", lambda n: ["sim-devices", "--config", CFG, "--seed", n]),
        ("simulate --timeout", lambda n: ["simulate", "--config", CFG, "--scenario", ROUND, "--timeout", n]),
        ("par --others", lambda n: ["par", "--config", CFG, "--others", n]),
        ("journal tail -n", lambda n: ["journal", "tail", "--journal", "j.sqlite", "-n", n]),
        ("journal archive --keep-rounds", lambda n: ["journal", "archive", "--journal", "j", "--keep-rounds", n]),
        ("command send --timeout", lambda n: ["command", "send", "--key", "k", "--key-id", "a", "--timeout", n, "x"]),
        ("floor rounds --last", lambda n: ["floor", "--config", FLOOR, "rounds", "t1", "--last", n]),
        (
            "link send --timeout",
            lambda n: ["link", "--config", LINK, "send", "v", "--key", "k", "--key-id", "m", "--timeout", n],
        ),
    ]
    for verb, argv in takes_number:
        for n in BAD_NUMBERS:
            if n == "-3" and verb == "demo --http":
                continue  # "127.0.0.1:-3" is refused too, but argparse reads it as an option; covered by "abc"
            yield f"{verb} {n[:12]!r}", argv(n)


OTHER_CASES: list[tuple[str, list[str]]] = [
    ("demo --http without a port", ["demo", "--floor", "--http", "localhost"]),
    ("demo --http port 99999", ["demo", "--floor", "--http", "127.0.0.1:99999"]),
    ("demo --http empty", ["demo", "--floor", "--http", ""]),
    ("demo --broker empty", ["demo", "--broker", ""]),
    # --floor and --linked play tables of their own: a one-table option with them used to be ignored without a word.
    ("demo --floor --config", ["demo", "--floor", "--config", CFG]),
    ("demo --linked --journal", ["demo", "--linked", "--journal", "j.sqlite"]),
    ("demo --floor --pace", ["demo", "--floor", "--pace", "0"]),
    ("demo --linked --players", ["demo", "--linked", "--players", "optimal"]),
    ("demo --floor --script", ["demo", "--floor", "--script", CFG]),
    ("demo --keep without --linked", ["demo", "--keep", "kept"]),
    ("demo --floor --keep", ["demo", "--floor", "--keep", "kept"]),
    ("demo --linked --keep a file", ["demo", "--linked", "--keep", CFG]),
    ("command keygen --key-id empty", ["command", "keygen", "--out", "never-written.pem", "--key-id", ""]),
    ("rules --chapter empty", ["rules", "--chapter", ""]),
    ("rules --source nowhere", ["rules", "--chapter", "655a", "--source", "/nonexistent-checkout"]),
    ("schema unknown", ["schema", "no-such-topic"]),
    ("par --meter fullwidth", ["par", "--config", CFG, "--meter", "mega=\uff15\uff10\uff10"]),
    ("report --day Feb 30", ["report", "--config", FLOOR, "--day", "2026-02-30"]),
    ("report --day fullwidth", ["report", "--config", FLOOR, "--day", "\uff12\uff10\uff12\uff16-11-21"]),
    ("link send --key not a key", ["link", "--config", LINK, "send", "open_link", "--key-id", "m", "--key", CFG]),
    ("verify-software --key not base64", ["verify-software", "--key", "not base64!"]),
    ("verify-software --key short", ["verify-software", "--key", "AAAA"]),
    ("no such verb", ["frobnicate"]),
]

_USAGE_LINE = re.compile(r"^(usage: | )")


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """The exit status and the lines a person reads on stderr (argparse's usage block and log records left out)."""
    try:
        code = main(argv)
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    said = [ln for ln in err.splitlines() if ln.strip() and not _USAGE_LINE.match(ln) and not ln.startswith("{")]
    return code, said


def refusal_problem(what: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str | None:
    """What is wrong with how `argv` was refused, or None when it was refused as it should be."""
    code, said = run(argv, capsys)
    if code == 0:
        return f"{what}: accepted {argv!r}"
    if not said:
        return f"{what}: refused with nothing said"
    line = said[0]
    if len(line) > 400:
        return f"{what}: a line of {len(line)} characters"
    if "a bug" in line or "unexpected" in line:
        return f"{what}: {line}"
    # The fix: the message says what to give, pass, write or save, names what is allowed, or where the text is wrong.
    if not re.search(FIX, line):
        return f"{what}: no fix in {line!r}"
    return None


FIX = (
    r"give|pass|write|save|choose|chapters are|must|invalid choice|should|expected|at line|is required|known: "
    r"|make one|paste"
)


def test_files_that_cannot_be_read_are_refused_naming_the_file(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    problems = [p for what, argv in file_cases(files) if (p := refusal_problem(what, argv, capsys))]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("what", "argv"), list(number_cases()) + OTHER_CASES, ids=lambda v: str(v)[:60])
def test_bad_values_are_refused_with_one_line(what: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    problem = refusal_problem(what, argv, capsys)
    assert problem is None, problem


@given(st.integers(0, 10**9))
def test_ascii_whole_numbers_in_bounds_pass(n: int) -> None:
    assert numbers.whole("--x", 0, 10**9, "--x 5")(str(n)) == n
    if n >= 1:
        assert options.rounds(str(n)) == n


@given(st.text(min_size=1, max_size=12))
def test_a_whole_number_is_ascii_digits_only(text: str) -> None:
    parse = numbers.whole("--x", 0, 10**30, "--x 5")
    if re.fullmatch(r"[0-9]+", text):
        assert parse(text) == int(text)
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=r"is not a whole number in ASCII digits: give e\.g\."):
            parse(text)


@given(st.text(min_size=1, max_size=12))
def test_seconds_are_ascii_decimals_only(text: str) -> None:
    parse = numbers.seconds("--pace", 0, 10**16, "--pace 0.2")
    if re.fullmatch(r"[0-9]+(\.[0-9]+)?|\.[0-9]+", text):
        assert parse(text) == float(text)
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=r"is not a number of seconds in ASCII digits"):
            parse(text)


def test_a_value_too_long_to_be_meant_is_quoted_short() -> None:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        options.rounds("9" * 5000)
    assert len(str(refused.value)) < 150 and "(5000 characters)" in str(refused.value)


@pytest.mark.parametrize(("name", "verb"), [("floor.toml", "floor"), ("link.toml", "link")])
def test_check_config_names_the_verb_for_a_service_config(name: str, verb: str) -> None:
    """`tablectl check-config configs/*.toml` takes in the floor's and the link's configs: one finding naming the
    verb that checks them, not fifteen missing table fields."""
    report = check_file(ROOT / "configs" / name)
    assert not report.valid
    assert [(f.field, f.problem) for f in report.findings] == [
        ("(file)", f"is the {'floor service' if verb == 'floor' else 'link controller'}'s config, not a table's")
    ]
    assert f"tablectl {verb} --config " in report.findings[0].fix
