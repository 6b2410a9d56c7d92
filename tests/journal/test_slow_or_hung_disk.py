"""The journal on a slow or hung disk (docs/journal.md, "A disk that hangs").

1. The publisher's outbox reads and marks wait on the journal's lock, which the writer thread holds through a commit.
   They ran on the event loop: on a hung disk the loop stopped there, before the stop's bound could act. Now they run on
   a thread of their own (controller/mqtt/offloop.py) and the loop keeps turning: a device's frame is still ACKed, the
   broker's connection kept; once the disk answers, every event is published in seq order, once.
2. A stop that lands on a commit slower than HUNG_COMMIT_S but moving (a slow disk) waits for it, within the stop's
   budget, and journals `table.stopped` after it; a commit that does not move (a hung disk) is given up on after
   HUNG_COMMIT_S without progress, as before.

Real parts: a real mosquitto, a real SQLite journal, the wager bus's real host on a real pty, the real TableService.
The slow and hung disks are played by the writer thread itself (tests/journal/stalled_journal.py: real write calls
with pauses, or a wait with none), since neither can be made here; the outbox's stall is the journal's lock held from
another thread, as the writer thread holds it through a commit that does not return.
"""

from __future__ import annotations

import asyncio
import os
import select
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import MqttSettings, demo_config
from controller.core.events import DomainEvent
from controller.mqtt.feed import OUTBOX_ROWS
from controller.mqtt.publisher import EventPublisher
from controller.shell import writer
from controller.shell.disk_progress import DiskProgress, device_stat, moved
from controller.shell.service import TableService
from controller.store.journal import Journal
from controller.store.outbox import OutboxItem
from drivers.interfaces import DeviceFault
from drivers.reference.framing import FrameParser, Kind, encode_frame, encode_message
from tests.broker import Mosquitto, Subscribe
from tests.drivers.pty_host import pty_host
from tests.journal.stalled_journal import ThrottledJournal, disk_stalled, submissions
from tests.mqtt.eventually import eventually
from tests.stepping import stepping

BOUND_S = 60.0  # a bound on failure only
STATION = 11


class SpiedJournal(Journal):
    """A real journal that notes the thread each outbox read is asked on, before it waits for the journal's lock."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.asked = threading.Event()
        self.read_on: list[str] = []

    def outbox(self, limit: int = OUTBOX_ROWS, after_seq: int = 0) -> list[OutboxItem]:
        self.read_on.append(threading.current_thread().name)
        self.asked.set()
        return super().outbox(limit, after_seq)


def append(journal: Journal, *ns: int) -> None:
    journal.append([DomainEvent("test.event", "655a.11(h)(2)", {"n": n}) for n in ns], datetime.now(UTC))


def station_frame(seq: int) -> bytes:
    return encode_frame(0, seq, Kind.DATA, encode_message({"evt": "status", "src": STATION}))


def acked_seq(fd: int) -> int | None:
    """The SEQ of the host's next ACK on the pty, None if none comes within BOUND_S (blocking: off the loop)."""
    parser = FrameParser()
    while select.select([fd], [], [], BOUND_S)[0]:
        for frame in parser.feed(os.read(fd, 256)):
            if frame.kind is Kind.ACK:
                return frame.seq
    return None


async def test_an_outbox_read_behind_a_hung_commit_leaves_the_loop_turning(
    mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path, unique_id: str
) -> None:
    prefix, table_id = f"test-{unique_id}", "T1"
    topic = f"{prefix}/{table_id}/event"
    journal = SpiedJournal(tmp_path / "journal.sqlite", table_id, "boot-1")
    sub = subscribe(f"{prefix}/#")
    pub = EventPublisher(journal, MqttSettings(broker=mosquitto.url, prefix=prefix), table_id)
    running = asyncio.create_task(pub.run())
    try:
        append(journal, 1, 2)
        pub.notify()
        await sub.await_until(lambda m: len([x for x in m if x.topic == topic]) == 2, what="2 events")
        await eventually(lambda: journal.unpublished() == [], what="their marks committed")  # none waits on the lock
        async with pty_host(peers=[STATION], baud=115200, ack_timeout=BOUND_S, on_data=lambda *_: None) as (
            _link,
            station,
            _w,
        ):
            with disk_stalled(journal) as release:  # a commit that does not return holds the journal's lock
                bound = threading.Timer(BOUND_S, release.set)  # a bound on failure only: the old code waited for it
                bound.start()
                try:
                    journal.asked.clear()
                    pub.notify()  # the next drain reads the outbox, and waits for the lock
                    assert await asyncio.to_thread(journal.asked.wait, BOUND_S)
                    os.write(station, station_frame(7))  # a device's frame meanwhile: the host ACKs it on the loop
                    assert await asyncio.to_thread(acked_seq, station) == 7
                    assert not release.is_set()  # all that happened while the disk hung, not after the bound
                    assert journal.read_on[-1].startswith("journal-outbox")
                finally:
                    bound.cancel()
        append(journal, 3, 4)  # the disk answers again: the rest goes out in seq order, each once
        pub.notify()
        await sub.await_until(lambda m: len([x for x in m if x.topic == topic]) >= 4, what="4 events")
        await pub.close()
        assert [m.json()["seq"] for m in sub.on(topic)] == [1, 2, 3, 4]
        assert journal.unpublished() == []  # the marks, committed off the loop too
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        journal.close()


