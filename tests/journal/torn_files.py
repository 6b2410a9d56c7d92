"""Journal files as a crash or a power cut can leave them: the main file torn by a checkpoint cut short (a kill -9
inside it, its -wal then lost), truncated, a page of zeros in the middle, its header damaged. Built deterministically
from a real journal (controller.store.journal.Journal on a real SQLite file), shared by the rollback test (which must
tell a torn file from an earlier state) and the damaged-journal tests (the daemon refuses to start on one)."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from controller.core.events import DomainEvent
from controller.store.journal import Journal

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
COMMITS = 320  # the -wal then holds the last half of them: some 1,200 frames, under the deferred checkpoint's 4,000


def wal_pages(wal: Path) -> tuple[int, dict[int, bytes]]:
    """The page size, and each page as the -wal's last committed frame for it holds it."""
    data = wal.read_bytes()
    size, salts = int.from_bytes(data[8:12], "big"), data[16:24]
    pages: dict[int, bytes] = {}
    committed: dict[int, bytes] = {}
    for at in range(32, len(data) - size - 23, size + 24):
        if data[at + 8 : at + 16] != salts:
            break
        pages[int.from_bytes(data[at : at + 4], "big")] = data[at + 24 : at + 24 + size]
        if int.from_bytes(data[at + 4 : at + 8], "big"):  # a commit frame: what came before it is whole
            committed = dict(pages)
    return size, committed


def checkpoint_cut_short(main: Path, wal: Path, keep: Callable[[int], bool] = lambda _page: True) -> None:
    """What a kill -9 in the middle of a checkpoint leaves in the main file: the first half of the pages the -wal's
    committed frames hold (a checkpoint copies them in page order), not the rest; only the -wal can finish it.
    `keep`: which of those pages the cut checkpoint had copied (all of the first half by default)."""
    size, committed = wal_pages(wal)
    with main.open("r+b") as f:
        for number in sorted(committed)[: len(committed) // 2]:
            if keep(number):
                f.seek((number - 1) * size)
                f.write(committed[number])


def journal_with_wal(directory: Path, table_id: str) -> Path:
    """A journal of COMMITS commits in `directory` (its anchor file beside it), the first half checkpointed into the
    main file and the rest in its -wal, copied while the journal was still open: as a kill -9 leaves them."""
    src = directory / "writing"
    src.mkdir(parents=True)
    journal = Journal(src / "table.sqlite", table_id, "boot-torn")
    try:
        journal.checkpoint(defer=True)  # the daemon's writer checkpoints between commits; here only at half
        for n in range(1, COMMITS + 1):
            payload = {"round_no": n, "note": "p" * (200 + n % 300)}
            journal.append([DomainEvent("table.noted", None, payload)], T0)
            if n == COMMITS // 2:
                journal.checkpoint()
        for suffix in ("", "-wal", ".anchor"):
            shutil.copyfile(src / f"table.sqlite{suffix}", directory / f"table.sqlite{suffix}")
    finally:
        journal.close()
    shutil.rmtree(src)
    return directory / "table.sqlite"


def torn(directory: Path, table_id: str, schema_page: bool = True) -> Path:
    """The main file a kill -9 inside a checkpoint leaves, its -wal then lost (flake24's case). `schema_page`
    False: page 1 (the schema) left as it was, so the file opens and only its tables are torn."""
    journal = journal_with_wal(directory, table_id)
    wal = Path(f"{journal}-wal")
    checkpoint_cut_short(journal, wal, keep=lambda page: schema_page or page != 1)
    wal.unlink()
    return journal


def crashed_journal(directory: Path, table_id: str) -> Path:
    """The same journal as a power cut leaves it once SQLite has recovered it: its -wal checkpointed into the main file
    and removed by a plain SQLite connection (no tablectl code), the anchor file as the last commit left it (not
    `closed`: the daemon's next start checks the whole file). To be damaged on disk."""
    journal = journal_with_wal(directory, table_id)
    db = sqlite3.connect(journal)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    assert not Path(f"{journal}-wal").exists()
    return journal


def page_size(journal: Path) -> int:
    head = journal.read_bytes()[:100]
    size = int.from_bytes(head[16:18], "big")
    return 65536 if size == 1 else size


def truncated(directory: Path, table_id: str) -> Path:
    """A power cut while the file grew: its tail pages lost (the file cut to half its size, on a page boundary)."""
    journal = crashed_journal(directory, table_id)
    size = page_size(journal)
    with journal.open("r+b") as f:
        f.truncate(journal.stat().st_size // size // 2 * size)
    return journal


def zeroed_page(directory: Path, table_id: str) -> Path:
    """A page in the middle of the file that the disk never wrote: all zeros."""
    journal = crashed_journal(directory, table_id)
    size = page_size(journal)
    middle = journal.stat().st_size // size // 2
    with journal.open("r+b") as f:
        f.seek(middle * size)
        f.write(bytes(size))
    return journal


def damaged_header(directory: Path, table_id: str) -> Path:
    """The file's first sector half written: its 100-byte header (the magic string, the page size) garbage."""
    journal = crashed_journal(directory, table_id)
    with journal.open("r+b") as f:
        f.write(bytes(range(7, 107)))
    return journal


DAMAGES: dict[str, Callable[[Path, str], Path]] = {
    "torn": torn,
    "torn_below_the_schema": lambda d, t: torn(d, t, schema_page=False),
    "truncated": truncated,
    "zeroed_page": zeroed_page,
    "damaged_header": damaged_header,
}
