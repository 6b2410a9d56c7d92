"""Walking a journal's hash chain row by row: the live file's rows of one table and an archive segment's, and what the
walk reports (`Break`, `VerifyReport`). controller.store.verify adds what the file must hold besides its rows (the
chain head, the manifest, the critical state records, the anchor file); docs/journal.md, "Integrity".
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.store import manifest, segments
from controller.store.chain import GENESIS, row_hash
from controller.store.schema import COLUMNS
from controller.store.segments import Segment

# Called now and then during a long walk with the number of rows checked so far.
Progress = Callable[[int], object]
PROGRESS_EVERY = 10_000


@dataclass(frozen=True, slots=True)
class Break:
    """Where the chain does not hold. what: "altered row", "missing seq", "head mismatch", "quarantined row" (one
    the daemon cannot publish: not UTF-8, not JSON), "unchained" (a schema 1 file), "unreadable", "damaged"
    (SQLite's quick_check fails: a torn or corrupt file, controller.store.damage); and for what must exist:
    "rolled back" (committed seqs not in the file: behind its anchor, or skipped after a rollback found at start),
    "anchor" (the anchor file missing, damaged or not this journal's), "manifest" (missing or disagreeing with the
    rows), "missing record" (a record the manifest lists)."""

    table_id: str
    seq: int | None
    what: str
    detail: str

    def __str__(self) -> str:
        at = f" at seq {self.seq}" if self.seq is not None else ""
        return f"{self.what}{at} (table {self.table_id}): {self.detail}"

    def as_dict(self) -> dict[str, Any]:
        return {"table_id": self.table_id, "seq": self.seq, "what": self.what, "detail": self.detail}


@dataclass
class VerifyReport:
    """What `verify` found. `ok` only when every table's chain and head hold; never raised, always returned."""

    path: str
    rows_checked: int = 0
    tables: dict[str, int] = field(default_factory=dict)  # table_id -> last seq seen
    breaks: list[Break] = field(default_factory=list)  # the first MAX_BREAKS found, in seq order per table
    more_breaks: int = 0  # found beyond those listed
    # table_id -> its archive segments (controller.store.segments): rows sealed out of the file, and whether each
    # segment file was checked too (verify --archives) or only its recorded head was used
    segments: dict[str, list[Segment]] = field(default_factory=dict)
    archives_checked: bool = False

    MAX_BREAKS = 100

    @property
    def ok(self) -> bool:
        return not self.breaks

    @property
    def first_break(self) -> Break | None:
        return self.breaks[0] if self.breaks else None

    def add(self, b: Break) -> None:
        if len(self.breaks) < self.MAX_BREAKS:
            self.breaks.append(b)
        else:
            self.more_breaks += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "rows_checked": self.rows_checked,
            "tables": dict(self.tables),
            "first_break": None if self.first_break is None else self.first_break.as_dict(),
            "breaks": [b.as_dict() for b in self.breaks],
            "more_breaks": self.more_breaks,
            "archived": {
                t: {
                    "segments": [s.as_dict() for s in segs],
                    "rows": sum(s.rows for s in segs),
                    "upto_seq": segments.head(segs)[0],
                    "checked": self.archives_checked,
                }
                for t, segs in self.segments.items()
                if segs
            },
        }


