"""Reading a journal without touching it: the CLI's `tablectl journal` and an examiner's copy.

The file is opened read-only (controller.store.schema.connect_readonly), so reading is safe beside a running
daemon; rows come back as JSON-ready dicts with their hashes, so an export can be checked independently.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from controller.store import manifest
from controller.store.check_watch import Watch
from controller.store.outbox import DamagedRow, read_range
from controller.store.schema import COLUMNS, connect_readonly
from controller.store.segments import Segment, link_problems, recorded
from controller.store.verify import verify_connection
from controller.store.walk import Progress, VerifyReport, check_segment


def _readable(text: Any) -> Any:
    """Text read with surrogateescape as printable text: a byte that is not UTF-8 becomes U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace") if isinstance(text, str) else text


def _row_dict(r: Sequence[Any], with_sealed: bool) -> dict[str, Any]:
    try:
        return _sound_row(r, with_sealed)
    except ValueError as err:  # UnicodeError and JSONDecodeError too: a damaged row is shown, never fatal
        out = {k: _readable(v) for k, v in zip(_KEYS, r, strict=False) if k not in ("payload", "sealed")}
        out["payload"] = None
        out["damaged"] = f"this row cannot be read as journaled ({type(err).__name__}): quarantined, never published"
        out["raw_payload"] = _readable(r[8])
        return out


_KEYS = ("seq", "event_id", "boot_id", "ts", "table_id", "round_id", "type", "rule", "payload", "sealed", "hash")


def _sound_row(r: Sequence[Any], with_sealed: bool) -> dict[str, Any]:
    seq, event_id, boot_id, ts, table_id, round_id, type_, rule, payload, sealed, hash_, published_at, replayed = r
    for text in (event_id, boot_id, ts, table_id, round_id, type_, rule, payload, sealed):
        if isinstance(text, str):
            text.encode("utf-8")  # a lone surrogate (a byte that was not UTF-8) raises UnicodeEncodeError
    out: dict[str, Any] = {
        "seq": seq,
        "event_id": event_id,
        "boot_id": boot_id,
        "ts": ts,
        "table_id": table_id,
        "round_id": round_id,
        "type": type_,
        "rule": rule,
        "payload": json.loads(payload),
    }
    if with_sealed:
        out["sealed"] = None if sealed is None else json.loads(sealed)
    out["hash"] = hash_
    out["published_at"] = published_at
    out["replayed"] = bool(replayed)
    return out


class JournalReader:
    """Read-only access for the CLI and examiners: rows as dicts (with their hashes), the tail, verify."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._conn, self.version = connect_readonly(self.path)
        # Damaged text must not stop a tail or an export: each row is decoded leniently and checked (_row_dict).
        self._conn.text_factory = lambda b: b.decode("utf-8", "surrogateescape")

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> JournalReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _select(self) -> str:
        hash_col = "hash" if self.version >= 2 else "NULL"
        return f"SELECT rowid, {COLUMNS}, {hash_col}, published_at, replayed FROM events"

    def table_ids(self) -> list[str]:
        return [str(t) for (t,) in self._conn.execute("SELECT DISTINCT table_id FROM events ORDER BY table_id")]

    def segments(self, table_id: str) -> list[Segment]:
        """The archive segments recorded for the table (controller.store.segments), oldest first."""
        return recorded(self._conn, table_id)

    def archived_table_ids(self) -> list[str]:
        """The tables with rows sealed into archive segments (a table may have none left in the file)."""
        try:
            cur = self._conn.execute("SELECT DISTINCT table_id FROM archives ORDER BY table_id")
        except sqlite3.OperationalError:  # a file older than schema 4 has archived nothing
            return []
        return [str(t) for (t,) in cur]

    def archived_rows(self, directory: Path) -> Iterator[dict[str, Any]]:
        """Every row sealed into the recorded segments, read from their files in `directory`, each segment checked
        first as `verify --archives` checks it (present, the recorded sha256, its chain to the recorded head) and
        its rows read and hash-checked as `resend` reads them (controller.store.outbox.read_range). Rows come as
        rows() gives them (without the sealed part). ArchiveUnreadable, naming the file and the fix, for a segment
        that is missing, altered or damaged: a sum over what could be read would be silently short."""
        for table_id in self.archived_table_ids():
            segs = recorded(self._conn, table_id)
            for seq, what in link_problems(segs):
                raise ArchiveUnreadable(f"table {table_id}, seq {seq}: {what}")
            skipped = manifest.rollbacks(self._conn, table_id)
            for seg in segs:
                yield from _segment_rows(directory, seg, skipped)

    def count(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])

    def rows(self, sealed: bool = False) -> Iterator[dict[str, Any]]:
        """Every row, in seq order (table by table when the file holds several), streamed."""
        for r in self._conn.execute(f"{self._select()} ORDER BY table_id, seq"):
            yield _row_dict(r[1:], sealed)

    def after(self, rowid: int, sealed: bool = False) -> list[tuple[int, dict[str, Any]]]:
        """(rowid, row) of the rows written after `rowid`, in the order written (for --follow)."""
        cur = self._conn.execute(f"{self._select()} WHERE rowid > ? ORDER BY rowid", (rowid,))
        return [(int(r[0]), _row_dict(r[1:], sealed)) for r in cur]

    def tail(self, n: int, sealed: bool = False) -> list[tuple[int, dict[str, Any]]]:
        """(rowid, row) of the last n rows written, oldest first."""
        cur = self._conn.execute(f"{self._select()} ORDER BY rowid DESC LIMIT ?", (n,))
        return [(int(r[0]), _row_dict(r[1:], sealed)) for r in reversed(cur.fetchall())]

    def verify(
        self, progress: Progress | None = None, archives: Path | None = None, watch: Watch | None = None
    ) -> VerifyReport:
        """The live journal from its last archive segment's head; with `archives` (the segments' directory) the
        whole chain through every segment first; SQLite's check of the file before it, reported to `watch`."""
        return verify_connection(self._conn, str(self.path), self.version, progress, archives, watch)


class ArchiveUnreadable(Exception):
    """An archive segment whose rows cannot be read as sealed: missing, altered or damaged (the message says which
    file and what to do)."""


def _segment_rows(directory: Path, seg: Segment, skipped: list[manifest.Rollback]) -> Iterator[dict[str, Any]]:
    path = directory / seg.segment
    report = VerifyReport(str(path), archives_checked=True)
    check_segment(directory, seg, skipped, report, None)
    fix = (
        "the totals need every archived row: restore the file as sealed from the archive's backup, or give "
        f"--archives DIR where the segments are (`tablectl journal verify --archives {directory}` lists every problem)"
    )
    if not report.ok:  # every finding of check_segment names the file
        raise ArchiveUnreadable(f"{report.first_break}; {fix}")
    conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, isolation_level=None)
    try:
        items = read_range(conn, seg.table_id, seg.first_seq, seg.last_seq, (seg.prev_seq, seg.prev_hash))
    except sqlite3.Error as err:
        raise ArchiveUnreadable(f"segment {path} cannot be read ({err}); {fix}") from None
    finally:
        conn.close()
    for item in items:
        if isinstance(item, DamagedRow):
            raise ArchiveUnreadable(f"segment {path}, seq {item.seq}: {item.reason}; {fix}")
        yield {
            "seq": item.seq,
            "event_id": item.event_id,
            "boot_id": item.boot_id,
            "ts": item.ts,
            "table_id": item.table_id,
            "round_id": item.round_id,
            "type": item.type,
            "rule": item.rule,
            "payload": dict(item.payload),
        }
