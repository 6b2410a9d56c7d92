"""A dsn that sets no connect_timeout gets floor.db's bound: a command pointed at a database host gone dark (one that
takes the connection and never answers) ends by itself with libpq's timeout in its message, where libpq would wait
for ever saying nothing; a dsn or PGCONNECT_TIMEOUT that sets one keeps its own."""

from __future__ import annotations

import os
import socket
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict

from floor.config import CONNECT_TIMEOUT_S, DatabaseSection, FloorConfigError, parse_floor_config
from floor.db import conninfo, where
from link.config import LinkConfig
from link.database import conninfo as link_conninfo
from tests.floor.conftest import CONFIGS
from tests.tablectl_runs import tablectl

pytestmark = pytest.mark.floor


def test_a_dsn_without_connect_timeout_is_bounded_and_one_with_it_keeps_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    bare = DatabaseSection(dsn="host=db1 dbname=floor")
    assert conninfo_to_dict(conninfo(bare))["connect_timeout"] == str(CONNECT_TIMEOUT_S)
    assert f"connect_timeout={CONNECT_TIMEOUT_S}" in where(bare)  # the log's dsn says the bound it was given
    own = DatabaseSection(dsn="postgresql://db1/floor?connect_timeout=3")
    assert conninfo_to_dict(conninfo(own))["connect_timeout"] == "3"
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "7")  # libpq reads it: not overridden by the dsn
    assert "connect_timeout" not in conninfo_to_dict(conninfo(bare))


def test_commands_against_a_database_host_gone_dark_end_with_the_timeout_said(tmp_path: Path) -> None:
    """Both commands wait on the same dark port at once; on the old code neither ended (the 60 s timeout here)."""
    env = {k: v for k, v in os.environ.items() if k != "PGCONNECT_TIMEOUT"}
    with socket.socket() as dark:
        dark.bind(("127.0.0.1", 0))
        dark.listen()  # the kernel takes each connection; no one ever answers on it
        config = tmp_path / "floor.toml"
        config.write_text(f'[database]\ndsn = "host=127.0.0.1 port={dark.getsockname()[1]} dbname=floor"\n')
        argvs = (
            ["floor", "--config", str(config), "check-config"],
            ["report", "--config", str(config), "--day", "2026-11-20"],
        )
        with ThreadPoolExecutor(2) as both:
            check, report = both.map(lambda argv: tablectl(*argv, timeout=60, env=env), argvs)
    assert check.returncode == 1, check
    assert "database: cannot connect: connection timeout expired" in check.stdout, check
    assert report.returncode == 2, report
    assert "cannot reach the archive (connection timeout expired" in report.stderr, report


@pytest.mark.parametrize("setting", [1, 3, 300])
def test_the_bound_is_the_database_sections_connect_timeout_s_for_the_floor_and_the_link(
    monkeypatch: pytest.MonkeyPatch, setting: int
) -> None:
    """`[database] connect_timeout_s` (FLOOR.toml and LINK.toml alike) is the bound each connect gets, the log's dsn
    says it, and set in the file it wins over PGCONNECT_TIMEOUT (libpq's keyword beats its environment)."""
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "7")
    db = parse_floor_config(f'[database]\ndsn = "host=db1 dbname=floor"\nconnect_timeout_s = {setting}\n').database
    assert conninfo_to_dict(conninfo(db))["connect_timeout"] == str(setting)
    assert f"connect_timeout={setting}" in where(db)
    link = tomllib.loads((CONFIGS / "link.toml").read_text())
    link["database"] |= {"dsn": "host=db1 dbname=link", "connect_timeout_s": setting}
    link["database"].pop("password_file")
    assert conninfo_to_dict(link_conninfo(LinkConfig.model_validate(link)))["connect_timeout"] == str(setting)


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        ("connect_timeout_s = 0", "connect_timeout_s"),
        ("connect_timeout_s = 301", "connect_timeout_s"),
        ('connect_timeout_s = "5"', "connect_timeout_s"),
        ("connect_timeout_s = 2.5", "connect_timeout_s"),
    ],
)
def test_a_connect_timeout_out_of_range_is_refused_naming_the_key_and_its_range(lines: str, problem: str) -> None:
    with pytest.raises(FloorConfigError) as refused:
        parse_floor_config(f'[database]\ndsn = "host=db1 dbname=floor"\n{lines}\n')
    said = str(refused.value)
    assert problem in said and "1 to 300" in said, said


def test_a_connect_timeout_set_in_the_dsn_and_the_setting_both_is_refused() -> None:
    with pytest.raises(FloorConfigError) as refused:
        parse_floor_config('[database]\ndsn = "host=db1 dbname=floor connect_timeout=3"\nconnect_timeout_s = 4\n')
    said = str(refused.value)
    assert "connect_timeout" in said and "one place" in said, said
    # The dsn's alone is kept, as before the setting.
    db = parse_floor_config('[database]\ndsn = "host=db1 dbname=floor connect_timeout=3"\n').database
    assert conninfo_to_dict(conninfo(db))["connect_timeout"] == "3"
