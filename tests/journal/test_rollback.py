"""A journal that went back in time (issue 12 item 3): the anchor file beside it and the anchor the broker retains
say where it had got to, so a rollback of committed events is found at start, raises `tilt:rollback`, and the table
never publishes a different event under a seq the floor already has (docs/journal.md, "The anchor").

The real daemon (`tablectl demo`) killed with SIGKILL and its `-wal` file deleted, a real mosquitto, an independent
paho subscriber; the anchor file's slots torn and damaged on disk.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.config.table import MqttSettings, demo_config
from controller.core.events import DomainEvent
from controller.engine.inputs import CriticalStateInvalid
from controller.mqtt.anchor import read_retained_anchor
from controller.mqtt.contract import JournalAnchor
from controller.mqtt.publisher import EventPublisher
from controller.shell.service import TableService
from controller.store import integrity
from controller.store.anchor import SLOT, AnchorError, Claim, encode_slot, read_sidecar, sidecar_path
from controller.store.failure import StorageError
from controller.store.journal import Journal
from controller.store.schema import JournalError
from tests.broker import Mosquitto, Received, Subscribe
from tests.journal.conftest import DemoProcess, journal_rows, kill9, play
from tests.journal.torn_files import checkpoint_cut_short

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def published(messages: list[Received], topic: str) -> dict[int, set[str]]:
    """seq -> every event_id the subscriber received under it."""
    out: dict[int, set[str]] = {}
    for m in messages:
        if m.topic == topic:
            body = m.json()
            out.setdefault(body["seq"], set()).add(body["event_id"])
    return out


def more_than(topic: str, n: int) -> Callable[[list[Received]], bool]:
    return lambda messages: sum(m.topic == topic for m in messages) > n


def rows_without_wal(journal: Path, scratch: Path) -> int | None:
    """How many rows the journal holds once its -wal file is gone: the main file alone, read from a copy (opening
    the journal itself would checkpoint the -wal into it). None if the main file alone is torn, not an earlier
    state: the kill came in the middle of a checkpoint, which had copied some of the -wal's pages and not the rest."""
    scratch.mkdir(exist_ok=True)
    copy = scratch / "main-only.sqlite"
    for leftover in scratch.iterdir():
        leftover.unlink()
    shutil.copyfile(journal, copy)
    db = sqlite3.connect(copy)
    try:
        if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            return None
        count, last = db.execute("SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM events").fetchone()
        return int(count) if count == last else None  # seq 1 to the last, none missing: an earlier state
    except sqlite3.DatabaseError:
        return None
    finally:
        db.close()


def test_a_main_file_a_checkpoint_was_cut_short_in_is_no_rollback(tmp_path: Path) -> None:
    """The rollback test below deletes the -wal after each kill -9: a kill in the middle of one of the writer's
    checkpoints (every 64-80 commits since restart24) leaves a torn main file, not one gone back in time. Its rows
    are not counted as what the journal kept (before, they were, or reading them raised)."""
    db = sqlite3.connect(tmp_path / "j.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, event_id TEXT, type TEXT, payload TEXT)")
    for seq in range(1, 321):
        db.execute("INSERT INTO events VALUES (?, ?, 'x.y', ?)", (seq, f"e{seq}", "p" * (200 + seq % 300)))
        if seq == 160:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    journal = tmp_path / "copy" / "j.sqlite"
    journal.parent.mkdir()
    shutil.copyfile(tmp_path / "j.sqlite", journal)  # with the -wal still open: as a kill -9 leaves them
    shutil.copyfile(tmp_path / "j.sqlite-wal", tmp_path / "copy" / "j.sqlite-wal")
    db.close()
    assert rows_without_wal(journal, tmp_path / "scratch") == 160  # the checkpoint's state before: a rollback
    checkpoint_cut_short(journal, tmp_path / "copy" / "j.sqlite-wal")
    assert rows_without_wal(journal, tmp_path / "scratch") is None


