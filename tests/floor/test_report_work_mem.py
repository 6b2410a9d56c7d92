"""`tablectl report --work-mem`: PostgreSQL's work_mem for the report's own transaction only (SET LOCAL), against a
real cluster and through the real command; a size PostgreSQL or the option refuses is a usage error naming it. The
config's `[report] work_mem` is used when the flag is not given, and the flag wins over it."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from floor.config import DatabaseSection, FloorConfigError, GamingDaySection, parse_floor_config
from floor.days import day_period
from floor.db import connect
from floor.report.figures import Scope, gather
from floor.schema import migrate
from tests.tablectl_runs import here

pytestmark = pytest.mark.floor
DAY = date(2026, 11, 21)


def test_the_reports_work_mem_is_its_transactions_alone(floor_dsn: str) -> None:
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        migrate(conn)
        conn.commit()
        server = conn.execute("SHOW work_mem").fetchone()
        assert server is not None and server[0] != "64MB"
        gather(conn, Scope(day_period(DAY, GamingDaySection())), "64MB")
        assert conn.execute("SHOW work_mem").fetchone() == ("64MB",)  # the report's statements ran with it
        conn.commit()
        assert conn.execute("SHOW work_mem").fetchone() == server  # and the session is back to the server's
        gather(conn, Scope(day_period(DAY, GamingDaySection())))
        assert conn.execute("SHOW work_mem").fetchone() == server  # unset: left alone


def test_a_work_mem_refused_is_a_usage_error_naming_it(tmp_path: Path, floor_dsn: str) -> None:
    config = tmp_path / "floor.toml"
    config.write_text(f'[database]\ndsn = "{floor_dsn}"\n')
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        migrate(conn)
    base = ("report", "--config", config, "--day", str(DAY), "--format", "json")
    done = here(*base, "--work-mem", "lots")
    assert done.returncode == 2 and "'lots' is not a memory size: write a number and kB, MB or GB" in done.stderr
    done = here(*base, "--work-mem", "1kB")  # below PostgreSQL's 64kB
    assert done.returncode == 2, done.stderr
    assert '--work-mem 1kB: 1 kB is outside the valid range for parameter "work_mem"' in done.stderr
    done = here(*base, "--work-mem", "64MB")
    assert done.returncode == 0, done.stderr
    assert '"rounds"' in done.stdout


def test_the_configs_work_mem_is_used_unless_the_flag_is_given(tmp_path: Path, floor_dsn: str) -> None:
    config = tmp_path / "floor.toml"
    # 1kB passes the config's check (a size) but not PostgreSQL's (64kB at least): whether the report used it shows.
    config.write_text(f'[database]\ndsn = "{floor_dsn}"\n[report]\nwork_mem = "1kB"\n')
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        migrate(conn)
    base = ("report", "--config", config, "--day", str(DAY), "--format", "json")
    done = here(*base)
    assert done.returncode == 2, done.stderr
    assert f"[report] work_mem = '1kB' in {config}: 1 kB is outside the valid range" in done.stderr
    done = here(*base, "--work-mem", "64MB")  # the flag wins
    assert done.returncode == 0, done.stderr
    assert '"rounds"' in done.stdout
    config.write_text(f'[database]\ndsn = "{floor_dsn}"\n[report]\nwork_mem = "64MB"\n')
    done = here(*base)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("value", ['"lots"', '"64 MB"', "64", '"0MB"'])
def test_a_configs_work_mem_not_a_size_is_refused_with_its_fix(value: str) -> None:
    with pytest.raises(FloorConfigError) as err:
        parse_floor_config(f'[database]\ndsn = "dbname=x"\n[report]\nwork_mem = {value}\n', "floor.toml")
    assert "floor.toml: 1 problem(s):\n  report.work_mem: " in str(err.value)
    assert str(err.value).endswith('write a number and kB, MB or GB in quotes, e.g. work_mem = "64MB", or remove it')
    assert (
        parse_floor_config('[database]\ndsn = "dbname=x"\n').report.work_mem is None
    )  # unset by default: the server's
