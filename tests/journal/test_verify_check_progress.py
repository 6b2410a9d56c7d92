"""`tablectl journal verify` says how far SQLite's check of the file has read while it runs, before the walk's own
progress (controller/cli/journal_check.py), and the check finds what it found unwatched. Real journals written by
the Journal, real SQLite; a report interval of milliseconds (a parameter) stands in for the 5 s a 2.5 GB file's
check spans, so a 15 MB file's check of a fraction of a second is reported many times."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.cli.journal import PROGRESS_EVERY
from controller.cli.journal_check import check_lines
from controller.core.events import DomainEvent
from controller.store import check_watch
from controller.store.journal import Journal
from controller.store.reader import JournalReader
from tests.journal.torn_files import page_size
from tests.tablectl_runs import in_process

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
ROWS = 2 * PROGRESS_EVERY
READ = re.compile(
    r"^tablectl journal: checking the file \(([0-9]+) MB\) with SQLite's quick_check: "
    r"([0-9]+) of about ([0-9]+) MB read \(([0-9]+) %\), [0-9]+ s$"
)


def big_journal(path: Path) -> Path:
    """A journal of ROWS events with some text each: some 15 MB, a check of a fraction of a second."""
    j = Journal(path, "T1", "boot-a")
    events = [
        DomainEvent("card.dealt", "655a.10(b)", {"n": i, "note": "x" * 400}, "T1-r000001", {}) for i in range(ROWS)
    ]
    j.append(events, T0)
    j.close()
    return path


def test_verify_shows_the_checks_progress_before_the_walks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = big_journal(tmp_path / "big.sqlite")
    mb = path.stat().st_size / 1e6
    monkeypatch.setattr(check_watch, "EVERY", 0.002)  # the CLI's interval is the daemon's: the 5 s, made short
    proc = in_process(capsys, "journal", "verify", "--journal", str(path))
    assert proc.returncode == 0 and f"intact: {ROWS} rows checked" in proc.stdout
    lines = proc.stderr.splitlines()
    ended = next(i for i, line in enumerate(lines) if line.startswith("tablectl journal: file checked ("))
    assert lines[ended] == f"tablectl journal: file checked ({mb:.0f} MB, 0 s); walking the hash chain"
    walked = lines.index(f"tablectl journal: verified {PROGRESS_EVERY} of {ROWS} rows (50 %)")
    assert ended < walked  # the check's lines, then the walk's
    read = [m.groups() for m in map(READ.match, lines[:ended]) if m]
    assert read, lines
    # What it read grows towards about 1.7 times the file (every page, then the rows again), never past 99 % early.
    assert all(int(size) == round(mb) and int(about) == round(1.7 * mb) for size, _, about, _ in read)
    got = [int(r) for _, r, _, _ in read]
    assert got == sorted(got) and all(0 <= int(share) <= 99 for _, _, _, share in read)
    assert all(READ.match(line) or "nothing read since the last line" in line for line in lines[:ended])


def test_a_small_journal_checked_at_once_says_nothing_of_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """At the real interval a check over within it prints no line: `verify` on a small file is as quiet as before."""
    path = tmp_path / "small.sqlite"
    j = Journal(path, "T1", "boot-a")
    j.append([DomainEvent("card.dealt", "655a.10(b)", {"n": 1}, "T1-r000001", {})], T0)
    j.close()
    proc = in_process(capsys, "journal", "verify", "--journal", str(path))
    assert proc.returncode == 0 and proc.stderr == ""


def test_the_watched_check_finds_what_the_unwatched_one_does(tmp_path: Path) -> None:
    """A page in the middle of the file zeroed (a write the disk never made): the same findings, watched or not."""
    path = big_journal(tmp_path / "damaged.sqlite")
    size = page_size(path)
    with path.open("r+b") as f:
        f.seek(path.stat().st_size // size // 2 * size)
        f.write(bytes(size))
    out = io.StringIO()
    with JournalReader(path) as reader:
        plain = reader.verify().as_dict()
        watched = reader.verify(watch=check_lines(out, 0.001)).as_dict()
    assert watched == plain
    assert not plain["ok"] and any(b["what"] == "damaged" for b in plain["breaks"])
    assert "checking the file (" in out.getvalue()
