"""The journal's disk fails under a playing table (issue 12, items 6 and 7): disk full, an I/O error, a disk
remounted read-only. The real daemon (`tablectl demo` on simulated devices) stops with one line naming the cause,
the file and the fix, exit status 1, the retained status `offline` with that reason, and nothing committed is lost:
after the fault is repaired the same journal starts again and every event it holds reaches the subscriber.

The full disk is a real tmpfs of 768 KiB (tests/e2e/conftest.py SmallDisk) where the machine lets the test mount
one (root); elsewhere the daemon runs under RLIMIT_FSIZE, which fails SQLite's writes the same way at the same
place (an I/O error, SQLITE_IOERR_WRITE, instead of SQLITE_FULL). The I/O error is always RLIMIT_FSIZE (EFBIG on
write, as a failing disk's EIO). The read-only disk needs the mount and is skipped without it.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from controller.store.journal import Journal
from controller.store.reader import JournalReader
from controller.store.schema import JournalError
from tests.broker import Mosquitto, Subscribe, Subscriber
from tests.e2e.conftest import SmallDisk, killed_at_exit, start_demo, stop, table_config

pytestmark = pytest.mark.e2e

PREFIX = "sf"
FAILURE_BOUND = 120  # seconds; a bound on failure only


def _operator_lines(log: Path) -> list[str]:
    """What the operator reads on stderr besides the JSON log lines."""
    return [line for line in log.read_text(errors="replace").splitlines() if not line.startswith("{")]


def _journal_rows(path: Path) -> list[dict[str, object]]:
    with JournalReader(path) as reader:
        assert reader.verify().ok, reader.verify().breaks
        return list(reader.rows())


def _published_seqs(sub: Subscriber, table_id: str) -> set[int]:
    return {int(m.json()["seq"]) for m in sub.on(f"{PREFIX}/{table_id}/event")}


def _check_stopped(log: Path, rc: int, cause: str) -> str:
    assert rc == 1, log.read_text()[-3000:]
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "cannot rollback" not in text, text[-3000:]
    lines = _operator_lines(log)
    assert len(lines) == 1, lines
    assert cause in lines[0] and "start the table again" in lines[0], lines[0]
    return lines[0]


def _restart_and_drain(
    config: Path, journal: Path, broker: str, log: Path, sub: Subscriber, table_id: str, before: int
) -> None:
    """The fault repaired, the same journal plays on: every journaled event reaches the subscriber."""
    proc = start_demo(config, journal, broker, log, seed=99)
    with killed_at_exit(proc):
        sub.wait_until(
            lambda msgs: any(
                m.topic.endswith("/event") and m.json()["type"] == "round.completed" and m.json()["seq"] > before
                for m in msgs
            ),
            timeout=FAILURE_BOUND,
            what="a round completed after the restart",
        )
        assert stop(proc) == 0
    rows = _journal_rows(journal)
    seqs = [int(str(r["seq"])) for r in rows]
    assert seqs == list(range(1, len(seqs) + 1))
    missing = set(seqs) - _published_seqs(sub, table_id)
    assert not missing, f"journaled but never published: {sorted(missing)[:20]}"


def test_disk_full_mid_play_stops_the_table_with_one_line_and_loses_nothing(
    small_disk: SmallDisk, mosquitto: Mosquitto, subscribe: Subscribe, table_id: str, tmp_path: Path
) -> None:
    sub = subscribe(f"{PREFIX}/{table_id}/#")
    config = table_config(tmp_path, table_id, PREFIX)
    journal = (small_disk.path if small_disk.mounted else tmp_path) / "table.sqlite"
    log = tmp_path / "boot1.log"
    # Without a mount, RLIMIT_FSIZE stands in for the full disk (SQLite then says "disk I/O error").
    proc = start_demo(config, journal, mosquitto.url, log, limit_bytes=None if small_disk.mounted else 700_000)
    with killed_at_exit(proc):
        rc = proc.wait(timeout=FAILURE_BOUND)
    line = _check_stopped(log, rc, "is full" if small_disk.mounted else "I/O error")
    assert str(journal) in line
    sub.wait_until(
        lambda msgs: any(
            m.topic.endswith("/status") and m.json()["state"] == "offline" and "stopped: journal" in m.json()["reason"]
            for m in msgs
        ),
        what="the retained status offline, saying why",
    )
    before = len(_journal_rows(journal))
    assert before > 20  # it played before the disk filled
    if small_disk.mounted:
        subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk.path)], check=True)
    _restart_and_drain(config, journal, mosquitto.url, tmp_path / "boot2.log", sub, table_id, before)


def test_an_io_error_mid_play_stops_the_table_with_one_line_and_loses_nothing(
    mosquitto: Mosquitto, subscribe: Subscribe, table_id: str, tmp_path: Path
) -> None:
    sub = subscribe(f"{PREFIX}/{table_id}/#")
    config = table_config(tmp_path, table_id, PREFIX)
    journal = tmp_path / "table.sqlite"
    log = tmp_path / "boot1.log"
    proc = start_demo(config, journal, mosquitto.url, log, limit_bytes=500_000)
    with killed_at_exit(proc):
        rc = proc.wait(timeout=FAILURE_BOUND)
    line = _check_stopped(log, rc, "I/O error")
    assert "copy the journal off it" in line
    before = len(_journal_rows(journal))
    _restart_and_drain(config, journal, mosquitto.url, tmp_path / "boot2.log", sub, table_id, before)


def test_a_disk_remounted_read_only_mid_play_stops_the_table_saying_so(
    small_disk: SmallDisk, mosquitto: Mosquitto, subscribe: Subscribe, table_id: str, tmp_path: Path
) -> None:
    if not small_disk.mounted:
        pytest.skip("needs a tmpfs mount (root): a read-only remount has no stand-in")
    subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk.path)], check=True)
    sub = subscribe(f"{PREFIX}/{table_id}/#")
    config = table_config(tmp_path, table_id, PREFIX)
    journal = small_disk.path / "table.sqlite"
    log = tmp_path / "boot1.log"
    proc = start_demo(config, journal, mosquitto.url, log)
    with killed_at_exit(proc):
        sub.wait_until(lambda msgs: len(msgs) > 40, timeout=FAILURE_BOUND, what="the table playing")
        if not small_disk.read_only():
            pytest.skip("the kernel refused to remount the tmpfs read-only while the daemon writes to it (EBUSY)")
        rc = proc.wait(timeout=FAILURE_BOUND)
    line = _check_stopped(log, rc, "read-only")
    assert "is full" not in line
    before = len(_journal_rows(journal))
    small_disk.read_write()
    _restart_and_drain(config, journal, mosquitto.url, tmp_path / "boot2.log", sub, table_id, before)


# -- opening the journal -----------------------------------------------------------------------------------


def test_a_read_only_journal_directory_is_named_as_such_not_as_a_foreign_file(small_disk: SmallDisk) -> None:
    """Issue 12 item 7: it was "not a tablectl journal ... move it aside", wrong and dangerous advice."""
    if small_disk.mounted:
        Journal(small_disk.path / "t.sqlite", "t1", "b1").close()
        assert small_disk.read_only()
    elif os.geteuid() != 0:
        Journal(small_disk.path / "t.sqlite", "t1", "b1").close()
        small_disk.path.chmod(0o555)
    else:
        pytest.skip("root without mount: a directory cannot be made read-only to this process")
    for name in ("t.sqlite", "new.sqlite"):  # an existing journal, and a new table's
        with pytest.raises(JournalError) as caught:
            Journal(small_disk.path / name, "t1", "b2")
        message = str(caught.value)
        assert "not a tablectl journal" not in message and "move it aside" not in message, message
        assert str(small_disk.path) in message and ("read-only" in message or "not writable" in message), message
        assert "The file was not changed" in message


def test_a_journal_path_in_a_directory_that_cannot_be_made_gets_its_own_message(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be\n")
    with pytest.raises(JournalError, match=r"its directory .*not-a-dir/state does not exist and cannot be created"):
        Journal(blocker / "state" / "t.sqlite", "t1", "b1")


def test_tablectl_run_says_so_in_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x\n")
    config = table_config(tmp_path, "t-run-1", PREFIX)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "run",
            "--config",
            str(config),
            "--journal",
            str(blocker / "j.sqlite"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    # The pre-flight check `check-config` shares refuses it before the journal is opened, naming the directory.
    assert "cannot be created" in done.stderr and "not-a-dir is not a directory" in done.stderr


def test_a_failed_commit_is_reported_as_itself_not_as_a_failed_rollback(tmp_path: Path) -> None:
    """The journal's own append: SQLite's error (here the disk limit of this process) in one StorageError, and
    what was committed before it intact. Runs in a child so that RLIMIT_FSIZE applies to it alone."""
    script = f"""
import datetime as dt, resource, signal
from controller.core.events import DomainEvent
from controller.store.journal import Journal
from controller.store.failure import StorageError
j = Journal({str(tmp_path / "j.sqlite")!r}, "t1", "b1")
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, resource.RLIM_INFINITY))
n = 0
try:
    while True:
        j.append([DomainEvent("test.event", None, {{"n": n, "pad": "x" * 2000}})], dt.datetime.now(dt.UTC))
        n += 1
except StorageError as err:
    print(n, err.cause, err)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    n, cause, message = done.stdout.splitlines()[-1].split(" ", 2)  # after the journal's own log line
    assert cause == "io_error" and "cannot rollback" not in message and "j.sqlite" in message, done.stdout
    db = sqlite3.connect(tmp_path / "j.sqlite")
    assert db.execute("SELECT COUNT(*) FROM events").fetchone()[0] == int(n)
