"""The order of a commit's way out (docs/journal.md, "The anchor"; docs/mqtt.md, "Latency"): the writer thread hands
the committed events to the publisher first and syncs the anchor file after, before the next commit. A crash in that
window leaves the outcome at start that docs/journal.md says.

Real parts: the real JournalWriter and its thread, a real SQLite journal and anchor file, the real start-up checks
(controller.store.integrity.assess) on copies of the files. What cannot run here is a power loss: its outcome is
built as the disk would hold it, from the files as they were at the last sync (the SQLite files are synced by the
commit itself, synchronous=FULL; the anchor file's newest slot is not yet), torn the way a half-written slot tears.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.core.events import DomainEvent, JournaledEvent
from controller.shell.writer import JournalWriter
from controller.store import integrity
from controller.store.anchor import SLOT, Claim, Sidecar, read_sidecar, sidecar_path
from controller.store.journal import Journal

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
TABLE = "T1"


def _event(n: int) -> DomainEvent:
    return DomainEvent("device.fault", None, {"device_id": "dealer_panel", "code": "line_noise", "detail": f"w{n}"})


def copy_journal(src: Path, dst: Path, anchor: bytes | None) -> Path:
    """The journal's files as a crash leaves them, beside `dst`: the main file and its -wal (the -shm is rebuilt), and
    the anchor file holding `anchor` (None: as it is on `src`)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    wal = Path(f"{src}-wal")
    if wal.exists():
        shutil.copyfile(wal, Path(f"{dst}-wal"))
    sidecar_path(dst).write_bytes(sidecar_path(src).read_bytes() if anchor is None else anchor)
    return dst


def assess_copy(path: Path, remote: Claim | None = None) -> tuple[integrity.Assessment, int]:
    journal = Journal(path, TABLE, "restart")
    try:
        return integrity.assess(journal, remote), journal.last_seq
    finally:
        journal.close()


@dataclass
class Window:
    """What the disk held while commit k was handed on and its anchor not yet synced."""

    journal_k: Path  # the journal's files then (commit k durable), the anchor file as the page cache held it
    anchor_before: bytes  # the anchor file as last synced (commit k - 1)
    journal_before: Path  # the journal's files before commit k (for the fault that also loses commit k)
    offered: list[JournaledEvent]
    hash_k: str


async def crash_window(tmp_path: Path) -> Window:
    """Three commits through the real writer; the third's anchor sync is held until its events were handed on, and
    the files are copied in that window. Fails when the anchor file is synced before the hand-off."""
    journal = Journal(tmp_path / "j.sqlite", TABLE, "boot")
    offered: list[JournaledEvent] = []
    handed_on = threading.Event()
    images: dict[str, Path] = {}
    held: dict[str, object] = {}
    sidecar = journal.critical._sidecar
    assert isinstance(sidecar, Sidecar)
    real_sync: Callable[[], None] = sidecar.sync

    def sync_after_the_hand_off() -> None:
        if journal.last_seq == 3 and "waited" not in held:
            held["waited"] = True
            # The window: commit 3 is in SQLite, its events must already be with the publisher, its anchor unsynced.
            held["order"] = handed_on.wait(5)
        real_sync()

    def offer(events: list[JournaledEvent]) -> None:  # the publisher's offer, on the loop
        offered.extend(events)
        if events[-1].seq == 3:
            images["k"] = copy_journal(journal.path, tmp_path / "at-k" / "j.sqlite", None)
            handed_on.set()

    sidecar.sync = sync_after_the_hand_off  # type: ignore[method-assign]
    writer = JournalWriter(journal, on_durable=offer)
    try:
        for n in (1, 2):
            await writer.wait(writer.submit([_event(n)], T0, []))
        before = copy_journal(journal.path, tmp_path / "before-k" / "j.sqlite", None)
        anchor_before = sidecar_path(journal.path).read_bytes()
        await writer.wait(writer.submit([_event(3)], T0, []))
        hash_k = journal.last_hash
    finally:
        writer.close()
        journal.close()
    assert held.get("order") is True, "the anchor file was synced before the commit's events were handed on"
    return Window(images["k"], anchor_before, before, offered, hash_k)


