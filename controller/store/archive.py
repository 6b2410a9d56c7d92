"""Archiving: completed rounds sealed out of the live journal into segment files, so that the journal and the time
`tablectl journal verify` takes stay bounded by the rounds kept (docs/journal.md, "Archiving").

A segment is an SQLite file holding a run of the table's rows exactly as journaled (same columns, same hashes), the
rollbacks recorded in that run, and its own record (`segment`: the seq and hash its first row chains from, its last
seq and hash, its row count), so it verifies on its own. The live journal records each segment (`archives`,
controller.store.segments) with the file's sha256, and verifies from the last segment's head on.

What is archived: only rows of rounds that ended (`round.completed` or `round.voided`), and the round-less rows
between them, older than the last `keep_rounds` rounds, and only rows the broker has acknowledged (`published_at`).
The round in progress (with its wagers, holds and decisions) is never archived, nor anything after the first round
that has not ended; the critical state records, the manifest, the chain head and the rollbacks are never touched:
what the daemon reads at start (docs/recovery.md) stays in the live file.

Crash-safe order, per segment (each step is one the tests kill the process at):
  1. "written": the rows copied into `<name>.tmp` in one transaction, the file fsynced; the live journal untouched.
  2. "sealed": the temporary file walked again from its own record, renamed to its name, the directory fsynced.
  3. "deleting": in one live transaction (BEGIN IMMEDIATE), the rows checked unchanged and still published, the
     segment recorded and the rows deleted; not yet committed.
  4. "committed".
A kill before 4 leaves the old journal (and maybe a segment file it does not record, replaced by the next run); a
kill after it leaves the new one. No state has rows in neither place.

Beside a running daemon: WAL lets the daemon keep reading and committing; the live transaction of step 3 holds the
write lock for one segment's delete (at most `max_rows` rows), which the daemon's writer thread waits out (its busy
timeout is 10 s).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import structlog

from controller.store import manifest, segments
from controller.store.rows import iso_utc, rollback_open
from controller.store.schema import (
    COLUMNS,
    EVENTS_TABLE,
    ROLLBACKS_TABLE,
    SCHEMA_VERSION,
    JournalError,
    connect,
    connect_readonly,
    create_or_migrate,
)
from controller.store.segments import Segment
from controller.store.walk import VerifyReport, file_sha256, walk_segment

log = structlog.get_logger(__name__)

ENDS = ("round.completed", "round.voided")
MAX_SEGMENT_ROWS = 50_000  # rows a segment: what one live transaction deletes while the daemon waits

# Called with the name of each step done ("written", "sealed", "deleting", "committed") and the segment's name.
Step = Callable[[str, str], object]

_SEGMENT_SCHEMA = (
    EVENTS_TABLE
    + ROLLBACKS_TABLE
    + """
CREATE TABLE segment (
    format     INTEGER NOT NULL,
    journal    TEXT    NOT NULL,
    table_id   TEXT    NOT NULL,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    prev_seq   INTEGER NOT NULL,
    prev_hash  TEXT    NOT NULL,
    head_hash  TEXT    NOT NULL,
    rows       INTEGER NOT NULL,
    created_at TEXT    NOT NULL
);
"""
)


@dataclass(frozen=True, slots=True)
class Plan:
    """How far a table's journal may be archived: rows up to seq `upto` (0: none), and why not further."""

    table_id: str
    upto: int
    why: str


@dataclass
class Outcome:
    """What one archive run did for one table."""

    table_id: str
    sealed: list[Segment]
    plan: Plan
    live_rows: int


def default_dir(journal: Path) -> Path:
    return journal.with_name(journal.name + ".archive")


def segment_name(table_id: str, first: int, last: int) -> str:
    return f"{table_id}.{first:012d}-{last:012d}{segments.SUFFIX}"


