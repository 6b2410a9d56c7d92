"""A report of a gaming day or shift that has not begun: it printed every section "(none in this period)" and exited
0, as if the floor had played nothing; a person who typed next month's date, or ran the night's report before the
shift, could not tell. The report now says so (floor/report/build.py `not_begun`), in text, JSON and HTML, by the
archive's clock; a period that has begun has no such note."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from floor.config import DatabaseSection
from floor.db import connect
from floor.schema import migrate
from tests.floor.conftest import floor_toml
from tests.tablectl_runs import here

pytestmark = pytest.mark.floor
SHIFTS = (
    '[gaming_day]\nstarts_at = "06:00"\ntimezone = "UTC"\n'
    '[[shifts]]\nname = "day"\nstart = "06:00"\nend = "14:00"\n'
    '[[shifts]]\nname = "swing"\nstart = "14:00"\nend = "22:00"\n'
    '[[shifts]]\nname = "grave"\nstart = "22:00"\nend = "06:00"\n'
)


def _report(config: Path, *argv: str) -> str:
    done = here("report", "--config", config, *argv)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_day_or_shift_not_begun_says_so_in_every_format(tmp_path: Path, floor_dsn: str) -> None:
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        migrate(conn)
        conn.commit()
    config = tmp_path / "floor.toml"
    config.write_text(floor_toml(floor_dsn, "mqtt://127.0.0.1:1", "t", "floor-t", SHIFTS))
    later = (datetime.now(UTC) + timedelta(days=30)).date().isoformat()
    text = _report(config, "--day", later)
    assert f"NOTE: gaming day {later}" in text and "has not begun: it starts " in text, text
    assert f"it starts {later} 06:00 UTC" in text and "nothing of it is archived yet" in text, text
    shift = json.loads(_report(config, "--day", later, "--shift", "grave", "--format", "json"))
    assert shift["notice"].startswith(f"shift grave of gaming day {later}"), shift["notice"]
    assert f"it starts {later} 22:00 UTC" in shift["notice"], shift["notice"]
    html = _report(config, "--day", later, "--format", "html")
    assert '<p class="notice"><strong>Note:</strong> gaming day' in html and "has not begun" in html, html[:2000]
    # A day that has begun (yesterday, ended) is empty for want of play, not of time: no note.
    before = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    assert json.loads(_report(config, "--day", before, "--format", "json"))["notice"] is None
    assert "NOTE:" not in _report(config, "--day", before)
