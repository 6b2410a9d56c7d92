"""The journal's writer thread (controller/shell/writer.py): commits leave the event loop, inputs that arrive during a
commit are committed together, and the shell's own notes keep every listener's events in seq order.

Real parts: a real SQLite journal, the real TableService stepping the demo table's engine; the only stand-in is
holding the journal's lock from another thread, which is what a slow disk does to a commit.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.config.table import demo_config
from controller.core.events import DomainEvent
from controller.shell.service import TableService
from controller.shell.writer import CHECKPOINT_EVERY, CHECKPOINT_LATEST, Commit, JournalWriter
from controller.store.journal import DEFERRED_CHECKPOINT_PAGES, Journal
from controller.store.records import Record
from drivers.interfaces import DeviceFault
from tests.journal.stalled_journal import RecordingJournal, disk_stalled
from tests.stepping import stepping

BOUND_S = 60.0  # a bound on failure only


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[tuple[TableService, RecordingJournal]]:
    journal = RecordingJournal(tmp_path / "journal.sqlite", demo_config().table_id, boot_id="b1")
    async with stepping(journal) as (svc, _):
        yield svc, journal


def commits_submitted(svc: TableService) -> asyncio.Event:
    """Set when the service hands its next commit to the writer thread (a spy around the real method)."""
    submitted = asyncio.Event()
    submit = svc._writer.submit

    def spy(events: Sequence[DomainEvent], now: datetime, records: Sequence[Record]) -> Commit:
        commit = submit(events, now, records)
        submitted.set()
        return commit

    svc._writer.submit = spy  # type: ignore[method-assign]
    return submitted


def fault(n: int) -> DeviceFault:
    return DeviceFault("dealer_panel", "line_noise", f"burst {n}")


async def test_steps_commit_on_the_writer_thread(service: tuple[TableService, RecordingJournal]) -> None:
    svc, journal = service
    journaled = await svc.submit_and_wait(fault(1))
    assert [e.type for e in journaled] == ["device.fault"]
    assert journal.commits and all(name.startswith("journal-writer") for name, _details in journal.commits)


async def test_inputs_that_arrive_during_a_commit_are_committed_together(
    service: tuple[TableService, RecordingJournal],
) -> None:
    svc, journal = service
    await svc.submit_and_wait(fault(0))  # the table's opening steps are all journaled: nothing is in flight
    listener = svc.subscribe("test", "lossless")
    submitted = commits_submitted(svc)
    with disk_stalled(journal) as release:
        svc.sink(fault(1))
        # The loop is not blocked by the stalled commit: it takes more inputs meanwhile.
        await asyncio.wait_for(submitted.wait(), 5)
        for n in range(2, 6):
            svc.sink(fault(n))
        release.set()
    await svc.submit_and_wait(fault(6))  # queued behind the four: once it is journaled, so are they
    seen = [listener.get_nowait() for _ in range(listener.qsize())]
    assert [e.seq for e in seen] == list(range(seen[0].seq, seen[0].seq + len(seen)))
    faults = [d for _name, details in journal.commits for d in details if d.startswith("burst")]
    assert faults == [f"burst {n}" for n in range(7)]
    # The four that queued during the first commit went into one transaction together.
    together = [details for _name, details in journal.commits if "burst 2" in details]
    assert {"burst 2", "burst 3", "burst 4", "burst 5"} <= set(together[0])
    assert "burst 1" not in together[0]


async def test_a_note_during_a_commit_is_announced_after_that_commits_events(
    service: tuple[TableService, RecordingJournal],
) -> None:
    svc, journal = service
    await svc.submit_and_wait(fault(0))  # the table's opening steps are all journaled: nothing is in flight
    listener = svc.subscribe("test", "lossless")
    submitted = commits_submitted(svc)
    with disk_stalled(journal) as release:
        svc.sink(fault(1))
        await asyncio.wait_for(submitted.wait(), 5)
        in_flight = svc._writer.in_flight
        assert in_flight is not None
        release.set()
        # The commit is durable but the loop has not yet resumed the step that awaits it: a note now (a supervisor
        # command rejected) is journaled after it, and must be announced after it too.
        assert in_flight.finished.wait(5)
        noted = svc.note([DomainEvent("command.rejected", None, {"why": "test"})])
    journaled = await noted
    await svc.submit_and_wait(fault(2))  # once this is journaled, the step before it has been announced
    seen = [listener.get_nowait() for _ in range(listener.qsize())]
    assert [e.seq for e in seen] == list(range(seen[0].seq, seen[0].seq + len(seen)))
    rejected = next(i for i, e in enumerate(seen) if e.type == "command.rejected")
    assert rejected > 0 and seen[rejected].seq == journaled[0].seq
    assert all(e.payload.get("detail") == "burst 1" for e in seen[:rejected] if e.type == "device.fault")


async def test_a_note_behind_a_commit_that_does_not_return_leaves_the_loop_and_keeps_its_place(
    service: tuple[TableService, RecordingJournal],
) -> None:
    """A note (a rejected command) made while a step's commit holds the journal's lock (a hung disk: the lock held from
    another thread) is handed to the writer thread and returns at once; the loop goes on. Once the disk answers, it is
    journaled after that step and before the next one, and heard in that order. Before, it appended on the loop and
    waited there for the lock, i.e. for ever on a disk that hangs (here, until the bound on failure)."""
    svc, journal = service
    await svc.submit_and_wait(fault(0))
    listener = svc.subscribe("test", "lossless")
    submitted = commits_submitted(svc)
    with disk_stalled(journal) as release:
        bound = threading.Timer(BOUND_S, release.set)  # a bound on failure only: the old code waited for it
        bound.start()
        try:
            svc.sink(fault(1))
            await asyncio.wait_for(submitted.wait(), BOUND_S)  # the step's commit waits for the lock
            noted = svc.note([DomainEvent("command.rejected", None, {"detail": "behind"})])
            assert isinstance(noted, asyncio.Future) and not noted.done()
            assert not release.is_set()  # the note returned while the disk still hung
        finally:
            bound.cancel()
    journaled = await noted
    await svc.submit_and_wait(fault(2))
    seen = [listener.get_nowait() for _ in range(listener.qsize())]
    assert [e.seq for e in seen] == list(range(seen[0].seq, seen[0].seq + len(seen)))
    order = [str(e.payload.get("detail")) for e in seen if e.type in ("device.fault", "command.rejected")]
    assert order == ["burst 1", "behind", "burst 2"], order
    assert [e.seq for e in journaled] == [next(e.seq for e in seen if e.type == "command.rejected")]
    assert all(name.startswith("journal-writer") for name, _details in journal.commits)


def _fault_event(n: int) -> DomainEvent:
    return DomainEvent("device.fault", None, {"device_id": "dealer_panel", "code": "line_noise", "detail": f"w{n}"})


async def test_the_writer_commits_in_order_on_its_own_thread_and_stops_when_closed(tmp_path: Path) -> None:
    journal = RecordingJournal(tmp_path / "journal.sqlite", "t1", boot_id="b1")
    writer = JournalWriter(journal)
    try:
        commits = [writer.submit([_fault_event(n)], datetime.now(UTC), []) for n in range(3)]
        for c in commits:
            await writer.wait(c)
        seqs = [e.seq for c in commits for e in (c.journaled or [])]
        assert seqs == [1, 2, 3]
        assert [name for name, _ in journal.commits] == ["journal-writer"] * 3
        thread = writer._thread
        assert thread is not None and thread.is_alive()
    finally:
        writer.close()
        journal.close()
    assert not thread.is_alive()


async def test_a_failed_commit_raises_in_the_waiter_and_the_writer_goes_on(tmp_path: Path) -> None:
    journal = RecordingJournal(tmp_path / "journal.sqlite", "t1", boot_id="b1")
    writer = JournalWriter(journal)
    try:
        bad = DomainEvent("device.fault", None, {"detail": float("nan")})  # refused: the journal's JSON allows no NaN
        failed = writer.submit([bad], datetime.now(UTC), [])
        with pytest.raises(ValueError, match="Out of range float"):
            await writer.wait(failed)
        assert failed.finished.is_set() and failed.journaled is None
        ok = writer.submit([_fault_event(1)], datetime.now(UTC), [])
        await writer.wait(ok)
        assert [e.seq for e in ok.journaled or []] == [1]  # nothing of the failed batch was stored
    finally:
        writer.close()
        journal.close()


async def test_a_waiter_cancelled_during_a_commit_returns_only_once_it_is_committed(tmp_path: Path) -> None:
    """The cancelled waiter waits for the commit (the disk comes back) on the loop, which keeps turning meanwhile:
    before, it blocked the loop in a threading wait for up to HUNG_COMMIT_S."""
    journal = RecordingJournal(tmp_path / "journal.sqlite", "t1", boot_id="b1")
    writer = JournalWriter(journal)
    try:
        with disk_stalled(journal) as release:
            commit = writer.submit([_fault_event(1)], datetime.now(UTC), [])
            waiting = asyncio.create_task(writer.wait(commit))
            await asyncio.sleep(0)  # parked on the commit's future
            waiting.cancel()
            turns = 0
            while not commit.landed:  # the cancelled waiter is in its bounded wait: the loop still turns
                turns += 1
                await asyncio.sleep(0)
            assert not waiting.done() and turns > 0
            release.set()  # the disk comes back: the cancelled waiter must still see the commit finish
            with pytest.raises(asyncio.CancelledError):
                await waiting
        assert commit.finished.is_set() and not commit.hung
        assert [e.seq for e in commit.journaled or []] == [1]
        assert writer.in_flight is None
    finally:
        writer.close()
        journal.close()


def _wal_frames(path: Path) -> int:
    wal = path.with_name(path.name + "-wal").read_bytes()
    return (len(wal) - 32) // (4096 + 24)


async def test_the_writer_checkpoints_the_wal_between_commits_not_inside_one(tmp_path: Path) -> None:
    """SQLite's own checkpoint ran inside the COMMIT that crossed 1,000 WAL pages, holding that commit's events back
    for it; the writer checkpoints every CHECKPOINT_EVERY commits once idle, so the WAL is reused from its start long
    before 1,000 pages (and the commits' own checkpoint only comes past 4,000)."""
    path = tmp_path / "journal.sqlite"
    journal = RecordingJournal(path, "t1", boot_id="b1")
    writer = JournalWriter(journal)
    try:
        for n in range(3 * CHECKPOINT_EVERY):
            await writer.wait(writer.submit([_fault_event(n)], datetime.now(UTC), [Record("engine", b"s" * 1500)]))
        assert journal._db.execute("PRAGMA wal_autocheckpoint").fetchone() == (DEFERRED_CHECKPOINT_PAGES,)
        # About 7.4 pages a commit: 3 * 64 commits wrote ~1,400 pages. The test's next commit often lands before the
        # writer looks for an idle queue (late by 0-3 commits alone, up to 11 when stalled: 473-550 frames), so the
        # bound is the latest a checkpoint may come, not the 64 commits' worth it assumed (576 frames).
        assert _wal_frames(path) <= CHECKPOINT_LATEST * 9, _wal_frames(path)
        assert [e.seq for e in journal.events()][-1] == 3 * CHECKPOINT_EVERY
    finally:
        writer.close()
        journal.close()
    assert journal_verified(path)


async def test_a_busy_writer_checkpoints_the_wal_all_the_same(tmp_path: Path) -> None:
    """A writer that always finds the next commit waiting is never idle: it checkpointed only at SQLite's own 4,000
    pages, inside a commit (192 commits left ~1,400 frames). The checkpoint waits for an idle writer only up to
    CHECKPOINT_LATEST commits, so a busy table's WAL is bounded like an idle one's."""
    path = tmp_path / "journal.sqlite"
    journal = RecordingJournal(path, "t1", boot_id="b1")
    writer = JournalWriter(journal)
    try:
        # All submitted at once: each commit finds the next already queued, as under a table that never pauses.
        commits = [
            writer.submit([_fault_event(n)], datetime.now(UTC), [Record("engine", b"s" * 1500)])
            for n in range(3 * CHECKPOINT_EVERY)
        ]
        for commit in commits:
            await writer.wait(commit)
        assert _wal_frames(path) <= CHECKPOINT_LATEST * 9, _wal_frames(path)
        assert [e.seq for e in journal.events()][-1] == 3 * CHECKPOINT_EVERY
    finally:
        writer.close()
        journal.close()
    assert journal_verified(path)


def journal_verified(path: Path) -> bool:
    with Journal(path, "t1", "b2") as j:
        return j.verify().ok