def plan(db: sqlite3.Connection, table_id: str, keep_rounds: int) -> Plan:
    """The last seq that may be archived while keeping the last `keep_rounds` rounds (read in the caller's snapshot)."""
    rounds = db.execute(
        "SELECT round_id, MIN(seq), MAX(seq), SUM(type IN (?, ?)) FROM events WHERE table_id = ? AND round_id IS NOT "
        "NULL GROUP BY round_id ORDER BY MIN(seq)",
        (*ENDS, table_id),
    ).fetchall()
    if len(rounds) <= keep_rounds:
        return Plan(table_id, 0, f"the journal holds {len(rounds)} round(s), no more than the {keep_rounds} kept")
    kept = rounds[-keep_rounds]
    upto, why = int(kept[1]) - 1, f"the last {keep_rounds} round(s) are kept, from {kept[0]} at seq {kept[1]}"
    for round_id, first, last, ended in rounds[:-keep_rounds]:
        # A round that never ended (settled by hand after a lost state) or whose rows run into a kept round: nothing
        # from its first row on is archived.
        if not ended or int(last) > upto:
            if int(first) - 1 < upto:
                upto = int(first) - 1
                why = f"round {round_id} (from seq {first}) has not ended: never archived"
            break
    (unpublished,) = db.execute(
        "SELECT MIN(seq) FROM events WHERE table_id = ? AND published_at IS NULL", (table_id,)
    ).fetchone()
    if unpublished is not None and int(unpublished) - 1 < upto:
        upto = int(unpublished) - 1
        why = f"seq {unpublished} is not yet acknowledged by the broker: nothing from it on is archived"
    # Never half a round: a limit that falls inside one (an unacknowledged row) moves to before its first row.
    for round_id, first, last, _ in rounds:
        if int(first) <= upto < int(last):
            upto = int(first) - 1
            why += f"; round {round_id} (from seq {first}) goes whole or not at all"
            break
    start = segments.head_of(db, table_id)[0]
    (last_row,) = db.execute(
        "SELECT MAX(seq) FROM events WHERE table_id = ? AND seq > ? AND seq <= ?", (table_id, start, upto)
    ).fetchone()
    return Plan(table_id, 0 if last_row is None else int(last_row), why)


def archive(
    path: Path,
    keep_rounds: int,
    directory: Path | None = None,
    *,
    max_rows: int = MAX_SEGMENT_ROWS,
    step: Step | None = None,
    progress: Callable[[str], object] | None = None,
) -> list[Outcome]:
    """Seal every table's archivable rows of the journal at `path` into segments in `directory` (default
    `<journal>.archive`), at most `max_rows` rows a segment; JournalError when it cannot (the message says why)."""
    directory = default_dir(path) if directory is None else directory
    db = open_journal(path, keep_rounds, directory)
    try:
        tables = [t for (t,) in db.execute("SELECT table_id FROM chain_head ORDER BY table_id")]
        out = []
        for table_id in tables:
            sealed: list[Segment] = []
            while True:
                p = plan(db, table_id, keep_rounds)
                if p.upto == 0:
                    break
                seg = _seal(db, path, directory, table_id, p.upto, max_rows, step)
                commit_sealed(db, path, directory, seg, step)
                sealed.append(seg)
                if progress is not None:
                    progress(f"{seg.segment}: seq {seg.first_seq} to {seg.last_seq}, {seg.rows} rows")
            (live,) = db.execute("SELECT COUNT(*) FROM events WHERE table_id = ?", (table_id,)).fetchone()
            out.append(Outcome(table_id, sealed, p, int(live)))
        # The deletes went through the -wal file: give its space back when no reader holds it (a running daemon may,
        # then the next checkpoint reuses it). The main file keeps its pages for the rows to come: it stops growing.
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return out
    finally:
        db.close()