async def test_the_events_are_handed_on_before_the_anchor_sync_and_a_kill9_then_leaves_the_anchor_exact(
    tmp_path: Path,
) -> None:
    w = await crash_window(tmp_path)
    assert [e.seq for e in w.offered] == [1, 2, 3]
    # A kill -9 in the window loses no page already written: the anchor file names commit 3 exactly.
    claim = read_sidecar(w.journal_k).claim
    assert claim is not None and (claim.seq, claim.commits, claim.hash) == (3, 3, w.hash_k)
    found, last = assess_copy(w.journal_k)
    assert (found.rollback, found.warnings, last) == ([], [], 3)


@pytest.mark.parametrize("slot", ["old", "torn", "new"])
async def test_a_power_loss_between_the_hand_off_and_the_anchor_sync_starts_as_usual(tmp_path: Path, slot: str) -> None:
    """The journal keeps commit 3 (synchronous=FULL, durable before the hand-off); the anchor file's slot of commit 3
    (slot 1) is as last synced, half written, or written: one commit behind at worst, the benign case."""
    w = await crash_window(tmp_path)
    written = sidecar_path(w.journal_k).read_bytes()
    disk = bytearray(written)
    if slot == "old":
        disk[SLOT:] = w.anchor_before[SLOT:]
    elif slot == "torn":
        disk[SLOT + 40 : 2 * SLOT] = w.anchor_before[SLOT + 40 : 2 * SLOT]
    path = copy_journal(w.journal_k, tmp_path / f"power-{slot}" / "j.sqlite", bytes(disk))
    claim = read_sidecar(path).claim
    assert claim is not None and claim.seq == (3 if slot == "new" else 2)
    # The broker's retained anchor may name commit 3 already (written behind its batch): the journal holds it.
    broker = Claim("the broker's anchor", TABLE, 3, w.hash_k, None, 0)
    for remote in (None, broker):
        found, last = assess_copy(path, remote)
        assert (found.rollback, found.warnings, last) == ([], [], 3)


async def test_a_power_loss_in_the_window_that_also_loses_commit_3_is_left_to_the_brokers_anchor(
    tmp_path: Path,
) -> None:
    """The one window the new order opens (docs/journal.md): the disk also loses the commit SQLite had synced (a
    -wal deleted after the power loss, a disk that lied about its flush) while the anchor file holds commit 2. The file
    cannot tell; the broker's anchor, written behind the batch of seq 3, does: a rollback, resumed after seq 3."""
    w = await crash_window(tmp_path)
    path = copy_journal(w.journal_before, tmp_path / "lost-k" / "j.sqlite", w.anchor_before)
    found, last = assess_copy(path)
    assert (found.rollback, last) == ([], 2)  # the anchor file alone: one commit behind is the benign case
    broker = Claim("the broker's anchor", TABLE, 3, w.hash_k, None, 0)
    found, last = assess_copy(path, broker)
    assert last == 2 and found.resume == broker
    assert found.rollback == [
        f"{broker.describe()}, but the journal {path} ends at seq 2: seq 3 were committed and are not in it"
    ]


async def test_a_commit_whose_anchor_cannot_be_synced_still_stops_the_table(tmp_path: Path) -> None:
    """The hand-off comes first, but the service still waits for the anchor sync: a disk that refuses it raises in
    the commit's waiter (the table stops, docs/storage.md), after the events were handed on."""
    journal = Journal(tmp_path / "j.sqlite", TABLE, "boot")
    offered: list[int] = []
    sidecar = journal.critical._sidecar
    assert isinstance(sidecar, Sidecar)

    def refused() -> None:
        raise sidecar._error(OSError(5, "Input/output error"))

    writer = JournalWriter(journal, on_durable=lambda events: offered.extend(e.seq for e in events))
    try:
        await writer.wait(writer.submit([_event(1)], T0, []))
        sidecar.sync = refused  # type: ignore[method-assign]
        failing = writer.submit([_event(2)], T0, [])
        with pytest.raises(OSError, match="anchor file"):
            await writer.wait(failing)
        assert offered == [1, 2]  # queued on the loop before the waiter's error, so run before it
    finally:
        writer.close()
        journal.close()