def test_a_deleted_wal_after_kill9_is_found_and_no_seq_is_published_twice(
    mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str, tmp_path: Path
) -> None:
    """The fault campaign's case. Before: the committed events in the -wal vanished, `journal verify` said intact,
    and the restarted table published those seqs again with other event_ids."""
    daemon = DemoProcess(tmp_path, mosquitto.url, unique_id, "rb")
    topic = f"rb/{unique_id}/event"
    sub = subscribe(topic)
    kept: int | None = None
    for boot in range(6):
        seen = len(sub.on(topic))
        proc = daemon.start(seed=boot)
        try:
            sub.wait_until(more_than(topic, seen + 300), timeout=60, what="300 more events")
        finally:
            kill9(proc)
        kept = rows_without_wal(daemon.journal, tmp_path / "scratch")
        if kept is not None and kept < max(published(sub.messages, topic)):
            break  # committed and published events are in the -wal only (else a checkpoint had just run, or was
            # running: the main file alone is torn, not gone back in time, and is another test's case: play on)
    before = published(sub.messages, topic)
    assert kept is not None and kept < max(before), "every kill came right after or during a checkpoint"
    for suffix in ("-wal", "-shm"):
        Path(f"{daemon.journal}{suffix}").unlink()

    anchored = read_sidecar(daemon.journal).claim
    assert anchored is not None and anchored.seq >= max(before)  # written after each commit, before publishing
    verify = subprocess.run(
        [sys.executable, "-m", "controller.cli", "journal", "verify", "--journal", str(daemon.journal)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert verify.returncode == 1, verify.stdout
    assert f"rolled back at seq {kept + 1}" in verify.stdout and f"seq {kept + 1} to {anchored.seq} are gone" in (
        verify.stdout
    )

    known = {i for ids in before.values() for i in ids}
    proc = daemon.start(seed=99)
    try:
        # Until this boot publishes an event of its own (not one journaled before, published again).
        sub.wait_until(
            lambda ms: any(m.topic == topic and m.json()["event_id"] not in known for m in ms),
            timeout=60,
            what="the restarted table's first event",
        )
    finally:
        kill9(proc)
    after = published(sub.messages, topic)
    assert all(len(ids) == 1 for ids in after.values()), {s: i for s, i in after.items() if len(i) > 1}
    first_new = min(s for s, ids in after.items() if not ids <= known)
    assert first_new == anchored.seq + 1
    # The start's check of its code comes first (605a.4(c), docs/software.md), then the rollback's tilt.
    rows = journal_rows(daemon.journal, anchored.seq)
    assert rows[0].seq == first_new and rows[0].type == "software.checked"
    [tilt] = [r for r in rows if r.type == "critical_state.invalid"][:1]
    assert tilt.seq == first_new + 1 and tilt.payload["tilt"] == "tilt:rollback"
    assert f"seq {kept + 1} to {anchored.seq} were committed and are not in it" in tilt.payload["reason"]


async def test_the_anchor_is_retained_after_each_acknowledged_batch_and_read_back(
    mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str, tmp_path: Path, no_broker: str
) -> None:
    settings = MqttSettings(broker=mosquitto.url, prefix="an")
    assert await read_retained_anchor(settings, unique_id) is None  # a table that never published: no wait
    journal = Journal(tmp_path / "j.sqlite", unique_id, "boot-1")
    publisher = EventPublisher(journal, settings, unique_id, backoff_min=0.05)
    task = asyncio.create_task(publisher.run())
    sub = subscribe(f"an/{unique_id}/anchor")
    for n in range(3):
        journal.append([DomainEvent("x.y", None, {"round_no": n + 1})], T0)
        publisher.notify()
    await sub.await_until(lambda ms: any(json.loads(m.payload)["seq"] == 3 for m in ms), what="the anchor at seq 3")
    await publisher.close()
    await task
    seqs = [JournalAnchor.model_validate_json(m.payload).seq for m in sub.messages]
    assert seqs == sorted(seqs) and seqs[-1] == 3  # never lower than the one before it
    claim = await read_retained_anchor(settings, unique_id)
    assert claim is not None and (claim.seq, claim.hash, claim.round_no) == (3, journal.hash_at(3), 3)
    assert "retained anchor" in claim.source
    journal.close()
    # A broker that is away does not keep the table from starting: nothing is read, nothing waits for it.
    assert await read_retained_anchor(MqttSettings(broker=no_broker, prefix="an"), unique_id) is None


async def test_a_journal_and_its_anchor_file_put_back_together_are_found_against_the_broker(
    mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    """An older copy of the whole state directory (journal and anchor file) put back: nothing beside the journal
    can tell, the broker's retained anchor does."""
    config = demo_config().model_copy(update={"table_id": unique_id})
    path = tmp_path / "table.sqlite"
    assert await play(config, rounds=1, broker=mosquitto.url, seed=1, journal_path=path) == 1
    backup = tmp_path / "backup"
    backup.mkdir()
    for f in (path, sidecar_path(path)):
        shutil.copy(f, backup / f.name)
    assert await play(config, rounds=1, broker=mosquitto.url, seed=2, journal_path=path) == 1
    last = journal_rows(path)[-1].seq
    remote = await read_retained_anchor(config.mqtt.model_copy(update={"broker": mosquitto.url}), unique_id)
    assert remote is not None and remote.seq == last  # the close drained the outbox: everything was acknowledged
    for f in (path, sidecar_path(path)):
        shutil.copy(backup / f.name, f)

    journal = Journal(path, unique_id, "boot-3")
    service = TableService(config, {}, journal, remote_anchor=remote)
    assert next(i.tilt for i in service._first if isinstance(i, CriticalStateInvalid)) == "tilt:rollback"
    assert journal.last_seq == last  # the next event is last + 1: no seq the floor holds is used again
    out = [e for inp in service._first for e in await service.apply(inp)]
    assert out[0].seq == last + 1 and out[0].type == "critical_state.invalid"
    assert "the broker's retained anchor" in out[0].payload["reason"]
    journal.close()


def test_a_torn_or_damaged_anchor_slot_falls_back_or_is_a_finding(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    j = Journal(path, "T1", "boot")
    for n in range(3):
        j.append([DomainEvent("x.y", None, {"n": n})], T0)
    j.close()
    anchor = sidecar_path(path)
    newest = read_sidecar(path).claim
    assert newest is not None and (newest.seq, newest.commits) == (3, 3)
    raw = bytearray(anchor.read_bytes())
    # A power loss mid-write of commit 3 (slot 1): half the slot new, half old. The other slot, a commit older, holds.
    raw[SLOT + 40 : SLOT + 80] = b"\xff" * 40
    anchor.write_bytes(bytes(raw))
    older = read_sidecar(path).claim
    assert older is not None and (older.seq, older.commits) == (2, 2)
    j = Journal(path, "T1", "boot")  # one commit behind the journal: expected after such a crash, not a rollback
    j.append([DomainEvent("x.y", None, {"n": 4})], T0)
    assert read_sidecar(path).claim == Claim(f"the anchor file {anchor}", "T1", 4, j.last_hash, 4, 0)
    j.close()
    anchor.write_bytes(b"\x01" * (2 * SLOT))
    found = read_sidecar(path)
    assert found.claim is None and found.problem is not None and "damaged" in found.problem
    # Another table's anchor beside this journal: refused at open, with the fix.
    anchor.write_bytes(encode_slot(Claim("x", "T2", 9, "0" * 64, 9, 0), "t") * 2)
    with pytest.raises(JournalError, match=r"anchors the journal of table 'T2', not of 'T1'"):
        Journal(path, "T1", "boot")
    with pytest.raises(ValueError, match="does not fit"):
        encode_slot(Claim("x", "T" * SLOT, 1, "0" * 64, 1, 0), "t")


def test_verify_reports_a_missing_anchor_file(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    j = Journal(path, "T1", "boot")
    j.append([DomainEvent("x.y", None, {})], T0)
    j.close()
    os.unlink(sidecar_path(path))
    proc = subprocess.run(
        [sys.executable, "-m", "controller.cli", "journal", "verify", "--journal", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1 and "BROKEN: anchor (table T1)" in proc.stdout and "is missing" in proc.stdout


@settings(max_examples=80, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.lists(st.tuples(st.integers(0, 2 * SLOT - 1), st.integers(1, 255)), min_size=1, max_size=6))
def test_a_damaged_anchor_file_never_raises_nor_claims_what_was_not_written(
    tmp_path_factory: pytest.TempPathFactory, flips: list[tuple[int, int]]
) -> None:
    path = tmp_path_factory.mktemp("anchor") / "j.sqlite"
    with Journal(path, "T1", "boot") as j:
        written = []
        for n in range(4):
            j.append([DomainEvent("x.y", None, {"n": n})], T0)
            written.append((j.last_seq, j.last_hash))
    raw = bytearray(sidecar_path(path).read_bytes())
    for offset, mask in flips:
        raw[offset] ^= mask
    sidecar_path(path).write_bytes(bytes(raw))
    found = read_sidecar(path)  # never raises, whatever the damage
    if found.claim is not None:
        assert (found.claim.seq, found.claim.hash) in written[-2:]  # one of the two slots last written, intact
    else:
        assert found.problem is not None and "damaged" in found.problem


def test_an_anchor_file_that_cannot_be_written_says_which_and_why(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    sidecar_path(path).mkdir()  # in its place, something the journal cannot write to (as root, a directory)
    j = Journal(path, "T1", "boot")
    assert j.critical.found is not None and "cannot be read" in (j.critical.found.problem or "")
    # A StorageError (the daemon's clean stop), naming the anchor file and why, caused by the AnchorError.
    with pytest.raises(StorageError, match=r"cannot write the journal's anchor file .*j\.sqlite\.anchor") as raised:
        j.append([DomainEvent("x.y", None, {})], T0)
    assert isinstance(raised.value.__cause__, AnchorError)
    assert j.last_seq == 1  # committed: the anchor is written after the commit, and behind is never a false alarm
    j.close()


def test_an_anchor_file_torn_before_the_first_commit_is_no_rollback(tmp_path: Path) -> None:
    """A power loss while a new journal's anchor file was first written: nothing was committed, nothing can be lost."""
    path = tmp_path / "j.sqlite"
    Journal(path, "T1", "boot").close()
    sidecar_path(path).write_bytes(b"{" + b"\x07" * (SLOT - 1) + b"\0" * SLOT)
    j = Journal(path, "T1", "boot")
    found = integrity.assess(j)
    assert not found.rolled_back and "rewritten at its next commit" in found.warnings[0]
    j.append([DomainEvent("x.y", None, {})], T0)
    j.close()
    assert read_sidecar(path).claim is not None
    with Journal(path, "T1", "b") as again:
        assert not integrity.assess(again).rolled_back


def test_verify_beside_a_running_daemon_finds_nothing_wrong(
    mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str, tmp_path: Path
) -> None:
    """The anchor file is read before the journal, and the journal in one snapshot: a daemon committing all the
    while is never taken for a rollback (docs/journal.md: `tablectl journal` is safe beside a running daemon)."""
    daemon = DemoProcess(tmp_path, mosquitto.url, unique_id, "vf")
    topic = f"vf/{unique_id}/event"
    sub = subscribe(topic)
    proc = daemon.start(seed=5)
    try:
        sub.wait_until(more_than(topic, 50), timeout=60, what="the table playing")
        for _ in range(3):
            verify = subprocess.run(
                [sys.executable, "-m", "controller.cli", "journal", "verify", "--journal", str(daemon.journal)],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert verify.returncode == 0, verify.stdout + verify.stderr
        assert proc.poll() is None, daemon.log_tail()  # still playing: every verify ran beside it
    finally:
        kill9(proc)


def test_after_a_recorded_rollback_an_anchor_inside_the_skipped_seqs_is_no_new_finding(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with Journal(path, "T1", "boot") as j:
        j.append([DomainEvent("x.y", None, {}) for _ in range(10)], T0)
        rb = j.resume_after(Claim("the anchor file", "T1", 20, "ab" * 32, 30, 4), "lost 11 to 20", T0)
        assert (rb.after_seq, rb.upto_seq, j.last_seq) == (10, 20, 20)
        [tilt] = j.append([DomainEvent("critical_state.invalid", None, {})], T0)
        assert tilt.seq == 21
    with Journal(path, "T1", "boot-2") as j:
        # The broker retained seq 15 before the rollback: inside the seqs skipped, explained by the record.
        found = integrity.assess(j, Claim("the broker's retained anchor", "T1", 15, "cd" * 32))
        assert found.rollback == [] and found.round_no == 4
        ahead = integrity.assess(j, Claim("the broker's retained anchor", "T1", 22, "cd" * 32))
        assert ahead.resume is not None and ahead.resume.seq == 22  # ahead of the journal still is a rollback
        report = j.verify()
    assert [(b.what, b.seq) for b in report.breaks] == [("rolled back", 11)]
