"""FLOOR.toml: the example validates; every problem is named with its field and its fix; the gaming day and shifts
become the right instants, across a change of clocks; check-config says whether the database answers."""

from __future__ import annotations

import subprocess
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from floor.config import FloorConfigError, load_floor_config, parse_floor_config
from floor.days import day_period, gaming_day, range_period, shift_period
from tests.floor.conftest import ROOT
from tests.floor.selfsigned import self_signed
from tests.tablectl_runs import here

EXAMPLE = ROOT / "configs" / "floor.toml"


def test_the_example_config_is_valid() -> None:
    config = load_floor_config(EXAMPLE)
    assert config.gaming_day.timezone == "America/New_York"
    assert [s.name for s in config.shifts] == ["day", "swing", "grave"]
    assert config.gaps.grace_s == 30  # annotated there; the floor holds no signing key for commands


def test_every_problem_is_named_with_its_field_and_fix() -> None:
    text = (
        '[mqtt]\nbroker = "http://x"\nprefx = "a"\n[gaming_day]\nstarts_at = "25:00"\ntimezone = "Mars/Olympus"\n'
        '[[shifts]]\nname = "a"\nstart = "6"\nend = "14:00"\n'
    )
    with pytest.raises(FloorConfigError) as err:
        parse_floor_config(text, "floor.toml")
    message = str(err.value)
    assert "database: missing: add a [database] section" in message
    assert "mqtt.broker: bad MQTT broker URL 'http://x'" in message
    assert "mqtt.prefx: unknown setting: did you mean 'prefix'?" in message
    assert "gaming_day.starts_at:" in message and 'e.g. "06:00"' in message
    assert "gaming_day.timezone: unknown time zone 'Mars/Olympus'" in message
    assert "shifts[0].start:" in message and "HH:MM" in message


def test_an_unknown_setting_like_none_is_listed_with_the_sections_settings() -> None:
    """floor/config_files.py's config_problems words LINK.toml's errors too; FLOOR.toml's list a section's settings."""
    with pytest.raises(FloorConfigError) as err:
        parse_floor_config('[database]\ndsn = "dbname=x"\nqqq = 1\n', "floor.toml")
    assert str(err.value) == (
        "floor.toml: 1 problem(s):\n  database.qqq: unknown setting: remove it; known here: connect_timeout_s, dsn, "
        "password_file"
    )


def test_not_toml_and_duplicate_shifts_are_refused() -> None:
    with pytest.raises(FloorConfigError, match="not valid TOML"):
        parse_floor_config("[database\n")
    dupes = '[database]\ndsn = "dbname=x"\n[[shifts]]\nname = "a"\nstart = "06:00"\nend = "14:00"\n' * 1
    dupes += '[[shifts]]\nname = "a"\nstart = "14:00"\nend = "22:00"\n'
    with pytest.raises(FloorConfigError, match="a appear more than once"):
        parse_floor_config(dupes)


def test_a_gaming_day_starts_at_its_local_hour_and_a_spring_day_has_23_hours() -> None:
    config = load_floor_config(EXAMPLE)
    gd = config.gaming_day
    # 2027-03-14 at 02:00 the clocks in New York go from EST to EDT: the gaming day of the 13th is 23 hours long.
    spring = day_period(date(2027, 3, 13), gd)
    assert spring.start == datetime(2027, 3, 13, 11, 0, tzinfo=UTC)  # 06:00 EST
    assert spring.end == datetime(2027, 3, 14, 10, 0, tzinfo=UTC)  # 06:00 EDT
    assert spring.hours == 23
    assert gaming_day(datetime(2027, 3, 14, 9, 59, tzinfo=UTC), gd) == date(2027, 3, 13)
    assert gaming_day(datetime(2027, 3, 14, 10, 0, tzinfo=UTC), gd) == date(2027, 3, 14)
    grave = shift_period(date(2026, 11, 21), config.shift("grave"), gd)
    assert (grave.start, grave.end) == (
        datetime(2026, 11, 22, 3, 0, tzinfo=UTC),  # 22:00 EST on the 21st
        datetime(2026, 11, 22, 11, 0, tzinfo=UTC),  # 06:00 EST on the 22nd
    )
    assert range_period(date(2026, 11, 1), date(2026, 11, 30), gd).end == day_period(date(2026, 11, 30), gd).end
    # The days typed the wrong way round: the message said only that, not the command that works.
    with pytest.raises(ValueError, match="is before --from 2026-11-28: give the earlier gaming day to --from "):
        range_period(date(2026, 11, 28), date(2026, 11, 20), gd)
    with pytest.raises(KeyError, match="the config's shifts: day, swing, grave"):
        config.shift("night")


