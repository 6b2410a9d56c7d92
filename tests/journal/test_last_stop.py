"""The stop on purpose a journal ends with (`demo.stopped`, controller/people/stuck.py), as the restart reads it
(controller/store/critical.py `last_stop`, controller/shell/restore.py): its seq and who stopped the table, and nothing
for a journal that ends otherwise. A last row damaged on disk (not UTF-8, not JSON) must not stop the start: it reads
as no stop (`journal verify` reports the row). Real SQLite files."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from controller.config.table import load_config
from controller.core.events import DomainEvent
from controller.engine.inputs import Input, Recover, StopRecord
from controller.engine.state import TableState
from controller.shell.restore import Restore
from controller.store import snapshot
from controller.store.integrity import Assessment
from controller.store.journal import Journal

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

T0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
STOP = DomainEvent("demo.stopped", None, {"by": "tablectl demo", "closes": False}, "T1-r000001")


def _journal(tmp_path: Path, *events: DomainEvent) -> Journal:
    j = Journal(tmp_path / "j.sqlite", "T1", "boot-a")
    j.append(list(events), T0)
    return j


def test_the_last_event_a_stop_gives_its_seq_and_who(tmp_path: Path) -> None:
    j = _journal(tmp_path, DomainEvent("chip_count.mismatch", "655a.8(b)", {}), STOP)
    assert j.critical.last_stop("demo.stopped") == (2, "tablectl demo")
    j.close()


def test_a_journal_that_ends_otherwise_or_is_empty_gives_none(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    assert j.critical.last_stop("demo.stopped") is None
    j.append([STOP, DomainEvent("table.recovered", None, {"phase": "reconciling"})], T0)
    assert j.critical.last_stop("demo.stopped") is None
    j.close()


def test_a_damaged_last_row_reads_as_no_stop(tmp_path: Path) -> None:
    j = _journal(tmp_path, STOP)
    with sqlite3.connect(j.path) as db:
        db.execute("UPDATE events SET payload = CAST(X'7b22627922203a2022ff227d' AS TEXT) WHERE seq = 1")  # not UTF-8
    assert j.critical.last_stop("demo.stopped") == (1, None)
    with sqlite3.connect(j.path) as db:
        db.execute("UPDATE events SET payload = '{not json' WHERE seq = 1")
    assert j.critical.last_stop("demo.stopped") == (1, None)
    with sqlite3.connect(j.path) as db:
        db.execute("UPDATE events SET type = CAST(X'ff' AS TEXT) WHERE seq = 1")
    assert j.critical.last_stop("demo.stopped") is None
    j.close()


def test_a_stop_at_once_reads_as_a_stop_too(tmp_path: Path) -> None:
    """`table.stopped` (SIGTERM, a second interrupt: controller/shell/runner.py) as the restart asks for either type."""
    stop = DomainEvent("table.stopped", None, {"by": "SIGTERM", "phase": "betting"}, "T1-r000001")
    j = _journal(tmp_path, DomainEvent("betting.opened", "655a.7(a)", {}), stop)
    assert j.critical.last_stop("table.stopped", "demo.stopped") == (2, "SIGTERM")
    assert j.critical.last_stop("demo.stopped") is None
    j.close()


def _restored(tmp_path: Path, *events: DomainEvent) -> list[Input]:
    """The inputs a start on this journal sends first: a closed table's state stored with `events`."""
    config = load_config(CONFIGS / "demo.toml")
    j = Journal(tmp_path / "j.sqlite", config.table_id, "boot-a")
    j.append(list(events), T0, [snapshot.record(snapshot.encode(TableState(config.table_id)))])
    try:
        return Restore(config, j, Assessment(), {}, lambda: T0).restore()[1]
    finally:
        j.close()


def test_a_closed_table_stopped_on_purpose_is_recovered_to_name_the_stop(tmp_path: Path) -> None:
    """A closed table (a Ctrl-C to one that never opened, a table held closed by its software check) stopped at once:
    its start names the stop like any other's (`table.recovered` with `after_stop`, controller/engine/recovery.py);
    before, the start sent nothing and the stop was named nowhere. Closed after a crash, it still opens as usual."""
    stop = DomainEvent("table.stopped", None, {"by": "interrupt", "phase": "closed"}, None)
    assert _restored(tmp_path / "stopped", DomainEvent("table.closed", None, {}), stop) == [
        Recover(StopRecord(2, "interrupt"))
    ]
    assert _restored(tmp_path / "crashed", DomainEvent("table.closed", None, {})) == []
