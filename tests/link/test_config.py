"""LINK.toml: every problem named with its fix, the figures checked by the same meter model as a table's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from link.config import LinkConfigError, parse_link_config
from tests.link.conftest import ROOT, link_toml
from tests.tablectl_runs import here, tablectl

GOOD = link_toml("host=127.0.0.1 dbname=link", "mqtt://127.0.0.1:1883", "t")


def test_the_example_and_the_fixture_configs_are_valid() -> None:
    config = parse_link_config(GOOD)
    assert [t.table_id for t in config.tables] == ["ms-01", "ms-02", "ms-03"]
    assert config.figures.level("major").primary_ppm == 42_500  # 4.25 % exactly, never 4.2499...
    done = here("link", "--config", ROOT / "configs" / "link.toml", "check-config", "--offline")
    assert done.returncode == 0 and "the config is valid (link 'ms-floor-mega', 3 tables" in done.stdout


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (("heartbeat_ms = 500", "heartbeat_ms = 1500"), "more than half of lease_ms"),
        (('table_id = "ms-02"', 'table_id = "ms-01"'), "tables[].table_id must be unique; ms-01"),
        (("primary_percent = 4.25", "primary_percent = 4.25001"), "finer than 0.0001 %"),
        (("reserve_percent = 10", "reserve_percent = 90"), "add up to more than the whole wager"),
        (("[link]", "[link]\nleas_ms = 3"), "link.leas_ms: unknown setting: did you mean 'lease_ms'?"),
        (('role = "floorperson"', 'role = "dealer"'), "supervisors[1].role"),
        (
            ("[link]", '[link]\njackpot_meter_after = "yes"'),
            "link.jackpot_meter_after: Input should be a valid boolean",
        ),
        (("[link]", "[link]\njackpot_meter_after = 1"), "only once every floor is upgraded"),
        (("[database]", "[database]\nconnect_timeout_s = 0"), "database.connect_timeout_s"),
    ],
)
def test_a_bad_link_config_names_the_field_and_the_fix(change: tuple[str, str], named: str) -> None:
    assert change[0] in GOOD
    with pytest.raises(LinkConfigError) as err:
        parse_link_config(GOOD.replace(change[0], change[1], 1), "LINK.toml")
    assert named in str(err.value)


def test_an_unknown_setting_like_none_is_to_be_removed() -> None:
    """The wording is floor/config_files.py's config_problems, without FLOOR.toml's list of the section's settings."""
    with pytest.raises(LinkConfigError) as err:
        parse_link_config(GOOD.replace("[database]", "[database]\nzzz = 1", 1), "LINK.toml")
    assert str(err.value) == "LINK.toml: 1 problem(s):\n  database.zzz: unknown setting: remove it"


def test_check_config_names_the_broker_files_it_cannot_read(tmp_path: Path) -> None:
    """Found following systemd/link-ha.md: the example's broker password and CA were never installed there, and
    check-config did not say so; the service met them only once started."""
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)  # would block an unbounded read for ever
    text = link_toml("host=127.0.0.1 port=1 dbname=link connect_timeout=2", "mqtts://127.0.0.1:8883", "t")
    text = text.replace(
        'prefix = "t"\n', f'prefix = "t"\npassword_file = "{tmp_path / "gone"}"\nca_file = "{fifo}"\n', 1
    )
    config = tmp_path / "link.toml"
    config.write_text(text)
    # A child process: a read that blocks on the FIFO is a hang its timeout bounds, not one of the test's process.
    done = tablectl("link", "--config", config, "check-config", timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == (
        f"{config}: mqtt.password_file: cannot read {tmp_path / 'gone'}: does not exist: "
        "put the broker password on its first line (install -m 0640 -g tablectl-link)"
    )
    assert lines[2] == (
        f"{config}: mqtt.ca_file: cannot read {fifo}: is a FIFO (named pipe), not a regular file: "
        "copy the PEM of the CA that signed the broker's certificate"
    )
    assert "database: cannot connect" in lines[3]  # the database is still tried
    assert "\\t" not in lines[3], lines[3]  # libpq's hint joined to its error, not an escaped tab