def walk_chain(
    conn: sqlite3.Connection,
    table_id: str,
    report: VerifyReport,
    progress: Progress | None,
    skipped: list[manifest.Rollback],
    start: tuple[int, str] = (0, GENESIS),
    end: int | None = None,
) -> tuple[int, str] | None:
    """Check one table's rows link by link, from `start` (the seq and hash the first row chains from: genesis, or
    the end of the archive segments) to `end` (a segment's last seq; None: the live journal's tail); the (seq, hash)
    of its last row (or of the anchor a rollback skipped to, when no row came after it), or None when it has none."""
    prev = start[1]
    expected = start[0] + 1
    last: tuple[int, str] | None = start if start[0] > 0 else None
    gaps = _skips_met(skipped, start[0], end)
    if start[0] > 0:
        _archived_rows_left(conn, table_id, start[0], report)
    cur = conn.execute(
        f"SELECT {COLUMNS}, hash FROM events WHERE table_id = ? AND seq > ? AND seq <= ? ORDER BY seq",
        (table_id, start[0], end if end is not None else 2**63 - 1),
    )
    for row in cur:
        seq, event_id, boot_id, ts, tid, round_id, type_, rule, payload, sealed, stored = row
        skip = gaps.pop(expected, None)
        if skip is not None and seq == skip.upto_seq + 1:
            # Seqs the journal lost and skipped when it found so at start: reported, and the chain checked on from
            # the anchor's hash it continued from.
            report.add(rolled_back(table_id, skip))
            prev, expected = skip.hash, seq
        if seq != expected:
            gap = f" to {seq - 1}" if seq - 1 > expected else ""
            report.add(Break(table_id, expected, "missing seq", f"seq {expected}{gap} absent (next row is seq {seq})"))
        computed = row_hash(prev, seq, event_id, boot_id, ts, tid, round_id, type_, rule, payload, sealed)
        if stored != computed and seq == expected:
            detail = (
                f"stored hash {str(stored)[:16]}... does not match the row's contents "
                f"({computed[:16]}...): the row, or the one before it, was changed"
            )
            report.add(Break(table_id, seq, "altered row", detail))
        damage = _unreadable(payload, sealed, event_id, boot_id, ts, tid, round_id, type_, rule)
        if damage is not None:
            detail = f"{damage}: the daemon never publishes it, it reports it in a journal.row_quarantined event"
            report.add(Break(table_id, seq, "quarantined row", detail))
        # Carry on from the stored hash, so one altered row is reported once and the rows after it still checked.
        prev = stored if isinstance(stored, str) else computed
        expected = seq + 1
        last = (seq, prev)
        report.rows_checked += 1
        if progress is not None and report.rows_checked % PROGRESS_EVERY == 0:
            progress(report.rows_checked)
    skip = gaps.pop(expected, None) if end is None else None
    if skip is not None:  # skipped at start, and nothing journaled after it yet
        report.add(rolled_back(table_id, skip))
        last = (skip.upto_seq, skip.hash)
    return last


def _skips_met(skipped: list[manifest.Rollback], after: int, end: int | None) -> dict[int, manifest.Rollback]:
    """A rollback's skipped seqs are reported by the walk that meets them: the one whose range they follow."""
    return {
        rb.after_seq + 1: rb
        for rb in skipped
        if rb.skipped and rb.after_seq >= after and (end is None or rb.after_seq < end)
    }


def _archived_rows_left(conn: sqlite3.Connection, table_id: str, upto: int, report: VerifyReport) -> None:
    """Rows at or before the archive's head still in the live file: added after they were sealed out."""
    (stale,) = conn.execute("SELECT COUNT(*) FROM events WHERE table_id = ? AND seq <= ?", (table_id, upto)).fetchone()
    if stale:
        detail = f"{stale} row(s) at or before seq {upto} are still here although archived (added afterwards)"
        report.add(Break(table_id, upto, "archive", detail))


def _unreadable(payload: object, sealed: object, *texts: object) -> str | None:
    """Why a row cannot be published as journaled (controller/store/outbox.py quarantines it), or None. The walk
    reads text with surrogateescape, so bytes that are not UTF-8 show as lone surrogates."""
    for text in (payload, sealed, *texts):
        if isinstance(text, str) and any("\udc80" <= c <= "\udcff" for c in text):
            return "its stored text is not UTF-8"
    try:
        body = json.loads(str(payload))
        if sealed is not None:
            json.loads(str(sealed))
    except ValueError:
        return "its payload is not JSON"
    return None if isinstance(body, dict) else "its payload is not a JSON object"


def rolled_back(table_id: str, rb: manifest.Rollback) -> Break:
    detail = (
        f"seq {rb.after_seq + 1} to {rb.upto_seq} were committed but are not in this file (found at start, "
        f"{rb.recorded_at}: {rb.reason}); the floor's archive holds those that were published"
    )
    return Break(table_id, rb.after_seq + 1, "rolled back", detail)


# -- archive segments (controller.store.archive) ------------------------------------------------------------------


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_segment(
    directory: Path, seg: Segment, skipped: list[manifest.Rollback], report: VerifyReport, progress: Progress | None
) -> None:
    """One segment file against what the live journal recorded of it: present, the same bytes (sha256), and its rows
    chaining from the segment before to the recorded head. Every finding names the file."""
    path = directory / seg.segment
    where = f"seq {seg.first_seq} to {seg.last_seq}"
    if not path.is_file():
        detail = f"{path} is missing: it holds {where} ({seg.rows} rows); put it back from the archive's backup"
        report.add(Break(seg.table_id, seg.first_seq, "missing segment", detail))
        return
    try:
        sha = file_sha256(path)
    except OSError as err:
        report.add(Break(seg.table_id, seg.first_seq, "missing segment", f"{path} cannot be read: {err.strerror}"))
        return
    if sha != seg.sha256:
        detail = (
            f"{path} is not the file archived ({where}): its sha256 is {sha[:16]}..., the journal recorded "
            f"{seg.sha256[:16]}...; it was changed or replaced"
        )
        report.add(Break(seg.table_id, seg.first_seq, "altered segment", detail))
    found = VerifyReport(str(path))
    try:
        walk_segment(path, seg, skipped, found, progress)
    except (sqlite3.Error, ValueError) as err:
        found.add(Break(seg.table_id, seg.first_seq, "unreadable", f"{type(err).__name__}: {err}"))
    report.rows_checked += found.rows_checked
    for b in found.breaks:
        report.add(Break(b.table_id, b.seq, b.what, f"in segment {path}: {b.detail}"))


