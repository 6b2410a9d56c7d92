"""The check of the journal file at start, watched while it runs (controller.store.check_watch): reported as it
begins, while it reads and as it ends, with what it read; a check that stops reading is reported stalled, and the
daemon then stops extending systemd's start timeout, so a dead disk still fails the start.

Real parts: real SQLite files and a real notification socket; the one fake is the hung check of the last test, a
read that never returns (a disk that stopped answering), which cannot be made here."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import structlog.testing

from controller.shell.sdnotify import SdNotify
from controller.shell.watchdog import EXTEND_S, journal_check_notices
from controller.store import check_watch
from controller.store.check_watch import CheckProgress, reporting
from controller.store.damage import quick_check
from controller.store.journal import Journal
from controller.store.schema import connect
from tests.journal.torn_files import journal_with_wal
from tests.systemd.notify import abstract_socket

EXTEND = str(round(EXTEND_S * 1_000_000))


def filled(path: Path, rows: int) -> Path:
    conn = connect(path)
    conn.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    conn.execute("BEGIN")  # one commit, not one (and one fsync) a row
    conn.executemany("INSERT INTO t (body) VALUES (?)", ((f"{n:08}" * 40,) for n in range(rows)))
    conn.execute("COMMIT")
    conn.close()
    return path


def test_the_check_is_reported_while_it_reads_with_what_it_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = filled(tmp_path / "big.sqlite", 40_000)  # some 15 MB
    mb = path.stat().st_size / 1e6
    monkeypatch.setattr(check_watch, "EVERY", 0.002)  # many reports within the check's fraction of a second
    seen: list[CheckProgress] = []
    conn = connect(path)
    try:
        begun = CheckProgress(path, mb, 0.0, 0.0, True, False)
        assert check_watch.watched(lambda: quick_check(conn), conn, seen.append, begun) == []
    finally:
        conn.close()
    assert seen[0] == begun and seen[0].status() == f"checking the journal file ({mb:.0f} MB)"
    assert seen[-1].done and seen[-1].status().startswith(f"journal file checked ({mb:.0f} MB, ")
    during = seen[1:-1]
    assert during and not any(p.done for p in during)
    # Linux says (/proc's io file of the thread), but for a report made as the thread ends, its entry gone.
    read = [p.read_mb for p in seen[1:] if p.read_mb is not None]
    assert len(read) >= len(seen) - 2 and read == sorted(read)
    # quick_check reads every page of the file (and the rows again): what was read is at least the file.
    assert seen[-1].read_mb is not None and seen[-1].read_mb >= mb


def test_a_check_at_open_is_reported_only_when_it_runs(tmp_path: Path) -> None:
    """A journal as a kill -9 left it is checked, and reported to whom `reporting` names; the same journal closed
    cleanly is not checked, and nothing is reported."""
    journal = journal_with_wal(tmp_path, "t-watch")
    seen: list[CheckProgress] = []
    with reporting(seen.append):
        Journal(journal, "t-watch", "boot-1").close()
        assert [p.moving for p in seen] == [True] * len(seen) and seen[0].seconds == 0 and seen[-1].done
        seen.clear()
        Journal(journal, "t-watch", "boot-2").close()
    assert seen == []
    with structlog.testing.capture_logs() as logs:  # and outside `reporting`, checked all the same, unreported
        Journal(journal_with_wal(tmp_path / "again", "t-watch"), "t-watch", "boot-3").close()
    assert any(e["event"] == "journal file checked" for e in logs) and seen == []


def test_a_check_that_stops_reading_gets_no_extension(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read that never returns reads nothing and steps nothing: reported stalled, in the log at warning and in
    STATUS, and no EXTEND_TIMEOUT_USEC= until it reads again, so systemd's timeout ends a start on a dead disk."""
    monkeypatch.setattr(check_watch, "EVERY", 0.01)
    path = filled(tmp_path / "small.sqlite", 100)
    answered = threading.Event()  # the disk, answering again once the stall was reported
    conn = connect(path)
    with abstract_socket("check-watch") as systemd:
        notifier = SdNotify(systemd.address)
        notices = journal_check_notices(notifier)

        def report(progress: CheckProgress) -> None:
            notices(progress)
            if not progress.moving:
                answered.set()

        def hung() -> list[str]:  # the fake: a read of a disk that stopped answering, until it answers
            answered.wait()
            return quick_check(conn)

        try:
            begun = CheckProgress(path, 0.4, 0.0, 0.0, True, False)
            assert check_watch.watched(hung, conn, report, begun) == []
        finally:
            notifier.close()
            conn.close()
        sent = []
        while (n := systemd.next(0)) is not None:
            sent.append(n.fields)
    assert sent[0] == {"EXTEND_TIMEOUT_USEC": EXTEND, "STATUS": "checking the journal file (0.4 MB)"}
    stalled = "checking the journal file (0.4 MB): no progress for 0.01 s, SQLite is waiting for the disk"
    assert {"STATUS": stalled} in sent  # said, and no extension with it
    assert all("EXTEND_TIMEOUT_USEC" not in n for n in sent if "no progress" in n["STATUS"]), sent
    assert sent[-1]["EXTEND_TIMEOUT_USEC"] == EXTEND and sent[-1]["STATUS"].startswith("journal file checked (0.4 MB, ")


def test_ctrl_c_during_the_check_stops_sqlite_before_the_connection_is_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A KeyboardInterrupt in the waiting thread (Ctrl-C in a terminal) interrupts SQLite and waits for the check's
    thread to end, then goes on up: the caller closes a connection no thread is using, and no thread is left."""
    path = filled(tmp_path / "big.sqlite", 40_000)
    monkeypatch.setattr(check_watch, "EVERY", 0.002)
    conn = connect(path)

    def report(progress: CheckProgress) -> None:
        if progress.seconds > 0:
            raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            check_watch.watched(
                lambda: quick_check(conn), conn, report, CheckProgress(path, 15.0, 0.0, 0.0, True, False)
            )
        assert [t for t in threading.enumerate() if t.name == "journal-check"] == []
        assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]  # the connection is sound and free
    finally:
        conn.close()
