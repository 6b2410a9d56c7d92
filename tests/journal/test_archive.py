"""`tablectl journal archive` on real files (docs/journal.md, "Archiving"): completed rounds older than the last N
sealed into segment files, recorded in the live journal, removed from it; verify from the recorded head; the whole
chain through the segments; tampering and a missing segment named; a real kill -9 of the archiving process at each
of its steps; a writer committing between and during its steps, as the daemon does."""

from __future__ import annotations

import hashlib
import itertools
import json
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.store.anchor import Claim
from controller.store.archive import archive, default_dir
from controller.store.integrity import assess
from controller.store.journal import Journal
from controller.store.reader import JournalReader
from controller.store.segments import recorded
from tests.journal.archive_rounds import TABLE, all_rows, make, play_round
from tests.tablectl_runs import in_process


def independent(path: Path, directory: Path) -> list[str]:
    """The docs' recipe over every row, segments first then the live journal: the problems found."""
    db = sqlite3.connect(path)
    files = [directory / s.segment for s in recorded(db, TABLE)]
    db.close()
    prev, problems = "0" * 64, []
    cols = "seq, event_id, boot_id, ts, table_id, round_id, type, rule, payload, sealed, hash"
    for f in [*files, path]:
        c = sqlite3.connect(f)
        for *fields, stored in c.execute(f"SELECT {cols} FROM events ORDER BY seq"):
            enc = json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            prev = hashlib.sha256(bytes.fromhex(prev) + enc).hexdigest()
            if prev != stored:
                problems.append(f"seq {fields[0]} in {f.name}")
        c.close()
    return problems


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    return lambda *args: in_process(capsys, *args)


