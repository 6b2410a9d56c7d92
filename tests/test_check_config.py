"""`tablectl check-config`: every example config passes; each kind of broken config is refused with the field,
the problem and the fix; files, drivers and the journal are checked beyond the schema; exit status 0/1/2.

The configs are real files (TOML text edited as an operator would), the drivers come from the real entry-point
group and the files are real files in a temporary directory.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.cli.findings import Finding
from controller.cli.main import main
from controller.cli.preflight import check_file

ROOT = Path(__file__).resolve().parent.parent
# The table configs: those with a [game] table (configs/ also holds the floor's, checked in tests/floor).
CONFIGS = sorted(p for p in (ROOT / "configs").glob("*.toml") if "game" in tomllib.loads(p.read_text()))
BASE = (ROOT / "configs" / "mississippi-stud.toml").read_text()


@pytest.fixture(autouse=True)
def _state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # The journal goes where systemd's StateDirectory= would put it, here a directory the test can write.
    state = tmp_path / "state"
    monkeypatch.setenv("STATE_DIRECTORY", str(state))
    return state


def _write(tmp_path: Path, text: str, name: str = "table.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _edit(old: str, new: str, text: str = BASE, count: int = 1) -> str:
    assert old in text, old
    return text.replace(old, new, count)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_example_config_passes(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(path)]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith(f"{path}: valid") and "error" not in out
    assert re.search(r"table [\w-]+, game \d{3}a.*, \d seats, \d+ device\(s\)", first), first


def test_summary_names_table_game_seats_devices_and_journal(
    _state_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check-config", str(ROOT / "configs" / "cajun-stud.toml")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert (
        "table cajun-table-01, game 683a (Cajun Stud), 6 seats, 9 device(s) (6 wager station(s)), broker "
        f"mqtt://127.0.0.1:1883, journal {_state_dir / 'cajun-table-01.sqlite'}"
    ) in first


def _secret(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# (case, how the operator broke the config, field, problem, fix)
BROKEN: list[tuple[str, Callable[[Path], str], str, str, str]] = [
    (
        "typo'd key",
        lambda t: _edit("six_card_bonus_paytable =", "six_card_bonus_paytabel ="),
        "game.six_card_bonus_paytabel",
        "is not a known setting",
        "did you mean six_card_bonus_paytable?",
    ),
    (
        "typo'd section",
        lambda t: _edit('prefix = "tablectl"', 'prefix = "tablectl"\nbrokr = "mqtt://x"'),
        "mqtt.brokr",
        "is not a known setting",
        "did you mean broker?",
    ),
    (
        "missing chapter",
        lambda t: _edit('chapter = "655a"\n', ""),
        "game.chapter",
        "must name the game's chapter, one of 643a, 655a, 679a, 683a, 684a",
        'chapter = "655a"',
    ),
    (
        "unknown chapter",
        lambda t: _edit('chapter = "655a"', 'chapter = "656a"'),
        "game.chapter",
        "(got '656a')",
        'set it in [game] to one of those, e.g. chapter = "655a"',
    ),
    (
        "missing table_id",
        lambda t: _edit('table_id = "ms-table-01"\n', ""),
        "table_id",
        "is required but missing",
        "add it",
    ),
    (
        "table_id with a space",
        lambda t: _edit('table_id = "ms-table-01"', 'table_id = "ms table 01"'),
        "table_id",
        "(got 'ms table 01')",
        "use letters, digits, - and _ only",
    ),
    (
        "wrong type",
        lambda t: _edit("seats = 6 ", 'seats = "six" '),
        "game.seats",
        "Input should be a valid integer, unable to parse string as an integer (got 'six')",
        "write a whole number without quotes",
    ),
    (
        "cents with a fraction",
        lambda t: _edit("ante_min_cents = 500", "ante_min_cents = 5.5"),
        "game.ante_min_cents",
        "fractional part (got 5.5)",
        "write a whole number (amounts are in cents)",
    ),
    (
        "too many seats",
        lambda t: _edit("seats = 6 ", "seats = 8 "),
        "game.seats",
        "less than or equal to 6 (got 8)",
        "give at most 6",
    ),
    (
        "bad paytable letter",
        lambda t: _edit('three_card_bonus_paytable = "A"', 'three_card_bonus_paytable = "Z"'),
        "game.three_card_bonus_paytable",
        "Input should be 'A', 'B', 'C' or 'D' (got 'Z')",
        "use one of those values",
    ),
    (
        "bad seat list",
        lambda t: _edit('seat-6"\nseat = 6', 'seat-6"\nseat = 5'),
        "devices.wager_stations",
        "found seats [1, 2, 3, 4, 5, 5]: seat 6 has no station; seat 5 is doubled "
        "(devices.wager_stations[4] and devices.wager_stations[5])",
        "Give each seat exactly one station",
    ),
    (
        "station for a seat the game lacks",
        lambda t: _edit('seat-6"\nseat = 6', 'seat-6"\nseat = 7'),
        "devices.wager_stations",
        "devices.wager_stations[5] names seat 7, which the game does not have",
        "Give each seat exactly one station",
    ),
    (
        "no driver",
        lambda t: _edit('driver = "reference-shoe"\n', ""),
        "devices.shoe.driver",
        "is missing",
        "add driver = one of: alpha-sign, reference-dealer-panel,",
    ),
    (
        "unknown driver",
        lambda t: _edit('driver = "reference-shuffler"', 'driver = "reference-shufler"'),
        "devices.shuffler.driver",
        "names driver 'reference-shufler', which is not installed",
        "did you mean 'reference-shuffler'? Installed drivers: ",
    ),
    (
        "plugin not installed",
        lambda t: _edit('driver = "reference-shuffler"', 'driver = "acme-shuffler"'),
        "devices.shuffler.driver",
        "names driver 'acme-shuffler', which is not installed",
        "entry-point group 'table_controller.drivers'",
    ),
    (
        "bad driver setting",
        lambda t: _edit('port = "/dev/tablectl/shoe"', 'port = "/dev/tablectl/shoe"\nbaudrate = -9600'),
        "devices.shoe.baudrate",
        "Input should be greater than 0 (got -9600)",
        "give more than 0",
    ),
    (
        "misspelt driver setting",
        lambda t: _edit("seat = 3", "seat = 3\ndebounce_msec = 30"),
        "devices.wager_stations[2].debounce_msec",
        "is not a known setting",
        "did you mean debounce_ms?",
    ),
    (
        "driver setting of the wrong type",
        lambda t: _edit("seat = 2", 'seat = "two"'),
        "devices.wager_stations[1].seat",
        "valid integer",
        "write a whole number without quotes",
    ),
    (
        "missing password file",
        lambda t: _edit(
            'prefix = "tablectl"',
            f'prefix = "tablectl"\nusername = "ms-table-01"\npassword_file = "{t / "nope" / "mqtt-password"}"',
        ),
        "mqtt.password_file",
        "mqtt-password does not exist",
        "broker password on its first line",
    ),
    (
        "empty password file",
        lambda t: _edit(
            'prefix = "tablectl"',
            f'prefix = "tablectl"\nusername = "ms-table-01"\npassword_file = "{_secret(t, "pw", chr(10))}"',
        ),
        "mqtt.password_file",
        "its first line is empty",
        "put the broker password on the first line",
    ),
    (
        "password file without a user",
        lambda t: _edit('prefix = "tablectl"', f'prefix = "tablectl"\npassword_file = "{_secret(t, "pw", "s")}"'),
        "mqtt.password_file",
        "is set without mqtt.username",
        "add the table's broker user",
    ),
    (
        "CA that is not PEM",
        lambda t: _edit(
            'broker = "mqtt://127.0.0.1:1883"',
            f'broker = "mqtts://broker.floor.example:8883"\nca_file = "{_secret(t, "ca.pem", "not a certificate")}"',
        ),
        "mqtt.ca_file",
        "cannot be used",
        "give PEM files",
    ),
    (
        "missing client key",
        lambda t: _edit(
            'broker = "mqtt://127.0.0.1:1883"',
            'broker = "mqtts://broker.floor.example:8883"\n'
            f'cert_file = "{_secret(t, "c.pem", "x")}"\n'
            f'key_file = "{t / "c.key"}"',
        ),
        "mqtt.key_file",
        "c.key does not exist",
        "private key (PEM)",
    ),
    (
        "journal under a file",
        lambda t: _edit(
            'prefix = "tablectl"',
            f'prefix = "tablectl"\n\n[journal]\npath = "{_secret(t, "afile", "")}/j/table.sqlite"',
            count=1,
        ),
        "journal.path",
        "cannot be created:",
        "StateDirectory=tablectl",
    ),
    (
        "journal is a directory",
        lambda t: _edit('prefix = "tablectl"', f'prefix = "tablectl"\n\n[journal]\npath = "{t}"'),
        "journal.path",
        "is a directory",
        "name a file in it",
    ),
    (
        "TOML syntax",
        lambda t: _edit("seats = 6 ", "seats = = 6 "),
        "(TOML syntax)",
        "Invalid value (at line 8, column 9)",
        "correct the line it names",
    ),
]


@pytest.mark.parametrize(("case", "edit", "field", "problem", "fix"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_configs_name_field_problem_and_fix(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    edit: Callable[[Path], str],
    field: str,
    problem: str,
    fix: str,
) -> None:
    path = _write(tmp_path, edit(tmp_path))
    report = check_file(path)
    assert not report.valid
    matching = [f for f in report.errors if f.field == field]
    assert matching, f"{case}: no error for {field}; got {report.errors}"
    assert any(problem in f.problem and fix in f.problem + f.fix for f in matching), matching
    assert main(["check-config", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: INVALID, {len(report.errors)} error(s)")
    assert f"  error: {field}: " in out


def test_every_problem_at_once(tmp_path: Path) -> None:
    text = _edit("seats = 6 ", 'seats = "six" ')
    text = _edit('driver = "reference-shuffler"', 'driver = "reference-shufler"', text)
    text = _edit(
        'prefix = "tablectl"', f'prefix = "tablectl"\nusername = "u"\npassword_file = "{tmp_path / "pw"}"', text
    )
    report = check_file(_write(tmp_path, text))
    assert [f.field for f in report.errors] == ["game.seats", "devices.shuffler.driver", "mqtt.password_file"]


def test_warnings_do_not_make_a_config_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Every wager runs live, the Five Card Hand Bonus at the terminals included: nothing about the game to warn of.
    for name in ("mississippi-stud-five-card-hand-bonus", "mississippi-stud-progressive", "let-it-ride"):
        report = check_file(ROOT / "configs" / f"{name}.toml")
        assert report.valid and not [f for f in report.warnings if f.field.startswith("game")], name
    no_devices = _write(tmp_path, BASE[: BASE.index("[devices.shuffler]")])
    assert main(["check-config", str(no_devices)]) == 0
    out = capsys.readouterr().out
    assert "warning: devices: no [devices] table: `tablectl run` refuses the config" in out


def test_ports_that_are_not_there_are_a_warning(tmp_path: Path) -> None:
    port = tmp_path / "ttyUSB-shuffler"
    text = _edit('port = "/dev/tablectl/shuffler"', f'port = "{port}"')
    missing = [f for f in check_file(_write(tmp_path, text)).warnings if "do not exist" in f.problem]
    assert missing and f"{port} (devices.shuffler)" in missing[0].problem
    port.touch()  # plugged in
    missing = [f for f in check_file(_write(tmp_path, text)).warnings if "do not exist" in f.problem]
    assert f"{port} (devices.shuffler)" not in missing[0].problem
    assert "/dev/tablectl/shoe (devices.shoe)" in missing[0].problem


def test_files_that_are_there_and_load_pass(tmp_path: Path) -> None:
    password = _secret(tmp_path, "mqtt-password", "s3cret\n")
    text = _edit('prefix = "tablectl"', f'prefix = "tablectl"\nusername = "ms-table-01"\npassword_file = "{password}"')
    report = check_file(_write(tmp_path, text))
    assert report.valid and not [f for f in report.findings if f.field.startswith("mqtt")]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file: the permission check cannot fail as root")
def test_an_unreadable_password_file(tmp_path: Path) -> None:
    password = _secret(tmp_path, "mqtt-password", "s3cret\n")
    os.chmod(password, 0)
    text = _edit('prefix = "tablectl"', f'prefix = "tablectl"\nusername = "ms-table-01"\npassword_file = "{password}"')
    [finding] = [f for f in check_file(_write(tmp_path, text)).errors if f.field == "mqtt.password_file"]
    assert "cannot be read by user" in finding.problem and "chmod 0640" in finding.fix


def test_exit_status_and_every_file_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _write(tmp_path, _edit("seats = 6 ", "seats = 8 "), "bad.toml")
    good = ROOT / "configs" / "demo.toml"
    assert main(["check-config", str(good), str(bad), str(tmp_path / "missing.toml")]) == 1
    out = capsys.readouterr().out
    assert f"{good}: valid" in out and f"{bad}: INVALID, 1 error(s)" in out
    assert f"{tmp_path / 'missing.toml'}: does not exist" in out
    with pytest.raises(SystemExit) as usage:
        main(["check-config"])
    assert usage.value.code == 2
    assert "the following arguments are required: FILE" in capsys.readouterr().err


def test_as_a_command(tmp_path: Path) -> None:
    # As systemd's ExecStartPre runs it: a separate process, the report on stdout, the status says.
    bad = _write(tmp_path, _edit('driver = "reference-shuffler"', 'driver = "reference-shufler"'))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "check-config",
            str(bad),
            str(ROOT / "configs" / "mississippi-stud.toml"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ | {"STATE_DIRECTORY": str(tmp_path)},
    )
    assert proc.returncode == 1, proc.stderr
    assert "error: devices.shuffler.driver: names driver 'reference-shufler', which is not installed" in proc.stdout
    assert "fix: did you mean 'reference-shuffler'?" in proc.stdout
    assert "configs/mississippi-stud.toml: valid" in proc.stdout


def test_finding_renders_field_problem_and_fix() -> None:
    text = Finding("error", "game.seats", "Input should be less than or equal to 6 (got 8)", "give at most 6").render()
    assert text == "  error: game.seats: Input should be less than or equal to 6 (got 8)\n      fix: give at most 6"


# -- hostile configs: the same clear error from check-config and from run (issue 12, items 6 and 8) -------------


def _fifo(tmp_path: Path, name: str = "fifo") -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


def _journal(path: str) -> str:
    return _edit('prefix = "tablectl"', f'prefix = "tablectl"\n\n[journal]\npath = "{path}"')


def _deep(depth: int) -> str:
    return _edit("seats = 6 ", f"seats = 6\nx = {'[' * depth}{']' * depth}\n#")


def _not_sqlite(t: Path) -> str:
    (t / "old.sqlite").write_text("not a journal\n")
    return _journal(str(t / "old.sqlite"))


# (case, the config file as the operator made it, field, problem, fix): config text, or a path made in tmp_path.
HOSTILE: list[tuple[str, Callable[[Path], str | Path], str, str, str]] = [
    (
        "journal on /dev/zero",
        lambda t: _journal("/dev/zero"),
        "journal.path",
        "/dev/zero is a character device, not a file",
        "set journal.path to a file such as /var/lib/tablectl/",
    ),
    (
        "journal on /dev/null",
        lambda t: _journal("/dev/null"),
        "journal.path",
        "/dev/null is a character device, not a file",
        "set journal.path to a file",
    ),
    (
        "journal that is not SQLite",
        _not_sqlite,
        "journal.path",
        "is not an SQLite file, so not a tablectl journal",
        "point journal.path at the table's journal, or at a new file",
    ),
    (
        "300-character table_id",
        lambda t: _edit('table_id = "ms-table-01"', f'table_id = "{"t" * 300}"'),
        "table_id",
        "String should have at most 64 characters (got 300)",
        "shorten it to at most 64 characters",
    ),
    (
        "arrays 5,000 deep",
        lambda t: _deep(5000),
        "(TOML syntax)",
        "nested too deeply to be parsed",
        "remove the extra brackets",
    ),
    (
        "arrays 40 deep",
        lambda t: _deep(40),
        "game.x" + "[0]" * 15,  # game, x and 15 lists: the 17th level
        "is nested more than 16 levels deep",
        "remove the extra brackets",
    ),
    (
        "ante_max_cents = 2**63-1",
        lambda t: _edit("ante_max_cents = 10000", f"ante_max_cents = {2**63 - 1}"),
        "game.ante_max_cents",
        f"less than or equal to 10000000 (got {2**63 - 1})",
        "give at most 10000000",
    ),
    (
        "a bonus wager limit of 2**63-1",
        lambda t: _edit("six_card_bonus_max_cents = 2500", f"six_card_bonus_max_cents = {2**63 - 1}"),
        "game.six_card_bonus_max_cents",
        "less than or equal to 10000000",
        "give at most 10000000",
    ),
    (
        'prefix = "///"',
        lambda t: _edit('prefix = "tablectl"', 'prefix = "///"'),
        "mqtt.prefix",
        "'///' starts or ends with /, which makes an empty topic level",
        "topic levels of letters, digits, - and _ joined by single slashes",
    ),
    (
        "prefix with an empty level",
        lambda t: _edit('prefix = "tablectl"', 'prefix = "casino//floor"'),
        "mqtt.prefix",
        "has an empty topic level (//)",
        "e.g. tablectl or casino-a/floor-2",
    ),
    (
        "prefix with a wildcard",
        lambda t: _edit('prefix = "tablectl"', 'prefix = "casino/+/tables"'),
        "mqtt.prefix",
        "has an MQTT wildcard (+ or #)",
        "joined by single slashes",
    ),
    (
        "prefix in the broker's own space",
        lambda t: _edit('prefix = "tablectl"', 'prefix = "$SYS/tables"'),
        "mqtt.prefix",
        "starts with $",
        "joined by single slashes",
    ),
    (
        "FIFO as password_file",
        lambda t: _edit('prefix = "tablectl"', f'prefix = "tablectl"\nusername = "u"\npassword_file = "{_fifo(t)}"'),
        "mqtt.password_file",
        "fifo is a FIFO (named pipe), not a regular file",
        "broker password on its first line",
    ),
    (
        "/dev/zero as password_file",
        lambda t: _edit('prefix = "tablectl"', 'prefix = "tablectl"\nusername = "u"\npassword_file = "/dev/zero"'),
        "mqtt.password_file",
        "/dev/zero is a character device, not a regular file",
        "broker password on its first line",
    ),
    (
        "FIFO as ca_file",
        lambda t: _edit(
            'broker = "mqtt://127.0.0.1:1883"',
            f'broker = "mqtts://broker.floor.example:8883"\nca_file = "{_fifo(t, "ca.pem")}"',
        ),
        "mqtt.ca_file",
        "ca.pem is a FIFO (named pipe), not a regular file",
        "copy the PEM of the CA",
    ),
    ("config that is /dev/zero", lambda t: Path("/dev/zero"), "/dev/zero", "is a character device", "TOML config"),
    ("config that is a FIFO", lambda t: _fifo(t, "table.toml"), "table.toml", "is a FIFO (named pipe)", "TOML config"),
    (
        "config of 2 MB",
        lambda t: BASE + "#" + "x" * 2_000_000 + "\n",
        "table.toml",
        "is 2,002,",
        "TOML config",
    ),
    (
        "config that is not UTF-8",
        lambda t: _edit("ms-table-01", "ms-table-\udcff1"),
        "table.toml",
        "is not UTF-8 text (byte 0xff at offset ",
        "save the config as UTF-8",
    ),
]


def _made(tmp_path: Path, make: Callable[[Path], str | Path]) -> Path:
    made = make(tmp_path)
    if isinstance(made, Path):
        return made
    path = tmp_path / "table.toml"
    path.write_bytes(made.encode("utf-8", "surrogateescape"))  # the non-UTF-8 case writes its raw byte
    return path


@pytest.mark.parametrize(("case", "make", "field", "problem", "fix"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_configs_get_the_same_clear_error_from_check_config_and_run(
    tmp_path: Path,
    _state_dir: Path,
    case: str,
    make: Callable[[Path], str | Path],
    field: str,
    problem: str,
    fix: str,
) -> None:
    path = _made(tmp_path, make)
    report = check_file(path)
    assert not report.valid
    matching = [f for f in report.errors if f.field.endswith(field)]
    assert matching, f"{case}: no error for {field}; got {report.errors}"
    assert any(problem in f.problem and fix in f.fix for f in matching), matching
    # `run` refuses it before it opens anything, with the same words, as a process: no traceback, status 2,
    # and no wait (a FIFO no one writes to froze it before).
    proc = subprocess.run(
        [sys.executable, "-m", "controller.cli", "run", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ | {"STATE_DIRECTORY": str(_state_dir)},
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert problem in proc.stderr and fix in proc.stderr, proc.stderr[-2000:]
    assert not (_state_dir / "ms-table-01.sqlite").exists()  # nothing opened


def test_run_checks_the_journal_its_option_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, BASE)
    assert check_file(path).valid
    assert main(["run", "--config", str(path), "--journal", "/dev/null"]) == 2
    err = capsys.readouterr().err
    assert "error: --journal: /dev/null is a character device, not a file" in err


def test_the_five_card_hand_bonus_needs_a_terminal_at_every_betting_position(tmp_path: Path) -> None:
    """655a.2(d): each betting position must contain an electronic wagering system for the wager."""
    text = (ROOT / "configs" / "mississippi-stud-five-card-hand-bonus.toml").read_text()
    cut = text.index(
        '[[devices.wager_terminals]]\ndriver = "reference-wager-terminal"\nport = "/dev/tablectl/terminal-6"'
    )
    path = tmp_path / "t.toml"
    path.write_text(text[:cut])
    report = check_file(path)
    assert [(f.field, "seat(s) 6" in f.problem, "655a.2(d)" in f.problem) for f in report.errors] == [
        ("devices.wager_terminals", True, True)
    ]
