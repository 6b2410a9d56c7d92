"""A real `tablectl floor` stopped (SIGTERM, as systemd stops it) while it builds an older day's ts index, on a real
PostgreSQL cluster and the suite's mosquitto.

The build is held at a known point, not timed: a writer's transaction left open on the day's partition (its lock, as
an insert's) keeps the service's CREATE INDEX CONCURRENTLY of that day waiting for as long as the test likes, as a
big day's build keeps it busy for minutes. The stop must end that build at once (the service cancels its statement)
instead of waiting for it, which systemd's TimeoutStopSec ended with a SIGKILL; the writer is still open when the
service has exited. The log says what the stop left, and the next start (the writer gone) drops the invalid index
and builds every day.
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from floor.config import DatabaseSection
from floor.db import connect
from floor.schema import migrate, partition_name
from floor.ts_index import partition_index, valid
from tests.broker import Mosquitto
from tests.floor.conftest import FloorProcess, floor_toml, wait_for
from tests.floor.ts_archive import archive_at_7, build_pid, indexed, invalid_indexes, lock_holder

pytestmark = pytest.mark.floor
DAYS = tuple(date(2026, 11, 20) + timedelta(days=i) for i in range(2))
STOPPED = "events ts index build stopped; the next start builds it"
BUILT = "events ts index built"


def _logged(floor: FloorProcess, boot: int) -> list[dict[str, Any]]:
    text = (floor.logs / f"floor-{boot}.log").read_text(errors="replace")
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_a_stop_during_a_build_ends_it_at_once_and_the_next_start_builds_the_day(
    floor_dsn: str, mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    archive_at_7(floor_dsn, DAYS, 2_000)
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        migrate(conn)  # before the writer's lock: the migration is not what waits on it
    config = tmp_path / "floor.toml"
    config.write_text(floor_toml(floor_dsn, mosquitto.url, unique_id, f"floor-{unique_id}"))
    (logs := tmp_path / "logs").mkdir()
    floor = FloorProcess(config, logs)
    first, second = (partition_name(d) for d in DAYS)
    try:
        with psycopg.connect(floor_dsn) as writer:
            writer.execute(f"LOCK TABLE {first} IN ROW EXCLUSIVE MODE".encode())  # an insert's lock, left open
            floor.start()
            wait_for(lambda: build_pid(floor_dsn, first) is not None, 60, "the floor building the first day's index")
            # On the old code this waited for the build, so for the writer: the 30 s guard of stop() ran out.
            assert floor.stop() == 0, floor.log()
            assert build_pid(floor_dsn, first) is None  # the build ended with the service, not after it
            assert lock_holder(writer) is None
            assert invalid_indexes(writer) == [partition_index(first)] and indexed(writer) == {}
            writer.rollback()
        said = [e for e in _logged(floor, 1) if e["event"].startswith("events ts index")]
        assert [(e["event"], e["level"], e["partition"]) for e in said] == [(STOPPED, "info", first)], said
        assert said[0]["left"] == (
            f"its index {partition_index(first)} INVALID: the next start drops it and builds it again"
        ), said
        assert not [e for e in _logged(floor, 1) if e.get("level") in ("error", "critical")], floor.log()
        floor.start()
        wait_for(lambda: any(e["event"] == "events ts index complete" for e in _logged(floor, 2)), 60, "complete")
    finally:
        stopped = floor.stop()
    assert stopped == 0, floor.log()
    built = [e["partition"] for e in _logged(floor, 2) if e["event"] == BUILT]
    assert built == [first, second], floor.log()
    with psycopg.connect(floor_dsn) as conn:
        assert indexed(conn) == {first: partition_index(first), second: partition_index(second)} and valid(conn)
        assert invalid_indexes(conn) == []