def test_archive_keeps_the_last_rounds_and_verify_starts_from_the_recorded_head(
    tmp_path: Path, cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    path = tmp_path / "t.sqlite"
    make(path, 20)
    before = all_rows(path, default_dir(path))
    done = cli("journal", "archive", "--journal", str(path), "--keep-rounds", "5")
    assert done.returncode == 0, done.stderr
    # 15 rounds of 4 rows sealed; the last 5 rounds (20 rows) kept.
    assert "60 rows in 1 segment(s) to seq 60" in done.stdout and "20 rows kept" in done.stdout
    with JournalReader(path) as r:
        live = r.verify()
        assert live.ok, live.breaks
        assert live.rows_checked == 20  # bounded by the rounds kept
        whole = r.verify(archives=default_dir(path))
        assert whole.ok, whole.breaks
        assert whole.rows_checked == 80
    assert all_rows(path, default_dir(path)) == before  # every row in exactly one place, as journaled
    assert independent(path, default_dir(path)) == []  # the docs' recipe holds through segment and journal
    shown = cli("journal", "verify", "--journal", str(path))
    assert shown.returncode == 0 and "60 rows to seq 60 archived in 1 segment(s), not checked" in shown.stdout
    again = cli("journal", "archive", "--journal", str(path), "--keep-rounds", "5")
    assert again.returncode == 0 and "nothing to archive" in again.stdout


def test_a_segment_verifies_on_its_own_and_segments_chain(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    make(path, 12)
    out = archive(path, 2, max_rows=7)
    segs = out[0].sealed
    assert [(s.first_seq, s.last_seq) for s in segs] == [(1, 7), (8, 14), (15, 21), (22, 28), (29, 35), (36, 40)]
    assert all(b.prev_seq == a.last_seq and b.prev_hash == a.head_hash for a, b in itertools.pairwise(segs))
    seg = sqlite3.connect(default_dir(path) / segs[1].segment)
    first, last, prev_hash, head = seg.execute(
        "SELECT first_seq, last_seq, prev_hash, head_hash FROM segment"
    ).fetchone()
    assert (first, last, prev_hash, head) == (8, 14, segs[0].head_hash, segs[1].head_hash)
    assert seg.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # one self-contained file


def test_never_the_round_in_progress_an_unended_round_or_unpublished_rows(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    j = Journal(path, TABLE, "boot-a")
    for n in range(1, 6):
        play_round(j, n)
    play_round(j, 6, ended=False)  # in progress
    j.mark_published(list(range(1, j.last_seq + 1)), replayed=False)
    j.close()
    # keep 1: only round 6 would be kept, and it is in progress, so rounds 1-5 go.
    (o,) = archive(path, 1)
    assert o.sealed[-1].last_seq == 20 and o.live_rows == 2

    path2 = tmp_path / "u.sqlite"
    j = Journal(path2, TABLE, "boot-a")
    for n in range(1, 4):
        play_round(j, n)
    play_round(j, 4, ended=False)  # never ended (a lost state, settled by hand): stops the archive at its start
    for n in range(5, 9):
        play_round(j, n)
    j.mark_published(list(range(1, 30)), replayed=False)  # seq 30 and on not yet acknowledged by the broker
    j.close()
    (o,) = archive(path2, 1)
    assert o.sealed[-1].last_seq == 12 and "round T1-r000004 (from seq 13) has not ended" in o.plan.why

    path3 = tmp_path / "v.sqlite"
    make(path3, 8, published=False)
    j = Journal(path3, TABLE, "boot-b")
    j.mark_published(list(range(1, 10)), replayed=False)
    j.close()
    (o,) = archive(path3, 1)
    assert o.sealed[-1].last_seq == 8  # seq 9 and 10 are round 3's first rows: the round goes whole or not at all
    assert "seq 10 is not yet acknowledged" in o.plan.why


def test_a_tampered_or_missing_segment_is_named(
    tmp_path: Path, cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    path = tmp_path / "t.sqlite"
    make(path, 10)
    archive(path, 2, max_rows=10)
    directory = default_dir(path)
    segs = sorted(directory.iterdir())
    seg = sqlite3.connect(segs[1])
    seg.execute("UPDATE events SET payload = ? WHERE seq = 13", (json.dumps({"seat": 1, "amount_cents": 50000}),))
    seg.commit()
    seg.close()
    bad = cli("journal", "verify", "--journal", str(path), "--archives", str(directory))
    assert bad.returncode == 1
    assert f"altered segment at seq 11 (table T1): {segs[1]} is not the file archived" in bad.stdout
    assert f"altered row at seq 13 (table T1): in segment {segs[1]}" in bad.stdout
    # The live journal alone still verifies: its chain starts from the recorded head.
    assert cli("journal", "verify", "--journal", str(path)).returncode == 0
    segs[0].unlink()
    gone = cli("journal", "verify", "--journal", str(path), "--archives", str(directory), "--json")
    report = json.loads(gone.stdout)
    assert gone.returncode == 1
    assert report["first_break"]["what"] == "missing segment" and str(segs[0]) in report["first_break"]["detail"]


def test_the_daemon_opens_an_archived_journal_and_an_archived_anchor_is_behind_it(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    make(path, 10)
    before = all_rows(path, default_dir(path))
    archive(path, 3)
    j = Journal(path, TABLE, "boot-c")
    try:
        assert j.head_problem is None and j.last_seq == 40
        # The broker's retained anchor may name a seq archived since (acknowledged, then sealed): behind the journal.
        inside = assess(j, Claim("the broker's anchor", TABLE, 13, before[13]))
        at_end = assess(j, Claim("the broker's anchor", TABLE, 28, before[28]))
        assert inside.rollback == [] and at_end.rollback == [] and inside.journal is None
        wrong = assess(j, Claim("the broker's anchor", TABLE, 28, "ab" * 32))
        assert wrong.rollback and "not the journal that was anchored" in wrong.rollback[0]
        assert j.hash_at(28) == before[28]
        play_round(j, 11)
        assert j.verify().ok
    finally:
        j.close()


STEPS = ["written", "sealed", "deleting", "committed"]


@pytest.mark.parametrize("nth", [1, 2])
@pytest.mark.parametrize("step", STEPS)
def test_a_kill_at_any_step_leaves_the_old_journal_or_the_new_never_a_gap(tmp_path: Path, step: str, nth: int) -> None:
    path = tmp_path / "t.sqlite"
    make(path, 12)
    directory = default_dir(path)
    before = all_rows(path, directory)
    child = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from controller.store.archive import archive\n"
        "seen = []\n"
        "def step(name, segment):\n"
        "    seen.append(name)\n"
        "    if name == sys.argv[2] and seen.count(name) == int(sys.argv[3]):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "archive(Path(sys.argv[1]), 2, max_rows=16, step=step)\n"
    )
    killed = subprocess.run(
        [sys.executable, "-c", child, str(path), step, str(nth)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    sealed_before_kill = (nth - 1) + (step == "committed")
    db = sqlite3.connect(path)
    assert len(recorded(db, TABLE)) == sealed_before_kill  # the old state or the new, for the segment in flight
    db.close()
    assert all_rows(path, directory) == before  # no row lost, none in two places
    with JournalReader(path) as r:
        assert r.verify().ok and r.verify(archives=directory).ok
    # Run again: it completes, replacing what the killed run left unrecorded.
    (o,) = archive(path, 2, max_rows=16)
    assert o.sealed[-1].last_seq == 40 and all_rows(path, directory) == before
    db = sqlite3.connect(path)
    names = {s.segment for s in recorded(db, TABLE)}
    db.close()
    assert {f.name for f in directory.iterdir()} == names  # no temporary file, no orphan segment left
    assert independent(path, directory) == []


def test_beside_a_writer_committing_between_and_during_the_steps(tmp_path: Path) -> None:
    """The daemon's journal (the same Journal class and connection settings) commits while the archive runs: once
    between sealing and the live transaction, once blocked on the archive's write lock until it commits."""
    path = tmp_path / "t.sqlite"
    make(path, 10)
    j = Journal(path, TABLE, "boot-daemon")
    blocked: list[threading.Thread] = []
    errors: list[BaseException] = []

    def commit_round(n: int) -> None:
        try:
            play_round(j, n)
        except BaseException as err:  # reported by the assertion below
            errors.append(err)

    def step(name: str, segment: str) -> None:
        if segment != "T1.000000000001-000000000032.segment.sqlite":
            return
        if name == "sealed":
            commit_round(11)
        elif name == "deleting":
            t = threading.Thread(target=commit_round, args=(12,))
            t.start()  # waits on the write lock the archive holds
            blocked.append(t)
        elif name == "committed":
            blocked[0].join(timeout=30)  # its commit goes in once the archive's is done

    try:
        (o,) = archive(path, 2, step=step)
        assert not errors and not blocked[0].is_alive()
        # Rounds 1-8 first (9 and 10 kept); then, with 11 and 12 committed meanwhile, rounds 9 and 10 too.
        assert [(s.first_seq, s.last_seq) for s in o.sealed] == [(1, 32), (33, 40)]
        assert j.last_seq == 48 and o.live_rows == 8
        j.mark_published(list(range(33, 49)), replayed=False)
        with JournalReader(path) as r:
            assert r.verify().ok and r.verify(archives=default_dir(path)).ok
        assert sorted(all_rows(path, default_dir(path))) == list(range(1, 49))
        assert j.verify().ok
    finally:
        j.close()


def test_bad_arguments_are_named(tmp_path: Path, cli: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    path = tmp_path / "t.sqlite"
    make(path, 3)
    zero = cli("journal", "archive", "--journal", str(path), "--keep-rounds", "0")
    assert zero.returncode == 2 and "give 1 or more" in zero.stderr
    blocked = tmp_path / "file"
    blocked.write_text("")
    nowhere = cli("journal", "archive", "--journal", str(path), "--keep-rounds", "1", "--to", str(blocked / "sub"))
    assert nowhere.returncode == 2 and "cannot create the archive directory" in nowhere.stderr
    missing = cli("journal", "archive", "--journal", str(tmp_path / "none.sqlite"), "--keep-rounds", "1")
    assert missing.returncode == 2 and "no journal at" in missing.stderr
