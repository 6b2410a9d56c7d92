"""A real `tablectl floor` waiting for a real `tablectl floor fill-rounds` building the older days' ts index, both
started with the CLI as an operator starts them, on a real PostgreSQL cluster and the suite's mosquitto.

fill-rounds is held at known points as a writer holds it: a transaction left open on a day's partition (its lock,
as an insert's) keeps its CREATE INDEX CONCURRENTLY of that day waiting, its session and the build's advisory lock
open meanwhile; committed, it lets that day go. Nothing is ordered by a sleep or a signal's timing: each step waits
for a line the other process prints or logs. The service's first boot is stopped (SIGTERM) during its wait and
exits cleanly while fill-rounds still holds the lock; its second boot waits, says the other's progress, and says
"complete" once, building nothing: fill-rounds built each day, once.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from floor.schema import partition_name
from floor.ts_index import partition_index, valid
from tests.broker import Mosquitto
from tests.floor.conftest import ROOT, FloorProcess, floor_toml, wait_for
from tests.floor.ts_archive import BUSY, STILL, archive_at_7, index_oids, indexed, lock_holder
from tests.tablectl_runs import TABLECTL

pytestmark = pytest.mark.floor
DAYS = tuple(date(2026, 11, 20) + timedelta(days=i) for i in range(3))
PER_DAY = 5_000  # small: fill-rounds is held by signals, not by the size of its days
COMPLETE = "events ts index complete"


class FillRounds:
    """`tablectl floor --config F fill-rounds` as a child process, its stdout in a file read as it grows."""

    def __init__(self, config: Path, out: Path) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            [*TABLECTL, "floor", "--config", str(config), "fill-rounds"],
            stdout=out.open("wb"),
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def lines(self) -> list[str]:
        return self.out.read_text(errors="replace").splitlines()

    def printed(self, start: str) -> None:
        """Waits for its line starting with `start`."""

        def said() -> bool:
            if self.proc.poll() is not None and not any(line.startswith(start) for line in self.lines()):
                raise AssertionError(f"fill-rounds exited with {self.proc.returncode}: {self.lines()}")
            return any(line.startswith(start) for line in self.lines())

        wait_for(said, 60, f"fill-rounds printing {start!r}")


def _held(dsn: str, partition: str) -> psycopg.Connection[tuple[Any, ...]]:
    """A writer's transaction left open on `partition`: a build of its index waits for it to end (commit())."""
    conn = psycopg.connect(dsn)
    conn.execute(f"LOCK TABLE {partition} IN ROW EXCLUSIVE MODE".encode())  # an insert's lock; no snapshot kept
    return conn


def _logged(floor: FloorProcess) -> list[dict[str, Any]]:
    """Every JSON line of every boot's log, in order."""
    out: list[dict[str, Any]] = []
    for path in sorted(floor.logs.glob("floor-*.log")):
        out += [json.loads(line) for line in path.read_text(errors="replace").splitlines() if line.startswith("{")]
    return out


def _said(floor: FloorProcess, event: str, **fields: object) -> bool:
    if floor.proc is not None and floor.proc.poll() is not None:
        raise AssertionError(f"the floor exited with {floor.proc.returncode}:\n{floor.log()}")
    return any(e["event"] == event and fields.items() <= e.items() for e in _logged(floor))


@pytest.fixture
def held() -> Iterator[list[psycopg.Connection[tuple[Any, ...]]]]:
    """The transactions holding fill-rounds, ended however the test ends."""
    conns: list[psycopg.Connection[tuple[Any, ...]]] = []
    yield conns
    for conn in conns:
        conn.close()


@pytest.fixture
def fill_rounds() -> Iterator[list[FillRounds]]:
    """Started by the test; ended however the test ends."""
    started: list[FillRounds] = []
    yield started
    for fill in started:
        if fill.proc.poll() is None:
            fill.proc.kill()
            fill.proc.wait()


def test_a_floor_service_waits_for_fill_rounds_says_its_progress_and_complete_once(
    floor_dsn: str,
    mosquitto: Mosquitto,
    unique_id: str,
    tmp_path: Path,
    fill_rounds: list[FillRounds],
    held: list[psycopg.Connection[tuple[Any, ...]]],
) -> None:
    archive_at_7(floor_dsn, DAYS, PER_DAY)
    config = tmp_path / "floor.toml"
    config.write_text(floor_toml(floor_dsn, mosquitto.url, unique_id, f"floor-{unique_id}"))
    names = [partition_name(d) for d in DAYS]
    (logs := tmp_path / "logs").mkdir()
    floor = FloorProcess(config, logs)
    held += [_held(floor_dsn, name) for name in names[1:]]  # fill-rounds builds the first day, then waits
    fill = FillRounds(config, tmp_path / "fill-rounds.out")
    fill_rounds.append(fill)
    fill.printed(f"[1/3] ts index of {names[0]}: ")
    try:
        # A stop during the wait: the service exits, cleanly, while fill-rounds still holds the lock.
        floor.start()
        wait_for(lambda: _said(floor, BUSY, partitions=2, then="waiting for it to finish"), 60, "the floor waiting")
        assert floor.stop() == 0, floor.log()
        with psycopg.connect(floor_dsn) as conn:
            assert lock_holder(conn) is not None and fill.proc.poll() is None
        # The next boot waits, says fill-rounds' progress (a day built meanwhile), then "complete" once it is.
        floor.start()
        wait_for(lambda: len(_busy(floor)) == 2, 60, "the floor's second boot waiting")
        held[0].commit()  # the second day goes; the third waits
        fill.printed(f"[2/3] ts index of {names[1]}: ")
        wait_for(lambda: _said(floor, STILL, partitions_left=1), 60, "the floor saying fill-rounds' progress")
        with psycopg.connect(floor_dsn) as conn:
            built_by_fill = index_oids(conn)  # the first two days', fill-rounds' own
        held[1].commit()
        assert fill.proc.wait(timeout=60) == 0, fill.lines()
        wait_for(lambda: _said(floor, COMPLETE), 60, "the floor saying the index is complete")
    finally:
        stopped = floor.stop()
    assert stopped == 0, floor.log()
    lines = fill.lines()
    assert [line.split(": built and attached in ")[0] for line in lines if line.startswith("[")] == [
        f"[{i}/3] ts index of {name}" for i, name in enumerate(names, 1)
    ], lines
    assert lines[-1].startswith("the events ts index is complete"), lines
    said = [e for e in _logged(floor) if e["event"].startswith("events ts index")]
    assert [e["event"] for e in said if e["event"] != STILL] == [BUSY, BUSY, COMPLETE], said
    assert [e["partitions_left"] for e in said if e["event"] == STILL] == [1], said  # once: the count changed once
    assert not [e for e in _logged(floor) if e.get("level") in ("error", "critical")], floor.log()
    with psycopg.connect(floor_dsn) as conn:
        oids = index_oids(conn)
        # Built once each: the service built none, and the days fill-rounds built before it finished are its own.
        assert {n: oids[n] for n in built_by_fill} == built_by_fill and len(built_by_fill) >= 2
        assert indexed(conn) == {n: partition_index(n) for n in names} and valid(conn)


def _busy(floor: FloorProcess) -> list[dict[str, Any]]:
    _said(floor, BUSY)  # raises if the floor exited
    return [e for e in _logged(floor) if e["event"] == BUSY]