# -- a stop on a slow disk waits for the commit; on a hung one it does not ---------------------------------------------


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[tuple[TableService, asyncio.Task[None], ThrottledJournal]]:
    journal = ThrottledJournal(tmp_path / "journal.sqlite", demo_config().table_id, boot_id="b1")
    async with stepping(journal) as (svc, running):
        yield svc, running, journal


@pytest.mark.parametrize("disk", ["slow", "hung"])
async def test_a_stop_waits_for_a_slow_commit_and_gives_up_on_a_hung_one(
    service: tuple[TableService, asyncio.Task[None], ThrottledJournal], monkeypatch: pytest.MonkeyPatch, disk: str
) -> None:
    """The writer thread inside a commit when the stop cancels the service: a slow disk (writes that return, 4 KiB
    every 20 ms for 3 s, ten times the no-progress bound) is waited for, the state it carried taken and `table.stopped`
    journaled after it; a hung one (a write that does not return) is given up on once nothing moved for the bound, and
    the stop's event is not queued behind it. Before, both were given up on after HUNG_COMMIT_S."""
    monkeypatch.setattr(writer, "HUNG_COMMIT_S", 0.3)
    monkeypatch.setattr(writer, "PROBE_S", 0.05, raising=False)  # raising=False: it runs (and fails) on code without it
    svc, running, journal = service
    await svc.submit_and_wait(DeviceFault("shoe", "jam", "before"))
    submitted = submissions(svc)
    if disk == "slow":
        journal.throttled(chunks=150, pause_s=0.02)
    else:
        journal.stopped()
    bound = threading.Timer(BOUND_S, journal.release.set)
    bound.start()
    try:
        svc.sink(DeviceFault("shoe", "jam", "during"))
        async with asyncio.timeout(BOUND_S):
            commit = await submitted.get()
        assert await asyncio.to_thread(journal.held.wait, BOUND_S)
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        stopped = await svc.note_within([DomainEvent("table.stopped", None, {"by": "SIGTERM"})], writer.HUNG_COMMIT_S)
        assert not journal.release.is_set()  # decided while the disk was still slow or hung, not after the bound
        if disk == "hung":
            assert commit.hung and commit.journaled is None and stopped is None
            return
        assert not commit.hung and commit.journaled is not None
        assert [e.payload.get("detail") for e in commit.journaled] == ["during"]
        assert stopped is not None and [e.type for e in stopped] == ["table.stopped"]
        assert stopped[0].seq == commit.journaled[-1].seq + 1
        assert journal.written == 150 * 4096  # the slow commit wrote all it was to, and only then committed
    finally:
        journal.release.set()
        bound.cancel()


# -- what counts as progress (controller/shell/disk_progress.py) -------------------------------------------------------


def test_progress_is_the_threads_own_counters_or_its_disks_writes_while_it_is_inside_a_sync() -> None:
    own, other = "rchar: 1\nwchar: 4096\n", "rchar: 1\nwchar: 8192\n"
    assert moved((own, ""), (other, ""))  # its own writes returned
    assert not moved((own, ""), (own, ""))  # waiting on a lock, or inside one call with nothing completed
    assert moved((own, "10 80"), (own, "11 88"))  # inside a sync both times, the device completed writes
    assert not moved((own, ""), (own, "11 88"))  # not inside a sync or write at the first look: not counted yet
    assert not moved(("", ""), ("", ""))  # counters that cannot be read: not moving, as before (the 5 s bound)


def test_a_thread_waiting_on_a_lock_shows_no_progress_and_one_writing_does(tmp_path: Path) -> None:
    """The samples themselves, of real threads: one parked on an event (a stopped disk, a held lock), one writing."""
    device = device_stat(tmp_path / "journal.sqlite")
    go, parked, wrote = threading.Event(), threading.Event(), threading.Event()

    def writing() -> None:
        go.wait()
        with open(tmp_path / "w", "wb", buffering=0) as f:
            f.write(b"\0" * 4096)
        wrote.set()
        parked.wait()

    worker = threading.Thread(target=writing)
    worker.start()
    try:
        probe = DiskProgress(device, worker.native_id)
        before = probe.sample()
        assert not moved(before, probe.sample())  # parked on `go`
        go.set()
        assert wrote.wait(BOUND_S)
        assert moved(before, probe.sample())
    finally:
        go.set()
        parked.set()
        worker.join()
