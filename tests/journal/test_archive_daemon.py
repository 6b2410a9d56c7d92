"""The daemon's side of archiving (controller/shell/archiver.py) and `tablectl journal verify --segment`, on real
SQLite files: the delete waits for a moment between rounds while the sealing does not; a sealed segment whose rows
changed is dropped, never recorded; `[journal] keep_rounds` and `archive_dir` checked with the fix named; one
segment verified by itself."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from pathlib import Path

import pytest

from controller.cli.check_files import check_archive_dir
from controller.cli.main import main
from controller.config.errors import ConfigError
from controller.config.table import TableConfig, load_config
from controller.core.events import JournaledEvent
from controller.engine.state import Phase, RoundState, TableState
from controller.shell.archiver import ArchiveFailed, Archiver, archive_directory, every_rounds
from controller.shell.listeners import Listener
from controller.store import archive as store_archive
from controller.store.archive import archive, default_dir
from controller.store.schema import JournalError
from controller.store.segments import recorded
from tests.journal.archive_rounds import TABLE, all_rows, make

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _ev(type_: str, seq: int) -> JournaledEvent:
    return JournaledEvent(seq, f"e{seq}", "boot", "2024-05-01T12:00:00Z", TABLE, None, type_, None, {}, None)


def _archived(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return len(recorded(db, TABLE))
    finally:
        db.close()


async def test_the_delete_waits_for_a_moment_between_rounds_the_sealing_does_not(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    make(path, 10)
    state = TableState(TABLE, phase=Phase.BETTING, round=RoundState(number=11, round_id=f"{TABLE}-r000011"))
    asked = asyncio.Event()

    def current() -> TableState:
        asked.set()  # the gate is first asked once the first segment is sealed (controller/shell/archiver.py)
        return state

    events = Listener("journal-archive", "lossy")
    arch = Archiver(path, TABLE, 2, default_dir(path), current, events, max_rows=12)
    task = asyncio.create_task(arch.run_pass())
    await asked.wait()
    # Sealed while the round is played: the first segment's file is there, the journal has recorded nothing.
    assert len(list(default_dir(path).glob("*.segment.sqlite"))) == 1
    assert _archived(path) == 0
    assert arch.gate() == f"round {TABLE}-r000011 is in progress (betting)"
    events.put_nowait(_ev("wager.accepted", 998))  # the round goes on: still no delete
    await asyncio.sleep(0)
    before = all_rows(path, default_dir(path))
    # The round ends: the state says no round, and its event wakes the archiver.
    state = TableState(TABLE, phase=Phase.SHUFFLING)
    events.put_nowait(_ev("round.completed", 1000))
    await task
    assert arch.passes == 1 and not arch.due
    # 8 rounds of 4 rows at most 12 rows a segment, each ending on a round: 3 segments; the last 2 rounds kept.
    assert _archived(path) == 3
    assert all_rows(path, default_dir(path)) == before
    db = sqlite3.connect(path)
    assert db.execute("SELECT MIN(seq), COUNT(*) FROM events").fetchone() == (33, 8)
    db.close()
    assert main(["journal", "verify", "--journal", str(path), "--archives", str(default_dir(path))]) == 0


def test_a_sealed_segment_whose_rows_changed_is_dropped_not_recorded(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    make(path, 6)
    directory = default_dir(path)
    db = store_archive.open_journal(path, 2, directory)
    try:
        seg = store_archive.seal_next(db, path, directory, TABLE, 2, 1000)
        assert seg is not None and (directory / seg.segment).is_file()
        # Meanwhile the operator's own `tablectl journal archive` seals and records these rows, in other segments.
        archive(path, 2, tmp_path / "other", max_rows=8)
        with pytest.raises(JournalError, match="another archive"):
            store_archive.commit_sealed(db, path, directory, seg)
    finally:
        db.close()
    assert not (directory / seg.segment).exists()
    assert main(["journal", "verify", "--journal", str(path), "--archives", str(tmp_path / "other")]) == 0


async def test_a_directory_that_cannot_be_made_fails_the_pass_and_keeps_every_row(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    make(path, 5)
    blocker = tmp_path / "archive"
    blocker.write_text("not a directory\n")
    arch = Archiver(path, TABLE, 1, blocker, lambda: TableState(TABLE), Listener("journal-archive", "lossy"))
    with pytest.raises(ArchiveFailed, match="cannot create the archive directory"):
        await arch.run_pass()
    assert arch.due  # retried when the supervisor restarts the task
    db = sqlite3.connect(path)
    assert db.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 20
    db.close()


async def test_a_pass_cancelled_while_sealing_closes_its_connection_only_after_the_thread_is_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table closing mid-pass cancels the archiver while a thread seals. Closing the connection under the running
    thread crashed the daemon (SIGSEGV, seen in tests/e2e/test_archive_daemon_e2e.py); the pass must wait for it."""
    path = tmp_path / "j.sqlite"
    make(path, 6)
    inside, release = threading.Event(), threading.Event()
    after: list[object] = []
    seal = store_archive.seal_next

    def slow_seal(db: sqlite3.Connection, *args: object) -> object:
        inside.set()
        release.wait(10)
        try:  # what the thread does after the cancellation: still the pass's connection, still open
            after.append(db.execute("SELECT COUNT(*) FROM events").fetchone()[0])
        except sqlite3.ProgrammingError as err:
            after.append(err)
        return seal(db, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(store_archive, "seal_next", slow_seal)
    arch = Archiver(path, TABLE, 2, default_dir(path), lambda: TableState(TABLE), Listener("journal-archive", "lossy"))
    task = asyncio.create_task(arch.run_pass())
    await asyncio.to_thread(inside.wait, 10)
    task.cancel()
    await asyncio.sleep(0)  # the cancellation is delivered while the thread is still inside
    assert not task.done()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert after == [24]
    # The pass the close then runs finds the sealed file and the journal as they should be.
    await arch.at_close()
    assert main(["journal", "verify", "--journal", str(path), "--archives", str(default_dir(path))]) == 0


def test_a_pass_comes_every_tenth_of_the_rounds_kept_at_most_every_hundred() -> None:
    assert [every_rounds(n) for n in (1, 9, 10, 250, 5000)] == [1, 1, 1, 25, 100]


def _config(tmp_path: Path, journal: str) -> Path:
    text = (CONFIGS / "demo.toml").read_text()
    path = tmp_path / "t.toml"
    path.write_text(text + journal)
    return path


def test_keep_rounds_and_archive_dir_are_checked_with_the_fix_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"journal.keep_rounds.*greater than or equal to 1"):
        load_config(_config(tmp_path, "\n[journal]\nkeep_rounds = 0\n"))
    with pytest.raises(ConfigError, match=r"archive_dir is set without journal\.keep_rounds"):
        load_config(_config(tmp_path, '\n[journal]\narchive_dir = "/srv/a"\n'))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    config = load_config(_config(tmp_path, f'\n[journal]\nkeep_rounds = 5\narchive_dir = "{blocker}"\n'))
    (finding,) = check_archive_dir(config, tmp_path / "j.sqlite")
    assert (finding.field, finding.severity) == ("journal.archive_dir", "error")
    assert "is not a directory" in finding.problem and "archive_dir" in finding.fix
    default = load_config(_config(tmp_path, "\n[journal]\nkeep_rounds = 5\n"))
    assert archive_directory(default, tmp_path / "j.sqlite") == tmp_path / "j.sqlite.archive"
    assert check_archive_dir(default, tmp_path / "j.sqlite") == []
    assert check_archive_dir(TableConfig.model_validate({**default.model_dump(), "journal": {}})) == []


