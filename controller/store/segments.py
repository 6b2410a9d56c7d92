"""The archive segments a journal records: which rows were sealed out of it, into which file, ending at which chain
hash (docs/journal.md, "Archiving"). Written by controller.store.archive, read by the verifier and the start-up
checks, so that the live journal is verified from the last segment's head on and an anchor that names an archived
seq is not taken for another journal's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from controller.store.chain import GENESIS

SUFFIX = ".segment.sqlite"
FORMAT = 1  # the segment file's own layout (its `segment` table); bumped if it changes


@dataclass(frozen=True, slots=True)
class Segment:
    """Rows first_seq..last_seq of a table (`rows` of them: a rollback may have skipped seqs), sealed in the file
    `segment` (a name in the archive directory); its first row chains from (prev_seq, prev_hash), the end of the
    segment before it (or genesis), its last row's hash is head_hash; `sha256` is the whole file's."""

    table_id: str
    segment: str
    first_seq: int
    last_seq: int
    prev_seq: int
    prev_hash: str
    head_hash: str
    rows: int
    sha256: str
    archived_at: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "segment": self.segment,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "prev_seq": self.prev_seq,
            "prev_hash": self.prev_hash,
            "head_hash": self.head_hash,
            "rows": self.rows,
            "sha256": self.sha256,
            "archived_at": self.archived_at,
        }


FIELDS = "table_id, segment, first_seq, last_seq, prev_seq, prev_hash, head_hash, rows, sha256, archived_at"


def _segment(r: Sequence[Any]) -> Segment:
    t, name, first, last, pseq, phash, head, rows, sha, at = r
    return Segment(
        str(t), str(name), int(first), int(last), int(pseq), str(phash), str(head), int(rows), str(sha), str(at)
    )


def recorded(db: sqlite3.Connection, table_id: str) -> list[Segment]:
    """The table's segments, oldest first (none in a file older than schema 4)."""
    try:
        cur = db.execute(f"SELECT {FIELDS} FROM archives WHERE table_id = ? ORDER BY last_seq", (table_id,))
    except sqlite3.OperationalError:
        return []
    return [_segment(r) for r in cur]


def head(segments: Sequence[Segment]) -> tuple[int, str]:
    """Where the live journal's rows chain from: the last segment's end, or genesis."""
    return (segments[-1].last_seq, segments[-1].head_hash) if segments else (0, GENESIS)


def head_of(db: sqlite3.Connection, table_id: str) -> tuple[int, str]:
    """head() of the segments recorded now, read with one indexed row (the daemon asks at every archive run)."""
    try:
        row = db.execute(
            "SELECT last_seq, head_hash FROM archives WHERE table_id = ? ORDER BY last_seq DESC LIMIT 1", (table_id,)
        ).fetchone()
    except sqlite3.OperationalError:
        return (0, GENESIS)
    return (0, GENESIS) if row is None else (int(row[0]), str(row[1]))


def link_problems(segments: Sequence[Segment]) -> list[tuple[int, str]]:
    """(seq, what) where the recorded segments do not follow one another: each must chain from the one before."""
    out: list[tuple[int, str]] = []
    prev = (0, GENESIS)
    for s in segments:
        if (s.prev_seq, s.prev_hash) != prev:
            out.append(
                (
                    s.first_seq,
                    f"segment {s.segment} says it chains from seq {s.prev_seq}, but the segment before it ends at "
                    f"seq {prev[0]}{' with another hash' if s.prev_seq == prev[0] else ''}: the archive records were "
                    "changed",
                )
            )
        if not s.prev_seq < s.first_seq <= s.last_seq:
            out.append((s.first_seq, f"segment {s.segment} records rows {s.first_seq} to {s.last_seq}: not a range"))
        prev = (s.last_seq, s.head_hash)
    return out