def open_journal(path: Path, keep_rounds: int, directory: Path) -> sqlite3.Connection:
    """A writing connection to the journal at `path`, refused as every archive run refuses it, the archive directory
    made; JournalError when either cannot be."""
    if keep_rounds < 1:
        raise JournalError(
            f"--keep-rounds {keep_rounds}: keep at least 1 round (the one in progress is never archived)"
        )
    probe, version = connect_readonly(path)  # the same refusals as every `tablectl journal` action
    probe.close()
    if version < 3:
        raise JournalError(
            f"{path} has schema version {version}: start the table's daemon once (it migrates the file), then archive"
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise JournalError(
            f"cannot create the archive directory {directory}: {err.strerror}; choose another --to"
        ) from None
    db = connect(path)
    try:
        if version < SCHEMA_VERSION:
            create_or_migrate(db, path)  # adds the archives table, in one transaction, as the daemon would
    except BaseException:
        db.close()
        raise
    return db


def seal_next(
    db: sqlite3.Connection, path: Path, directory: Path, table_id: str, keep_rounds: int, max_rows: int
) -> Segment | None:
    """Steps 1 and 2 alone: the next segment written and sealed, the live journal untouched (WAL: the daemon's
    writer never waits for it); None when nothing may be archived. commit_sealed then records it and deletes its
    rows, in the short transaction the daemon runs only between rounds."""
    p = plan(db, table_id, keep_rounds)
    return None if p.upto == 0 else _seal(db, path, directory, table_id, p.upto, max_rows, None)


def _seal(
    db: sqlite3.Connection, path: Path, directory: Path, table_id: str, upto: int, max_rows: int, step: Step | None
) -> Segment:
    """Steps 1 and 2: the rows after the last segment, to `upto` and at most `max_rows` of them, in a sealed file."""
    prev = segments.head_of(db, table_id)
    (last,) = db.execute(
        "SELECT MAX(seq) FROM "
        "(SELECT seq FROM events WHERE table_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?)",
        (table_id, prev[0], upto, max_rows),
    ).fetchone()
    (first,) = db.execute("SELECT MIN(seq) FROM events WHERE table_id = ? AND seq > ?", (table_id, prev[0])).fetchone()
    first, last = int(first), int(last)
    name = segment_name(table_id, first, last)
    final = directory / name
    tmp = directory / (name + ".tmp")
    skipped = [rb for rb in manifest.rollbacks(db, table_id) if prev[0] <= rb.after_seq < last]
    now = iso_utc(datetime.now(UTC))
    rows, head = _write(db, path, tmp, table_id, prev, first, last, skipped, now)
    _step(step, "written", name)
    seg = Segment(table_id, name, first, last, prev[0], prev[1], head, rows, "", now)
    # Walked again as written, before anything is deleted: the rows chain from the segment before and end at head.
    found = VerifyReport(str(tmp))
    walk_segment(tmp, seg, skipped, found)
    # A rollback recorded at start is history, reported by every verify from then on; anything else is damage.
    damage = [b for b in found.breaks if b.what != "rolled back"]
    if damage:
        tmp.unlink(missing_ok=True)
        raise JournalError(
            f"the journal {path} does not verify in seq {first} to {last} ({damage[0]}): archiving refuses to "
            "seal a broken chain; run `tablectl journal verify` and investigate first"
        )
    if db.execute("SELECT 1 FROM archives WHERE segment = ?", (name,)).fetchone() is not None:
        # Another run (the daemon's, an operator's timer) recorded these very rows meanwhile: never replace its file.
        tmp.unlink(missing_ok=True)
        raise JournalError(f"another archive of {path} ran at the same time and sealed {name}; run it again")
    os.replace(tmp, final)
    _fsync_dir(directory)
    seg = Segment(table_id, name, first, last, prev[0], prev[1], head, rows, file_sha256(final), now)
    _step(step, "sealed", name)
    return seg


def commit_sealed(db: sqlite3.Connection, path: Path, directory: Path, seg: Segment, step: Step | None = None) -> None:
    """Steps 3 and 4: in one transaction under the write lock, the rows checked unchanged and still published, the
    segment recorded and its rows deleted. JournalError when the journal moved on meanwhile (another archive ran):
    the sealed file, which the journal then never records, is removed, and every row is still in the journal."""
    table_id, name, first, last = seg.table_id, seg.segment, seg.first_seq, seg.last_seq
    prev = (seg.prev_seq, seg.prev_hash)
    db.execute("BEGIN IMMEDIATE")
    try:
        # Under the write lock: nobody archived meanwhile, and the rows are the ones sealed, all still published.
        if segments.head_of(db, table_id) != prev:
            raise JournalError(f"another archive of {path} ran at the same time; run it again")
        n, at_last, unpublished = db.execute(
            "SELECT COUNT(*), MAX(CASE WHEN seq = ? THEN hash END), SUM(published_at IS NULL) FROM events "
            "WHERE table_id = ? AND seq > ? AND seq <= ?",
            (last, table_id, prev[0], last),
        ).fetchone()
        if (int(n), at_last, int(unpublished or 0)) != (seg.rows, seg.head_hash, 0):
            raise JournalError(f"the rows of {path} in seq {first} to {last} changed while they were sealed; run again")
        db.execute(
            f"INSERT INTO archives ({segments.FIELDS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (table_id, name, first, last, prev[0], prev[1], seg.head_hash, seg.rows, seg.sha256, seg.archived_at),
        )
        db.execute("DELETE FROM events WHERE table_id = ? AND seq > ? AND seq <= ?", (table_id, prev[0], last))
        _step(step, "deleting", name)
        db.execute("COMMIT")
    except JournalError:
        rollback_open(db)
        # Not ours to remove if another run recorded a segment of this very name (the same rows, sealed by it).
        if db.execute("SELECT 1 FROM archives WHERE segment = ?", (name,)).fetchone() is None:
            (directory / name).unlink(missing_ok=True)
        raise
    except BaseException:
        rollback_open(db)
        raise
    _step(step, "committed", name)
    log.info(
        "journal rows archived",
        path=str(path),
        segment=str(directory / name),
        first_seq=first,
        last_seq=last,
        rows=seg.rows,
    )


def _write(
    db: sqlite3.Connection,
    path: Path,
    tmp: Path,
    table_id: str,
    prev: tuple[int, str],
    first: int,
    last: int,
    skipped: list[manifest.Rollback],
    now: str,
) -> tuple[int, str]:
    """The rows copied as stored into a fresh segment file, durable; (rows, the last row's hash)."""
    tmp.unlink(missing_ok=True)
    seg = sqlite3.connect(str(tmp), isolation_level=None)
    try:
        # A rollback journal, not WAL: the finished segment is one self-contained file.
        seg.execute("PRAGMA journal_mode=DELETE")
        seg.execute("PRAGMA synchronous=FULL")
        seg.execute("BEGIN")
        for statement in _SEGMENT_SCHEMA.split(";"):
            if statement.strip():
                seg.execute(statement)
        cols = f"{COLUMNS}, hash, published_at, replayed"
        rows, head = 0, prev[1]
        cur = db.execute(
            f"SELECT {cols} FROM events WHERE table_id = ? AND seq > ? AND seq <= ? ORDER BY seq",
            (table_id, prev[0], last),
        )
        while batch := cur.fetchmany(5_000):
            seg.executemany(f"INSERT INTO events ({cols}) VALUES ({', '.join('?' * 13)})", batch)
            rows += len(batch)
            head = str(batch[-1][10])
        seg.executemany(
            "INSERT INTO rollbacks (table_id, after_seq, upto_seq, hash, reason, recorded_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(table_id, rb.after_seq, rb.upto_seq, rb.hash, rb.reason, rb.recorded_at) for rb in skipped],
        )
        seg.execute(
            "INSERT INTO segment (format, journal, table_id, first_seq, last_seq, prev_seq, prev_hash, head_hash, "
            "rows, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (segments.FORMAT, path.name, table_id, first, last, prev[0], prev[1], head, rows, now),
        )
        seg.execute("COMMIT")
    finally:
        seg.close()
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return rows, head


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _step(step: Step | None, name: str, segment: str) -> None:
    if step is not None:
        step(name, segment)
