"""A stop at once (SIGTERM) while the journal's disk does not answer: the stop waits for its `table.stopped` at most
STOP_WRITE_S (controller/shell/runner.py), then logs an error naming what was not written and exits with status 3,
instead of waiting until systemd's SIGKILL (TimeoutStopSec) with nothing said. Before, the stop's write ran on the
event loop and waited as long as the journal did (here the 10 s busy timeout; on a hung disk, for ever), then exited
0 as if the stop had gone as usual.

Real parts: the real `tablectl run` on the demo table's simulated devices (a process of their own), its real journal.
What cannot run here is a disk that hangs (no FUSE server or device-mapper delay target on this machine): the test
holds SQLite's write lock on the journal instead (`BEGIN IMMEDIATE` on a connection of its own), so that the daemon's
write really does not return while the test holds it, inside SQLite, on the writer thread, as on a hung disk."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from controller.config.table import demo_config
from controller.core.events import DomainEvent
from controller.shell import writer
from controller.shell.runner import STOP_UNWRITTEN
from controller.shell.service import TableService
from controller.store.journal import Journal
from drivers.interfaces import DeviceFault
from tests.e2e.sim_devices import DEMO, read_until, running_simulators
from tests.journal.stalled_journal import disk_stalled, submissions
from tests.stepping import stepping
from tests.tablectl_runs import TABLECTL

DEAD_BROKER = "mqtt://127.0.0.1:1"  # nothing listens: the stop must not wait on the broker
BOUND_S = 60  # a bound on failure only


@pytest.fixture
def simulators(tmp_path: Path) -> Iterator[Path]:
    with running_simulators(tmp_path / "ports.json") as ports:
        yield ports


def last_type(journal: Path) -> str:
    db = sqlite3.connect(journal)
    try:
        return str(db.execute("SELECT type FROM events ORDER BY seq DESC LIMIT 1").fetchone()[0])
    finally:
        db.close()


def test_sigterm_on_a_journal_that_does_not_answer_exits_3_saying_what_was_not_written(
    simulators: Path, tmp_path: Path
) -> None:
    journal = tmp_path / "run.sqlite"
    log = tmp_path / "run.log"
    args = ["--log-json", "run", "--config", str(DEMO), "--ports", str(simulators), "--live-log"]
    with log.open("w") as err:
        proc = subprocess.Popen(
            [*TABLECTL, *args, "--broker", DEAD_BROKER, "--journal", str(journal)],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            stdin=subprocess.DEVNULL,
        )
    holder = sqlite3.connect(journal, isolation_level=None, timeout=BOUND_S)
    try:
        read_until(proc, "betting open", [])
        assert last_type(journal) == "betting.opened"
        holder.execute("BEGIN IMMEDIATE")  # every write of the daemon's waits from now on
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()
    text = log.read_text()
    assert rc == STOP_UNWRITTEN == 3, text[-3000:]
    lines = [json.loads(x) for x in text.splitlines() if x.startswith("{")]
    [said] = [x for x in lines if str(x["event"]).startswith("the stop could not be journaled")]
    assert said["level"] == "error" and said["unwritten"] == "table.stopped" and said["by"] == "SIGTERM", said
    assert said["journal"] == str(journal) and said["exit_status"] == 3, said
    [line] = [x for x in text.splitlines() if x.startswith("tablectl:")]
    assert f"journal {journal} did not answer within 5 s" in line and "reads as a crash" in line, line
    assert last_type(journal) == "betting.opened"  # nothing written: the file reads as a crash


# -- a commit in flight when the stop comes: the service's own wait for it is bounded too ------------------------------


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[tuple[TableService, asyncio.Task[None]]]:
    async with stepping(Journal(tmp_path / "journal.sqlite", demo_config().table_id, boot_id="b1")) as started:
        yield started


async def test_a_commit_that_does_not_return_bounds_the_stop_and_the_stop_event_is_not_queued_behind_it(
    service: tuple[TableService, asyncio.Task[None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer thread inside a commit that never returns (the journal's lock held from another thread, as a hung
    disk holds a commit in its write: tests/journal/stalled_journal.py) when the stop cancels the service: the
    service's wait for that commit ends after HUNG_COMMIT_S, the commit is marked hung and the state it carried is
    not taken, and the stop's `table.stopped` is not queued behind it (it would wait as long). Before, the cancelled
    wait held the event loop until the commit returned, i.e. for ever."""
    monkeypatch.setattr(
        writer, "HUNG_COMMIT_S", 0.2, raising=False
    )  # raising=False: it runs (and fails) on code without it
    svc, running = service
    await svc.submit_and_wait(DeviceFault("shoe", "jam", "before"))  # the opening journaled: nothing in flight
    submitted = submissions(svc)
    with disk_stalled(svc.journal) as release:
        bound = threading.Timer(BOUND_S, release.set)  # a bound on failure only: the old code waited for the release
        bound.start()
        try:
            svc.sink(DeviceFault("shoe", "jam", "during"))
            async with asyncio.timeout(BOUND_S):
                commit = await submitted.get()  # the service stepped it and awaits its commit
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            assert running.cancelled() and commit.hung and not release.is_set()
            assert await svc.note_within([DomainEvent("table.stopped", None, {"by": "SIGTERM"})], BOUND_S) is None
        finally:
            bound.cancel()