def walk_segment(
    path: Path, seg: Segment, skipped: list[manifest.Rollback], report: VerifyReport, progress: Progress | None = None
) -> None:
    """A segment file's rows walked from where it says it chains from to its recorded head (read-only)."""
    conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True, isolation_level=None)
    conn.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    try:
        meta = conn.execute(
            "SELECT table_id, first_seq, last_seq, prev_seq, prev_hash, head_hash, rows FROM segment"
        ).fetchone()
        mine = (seg.table_id, seg.first_seq, seg.last_seq, seg.prev_seq, seg.prev_hash, seg.head_hash, seg.rows)
        if meta is None or tuple(meta) != mine:
            report.add(
                Break(seg.table_id, seg.first_seq, "altered segment", "its own record differs from the journal's")
            )
        before = report.rows_checked
        last = walk_chain(conn, seg.table_id, report, progress, skipped, (seg.prev_seq, seg.prev_hash), seg.last_seq)
        if last != (seg.last_seq, seg.head_hash) or report.rows_checked - before != seg.rows:
            got = "no rows" if last is None else f"seq {last[0]} ({last[1][:16]}...)"
            detail = (
                f"it should end at seq {seg.last_seq} ({seg.head_hash[:16]}...) after {seg.rows} rows; "
                f"it ends at {got} after {report.rows_checked - before}"
            )
            report.add(Break(seg.table_id, seg.last_seq, "altered segment", detail))
    finally:
        conn.close()


def verify_segment_file(path: Path, progress: Progress | None = None) -> tuple[Segment, VerifyReport]:
    """One archive segment checked by itself, from its own record (`tablectl journal verify --segment`): its rows
    chain from where it says to its head, gap-free but for the rollbacks it records. What it cannot say alone is
    whether it is the file the journal recorded: its sha256 (in the Segment returned) against the journal's
    `archives` row, which `verify --archives` compares. SegmentError when the file is not a readable segment."""
    try:
        conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True, isolation_level=None)
    except (sqlite3.Error, OSError) as err:
        raise SegmentError(f"{path} cannot be opened: {err}") from None
    try:
        meta = conn.execute(
            "SELECT format, table_id, first_seq, last_seq, prev_seq, prev_hash, head_hash, rows, created_at "
            "FROM segment"
        ).fetchall()
        skipped = [
            manifest.Rollback(int(a), int(u), str(h), str(r), str(at))
            for a, u, h, r, at in conn.execute(
                "SELECT after_seq, upto_seq, hash, reason, recorded_at FROM rollbacks ORDER BY after_seq"
            )
        ]
    except sqlite3.Error as err:
        raise SegmentError(
            f"{path} is not an archive segment ({err}): give a file `tablectl journal archive` sealed "
            f"(<table_id>.<first seq>-<last seq>{segments.SUFFIX})"
        ) from None
    finally:
        conn.close()
    if len(meta) != 1:
        raise SegmentError(f"{path} has {len(meta)} segment records, not one: not a segment as sealed")
    fmt, table_id, first, last, prev_seq, prev_hash, head_hash, rows, created = meta[0]
    if int(fmt) > segments.FORMAT:
        raise SegmentError(f"{path} is segment format {fmt}, newer than this tablectl reads ({segments.FORMAT})")
    try:
        sha = file_sha256(path)
    except OSError as err:
        raise SegmentError(f"{path} cannot be read: {err.strerror}") from None
    seg = Segment(
        str(table_id),
        path.name,
        int(first),
        int(last),
        int(prev_seq),
        str(prev_hash),
        str(head_hash),
        int(rows),
        sha,
        str(created),
    )
    report = VerifyReport(str(path))
    try:
        walk_segment(path, seg, skipped, report, progress)
    except (sqlite3.Error, ValueError) as err:
        report.add(Break(seg.table_id, seg.first_seq, "unreadable", f"{type(err).__name__}: {err}"))
    report.tables[seg.table_id] = seg.last_seq
    return seg, report


class SegmentError(Exception):
    """A file that cannot be read as an archive segment at all (not SQLite, no segment record)."""