def test_verify_segment_checks_one_file_by_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j.sqlite"
    make(path, 8)
    archive(path, 2, max_rows=12)
    segs = sorted(default_dir(path).glob("*.segment.sqlite"))
    assert len(segs) == 2
    capsys.readouterr()
    assert main(["journal", "verify", "--segment", str(segs[1]), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["ok"], out["rows_checked"], out["segment"]["first_seq"], out["segment"]["prev_seq"]) == (
        True,
        12,
        13,
        12,
    )
    # One row changed in a copy: found by the segment alone, the row named.
    copy = tmp_path / "copy.segment.sqlite"
    copy.write_bytes(segs[1].read_bytes())
    db = sqlite3.connect(copy)
    db.execute("UPDATE events SET payload = '{\"seat\":2}' WHERE seq = 14")
    db.commit()
    db.close()
    assert main(["journal", "verify", "--segment", str(copy)]) == 1
    assert "altered row at seq 14" in capsys.readouterr().out
    # Not a segment at all, or given with a journal: exit 2, the reason said.
    assert main(["journal", "verify", "--segment", str(path)]) == 2
    assert "is not an archive segment" in capsys.readouterr().err
    assert main(["journal", "verify", "--segment", str(segs[0]), "--journal", str(path)]) == 2
    assert "by itself" in capsys.readouterr().err
