"""A stop during the older days' round summary (floor/rounds.py), on a real PostgreSQL cluster: a real `tablectl
floor` stopped with SIGTERM (as systemd stops it), and a real `tablectl floor fill-rounds` interrupted with SIGINT (a
Ctrl-C), each held at a known point of a day's summary by another session's open transaction (not by timing: see
tests/floor/summary_archive.py), as a big day's statement keeps it busy for minutes; and fill-rounds interrupted
during an older day's ts index build, held by a writer's open transaction on the day (as test_ts_index_stop.py).

The stop must end the day's statement at once (the service cancels it) rather than wait for it, which systemd's
TimeoutStopSec ended with a SIGKILL; the table's transaction is rolled back (none of its rows counted, the day still
pending, the tables before it kept), said in the log; the next start or run summarises the day to the same rows as
computed from the events. A Ctrl-C says one line (no traceback), lets the build's lock go, and a rerun completes.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from floor.config import DatabaseSection
from floor.db import connect
from floor.rounds import pending
from floor.schema import migrate, partition_name
from floor.ts_index import partition_index, valid
from tests.broker import Mosquitto
from tests.floor.conftest import FloorProcess, floor_toml, wait_for
from tests.floor.summary_archive import (
    D1,
    D2,
    Event,
    events,
    expected,
    hold_spanning,
    logged,
    old_archive,
    spans_waiting,
    summary,
    wait_held,
)
from tests.floor.ts_archive import (
    DAYS,
    archive_at_7,
    build_pid,
    fill_config,
    fill_rounds,
    fill_rounds_started,
    indexed,
    invalid_indexes,
    lock_holder,
)
from tests.interrupt import interrupted

pytestmark = pytest.mark.floor
STOPPED = "round summary stopped; the next start summarises the day"
LEFT = (
    "its table's summary of the day rolled back; 1 of the day's 2 table(s) summarised before it, kept (merged the "
    "same again); the day is still pending: the next start summarises it"
)
RERUN = "Run `tablectl floor --config FLOOR.toml fill-rounds` again: it goes on from there."


def _held_state(conn: psycopg.Connection[tuple[object, ...]], evs: list[Event]) -> None:
    """The second day stopped while t2's summary of it was held: t1's kept, t2's rolled back, the day pending."""
    assert pending(conn) == [D2]
    assert summary(conn) == expected(evs, (D1,)) + expected(evs, (D2,), ("t1",))


def test_a_stop_during_a_days_summary_cancels_it_and_the_next_start_summarises_the_day_again(
    floor_dsn: str, mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    evs = events()
    old_archive(floor_dsn, evs)
    config = tmp_path / "floor.toml"
    config.write_text(floor_toml(floor_dsn, mosquitto.url, unique_id, f"floor-{unique_id}"))
    (logs := tmp_path / "logs").mkdir()
    floor = FloorProcess(config, logs)
    try:
        with psycopg.connect(floor_dsn) as holder:
            hold_spanning(holder)
            floor.start()
            wait_held(floor_dsn, "the floor")
            # On the old code the stop waited for the statement, so for the holder: the 30 s guard of stop() ran out.
            assert floor.stop() == 0, floor.log()
            assert spans_waiting(floor_dsn) is None  # the statement ended with the service, not after it
            assert holder.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS  # still held
            holder.rollback()
            _held_state(holder, evs)
        said = [e for e in logged(logs, 1) if e["event"].startswith("round summary")]
        assert [(e["event"], e["level"], e["gaming_day"], e["table_id"]) for e in said] == [
            (STOPPED, "info", str(D2), "t2")
        ], said
        assert said[0]["left"] == LEFT, said
        assert not [e for e in logged(logs, 1) if e.get("level") in ("error", "critical")], floor.log()
        floor.start()
        wait_for(lambda: any(e["event"] == "round summary complete" for e in logged(logs, 2)), 60, "complete")
    finally:
        stopped = floor.stop()
    assert stopped == 0, floor.log()
    filled = [(e["gaming_day"], e["done"], e["of"]) for e in logged(logs, 2) if e["event"] == "round summary filled"]
    assert filled == [(str(D2), 1, 1)], floor.log()
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        assert pending(conn) == [] and summary(conn) == expected(evs)


def _interrupted(config: Path, held: Callable[[], object]) -> subprocess.CompletedProcess[str]:
    """fill-rounds started, SIGINT once `held()` (its statement held), run to its end."""
    return interrupted(fill_rounds_started(config), held)


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 130, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_ctrl_c_during_fill_rounds_summary_says_one_line_and_a_rerun_summarises_the_day(
    floor_dsn: str, tmp_path: Path
) -> None:
    evs = events()
    old_archive(floor_dsn, evs)
    config = fill_config(floor_dsn, tmp_path)
    with psycopg.connect(floor_dsn) as holder:
        hold_spanning(holder)
        done = _interrupted(config, lambda: wait_held(floor_dsn, "fill-rounds"))
        assert spans_waiting(floor_dsn) is None  # the statement was cancelled, not left running
        holder.rollback()
        _held_state(holder, evs)
    assert _one_line(done) == (
        "tablectl floor fill-rounds: interrupted (Ctrl-C) while summarising the older gaming days: the day in "
        "progress was rolled back (its table's transaction; the days said done are kept) and is still pending. " + RERUN
    )
    again = fill_rounds(config)
    assert again.returncode == 0, again.stderr
    assert [line.split(":")[0] for line in again.stdout.splitlines() if " gaming day " in line] == [
        f"[1/1] gaming day {D2}"
    ]
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        assert pending(conn) == [] and summary(conn) == expected(evs)


def test_ctrl_c_during_fill_rounds_index_build_says_one_line_lets_the_lock_go_and_a_rerun_builds_the_day(
    floor_dsn: str, tmp_path: Path
) -> None:
    archive_at_7(floor_dsn, DAYS, 2_000)
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        migrate(conn)  # before the writer's lock: fill-rounds' migration is not what waits on it
    first, second = (partition_name(d) for d in DAYS)
    config = fill_config(floor_dsn, tmp_path)
    with psycopg.connect(floor_dsn) as writer:
        writer.execute(f"LOCK TABLE {first} IN ROW EXCLUSIVE MODE".encode())  # an insert's lock, left open
        done = _interrupted(
            config, lambda: wait_for(lambda: build_pid(floor_dsn, first) is not None, 60, "fill-rounds building")
        )
        assert build_pid(floor_dsn, first) is None and lock_holder(writer) is None
        assert invalid_indexes(writer) == [partition_index(first)] and indexed(writer) == {}
        writer.rollback()
    assert _one_line(done) == (
        "tablectl floor fill-rounds: interrupted (Ctrl-C) while indexing the older gaming days: the day in progress "
        "may be left with an INVALID ts index, which the next run drops and builds again (the days said built are "
        "kept). " + RERUN
    )
    again = fill_rounds(config)
    assert again.returncode == 0, again.stderr
    with psycopg.connect(floor_dsn) as conn:
        assert indexed(conn) == {first: partition_index(first), second: partition_index(second)} and valid(conn)
        assert invalid_indexes(conn) == []