def test_check_config_names_the_problem_and_tries_the_database(tmp_path: Path, floor_dsn: str) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[database]\ndsn = "dbname=x"\n[ingest]\nbatch_max = 0\n')
    done = here("floor", "--config", bad, "check-config")
    assert done.returncode == 2
    assert "ingest.batch_max: Input should be greater than or equal to 1" in done.stderr
    bad.write_text('[database]\ndsn = "dbname=x"\n[gaps]\ngrace_s = 0\n[resend]\nkey_id = "floor"\n')
    done = here("floor", "--config", bad, "check-config")
    assert done.returncode == 2
    assert "gaps.grace_s: Input should be greater than or equal to 1: give the seconds" in done.stderr
    assert "resend: unknown setting: remove it" in done.stderr
    good = tmp_path / "good.toml"
    good.write_text(f'[database]\ndsn = "{floor_dsn}"\n')
    done = here("floor", "--config", good, "check-config")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "database reachable, schema version 0" in done.stdout
    gone = tmp_path / "gone.toml"
    gone.write_text('[database]\ndsn = "host=127.0.0.1 port=1 dbname=x connect_timeout=2"\n')
    done = here("floor", "--config", gone, "check-config")
    assert done.returncode == 1 and "database: cannot connect" in done.stdout
    # libpq's hint line joined to its error, not shown as an escaped tab
    assert "Connection refused; Is the server running" in done.stdout and "\\t" not in done.stdout, done.stdout
    status = here("floor", "--config", gone, "status")
    assert status.returncode == 2 and "cannot reach the archive (connection failed:" in status.stderr
    assert "Connection refused; Is the server running" in status.stderr and "\\t" not in status.stderr, status.stderr
    offline = here("floor", "--config", gone, "check-config", "--offline")
    assert offline.returncode == 0


def test_an_unreadable_password_file_is_named_not_a_traceback(tmp_path: Path) -> None:
    config = tmp_path / "floor.toml"
    config.write_text(f'[database]\ndsn = "host=127.0.0.1"\npassword_file = "{tmp_path / "missing"}"\n')
    for argv in (
        ["floor", "--config", str(config), "status"],
        ["report", "--config", str(config), "--day", "2026-11-21"],
    ):
        done = here(*argv)
        assert done.returncode == 2, done.stderr
        assert (
            done.stderr.startswith("tablectl: database.password_file: cannot read") and "Traceback" not in done.stderr
        )


def test_check_config_reads_the_files_the_service_will_read(tmp_path: Path, floor_dsn: str) -> None:
    """Found following systemd/README.md: check-config called the example valid with its broker password, CA and
    console certificate all missing; the service met them only once started."""
    cert, key = self_signed(tmp_path)
    config = tmp_path / "floor.toml"

    def check(password: Path, ca: Path, console_key: Path) -> subprocess.CompletedProcess[str]:
        config.write_text(
            f'[database]\ndsn = "{floor_dsn}"\n'
            f'[mqtt]\nbroker = "mqtts://127.0.0.1:8883"\npassword_file = "{password}"\nca_file = "{ca}"\n'
            f'[console]\nlisten = "127.0.0.1:8443"\ntls_cert = "{cert}"\ntls_key = "{console_key}"\n'
        )
        return here("floor", "--config", config, "check-config")

    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    done = check(tmp_path / "missing.password", junk, junk)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert f"{config}: mqtt.password_file: cannot read {tmp_path / 'missing.password'}: does not exist" in lines[1]
    assert lines[2].startswith(f"{config}: mqtt.ca_file: cannot be used: ") and lines[2].endswith(
        "copy the PEM of the CA that signed the broker's certificate"
    )
    assert lines[3].startswith(f"{config}: console.tls_cert/tls_key: cannot be used: ")
    assert "database reachable" in lines[4]  # the database is still tried, and answers
    password = tmp_path / "floor-mqtt.password"
    password.write_text("s3cret\n")
    done = check(password, cert, key)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(done.stdout.splitlines()) == 2  # valid, and the database reachable: nothing else to say
