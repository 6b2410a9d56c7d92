"""What a table's journal must hold, recorded in the journal itself so that its absence is found (docs/journal.md,
"What must exist"), and the rollbacks found at start.

The manifest is one row per table, rewritten in every transaction that writes to the journal: the last seq and its
hash (the chain head), the number of transactions committed, the highest round number journaled, and each critical
state record (controller.store.records) with its number of copies, its sha256 and the seq it was written at. At
start the journal is held against it: a record or a copy that is gone, or one that is intact but not the one last
written (an older copy put back), is a finding, never a fresh start. The manifest itself gone while rows exist is
a finding too; a file emptied altogether (0 bytes, or deleted) is found against the anchor kept outside it
(controller.store.anchor).

A rollback found at start (the journal behind its anchor: committed events lost, e.g. a deleted `-wal` file) is
recorded at once in `rollbacks`, with the seqs skipped, so that the next row continues after the last seq the
anchor knows and no seq is ever used for two different events (controller.store.journal, `resume_after`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from controller.core.events import DomainEvent
from controller.store.chain import GENESIS
from controller.store.records import Record, StoredCopy

_COMPACT = json.JSONEncoder(separators=(",", ":"))  # json.dumps would build it at every commit


class ManifestError(ValueError):
    """A manifest row that cannot be read; the message says what is wrong with it."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One critical state record as last written: how many copies, their sha256, the journal's seq then."""

    copies: int
    sha256: str
    seq: int


@dataclass(frozen=True, slots=True)
class Manifest:
    """What the journal must hold, as its last transaction left it: the chain head and every critical state record."""

    seq: int = 0
    hash: str = GENESIS
    commits: int = 0
    round_no: int = 0
    records: Mapping[str, Entry] = field(default_factory=dict)

    def advance(self, seq: int, hash_: str, records: Sequence[Record], events: Sequence[DomainEvent]) -> Manifest:
        """The manifest after one more transaction that ends at (seq, hash_) and stores `records`."""
        written = {r.name: Entry(r.copies, r.sha256, seq) for r in records}
        return Manifest(
            seq,
            hash_,
            self.commits + 1,
            max(self.round_no, highest_round(events)),
            {**self.records, **written},
        )


def highest_round(events: Sequence[DomainEvent]) -> int:
    """The highest `round_no` the events' payloads carry (0 if none): numbering continues after it even when the
    events themselves are lost."""
    best = 0
    for ev in events:
        n = ev.payload.get("round_no")
        if isinstance(n, int) and not isinstance(n, bool) and n > best:
            best = n
    return best


def read(db: sqlite3.Connection, table_id: str) -> Manifest | None:
    """The table's manifest, None when it has none; ManifestError when its row cannot be read."""
    row = db.execute(
        "SELECT seq, hash, commits, round_no, records FROM manifest WHERE table_id = ?", (table_id,)
    ).fetchone()
    if row is None:
        return None
    seq, hash_, commits, round_no, records = row
    try:
        raw = json.loads(records)
        entries = {str(name): Entry(int(e["copies"]), str(e["sha256"]), int(e["seq"])) for name, e in raw.items()}
        return Manifest(int(seq), str(hash_), int(commits), int(round_no), entries)
    except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError) as err:
        why = f"{type(err).__name__}: {err}"
        raise ManifestError(f"the manifest of table {table_id!r} cannot be read ({why})") from None


def write(db: sqlite3.Connection, table_id: str, m: Manifest, ts: str) -> None:
    """Store `m` (inside the caller's transaction). An upsert: the row is updated in place in every commit, which
    dirties its table's page alone (INSERT OR REPLACE would give it a new rowid and dirty its index's page too)."""
    records = {name: {"copies": e.copies, "sha256": e.sha256, "seq": e.seq} for name, e in sorted(m.records.items())}
    db.execute(
        "INSERT INTO manifest (table_id, seq, hash, commits, round_no, records, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (table_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, commits = excluded.commits, "
        "round_no = excluded.round_no, records = excluded.records, updated_at = excluded.updated_at",
        (table_id, m.seq, m.hash, m.commits, m.round_no, _COMPACT.encode(records), ts),
    )


def rebuild(db: sqlite3.Connection, table_id: str) -> Manifest:
    """A manifest from what the file holds now (a file of an older schema): its tail, its records as stored, the
    highest round number; no commits counted yet."""
    tail = db.execute(
        "SELECT seq, hash FROM events WHERE table_id = ? ORDER BY seq DESC LIMIT 1", (table_id,)
    ).fetchone()
    entries: dict[str, Entry] = {}
    for name, copies, sha, seq in db.execute(
        "SELECT record, COUNT(*), MIN(sha256), MAX(seq) FROM critical_state WHERE table_id = ? GROUP BY record",
        (table_id,),
    ):
        entries[str(name)] = Entry(int(copies), str(sha), int(seq))
    (round_no,) = db.execute(
        "SELECT MAX(CAST(json_extract(payload, '$.round_no') AS INTEGER)) FROM events WHERE table_id = ?",
        (table_id,),
    ).fetchone()
    seq, hash_ = (0, GENESIS) if tail is None else (int(tail[0]), str(tail[1]))
    return Manifest(seq, hash_, 0, int(round_no or 0), entries)


def migrate_to_manifest(db: sqlite3.Connection) -> None:
    """Give every table in a schema 1 or 2 file its manifest, inside the caller's (the migration's) transaction."""
    tables = {t for (t,) in db.execute("SELECT DISTINCT table_id FROM events")}
    tables |= {t for (t,) in db.execute("SELECT DISTINCT table_id FROM critical_state")}
    for table_id in sorted(tables):
        write(db, table_id, rebuild(db, table_id), "migrated")


def record_problem(name: str, entry: Entry, copies: Sequence[StoredCopy]) -> str | None:
    """How the stored copies of one record differ from what the manifest says was last written, or None.

    A copy's own checksum is the record's reader's to check (snapshot, the meters' codec); here: every copy there,
    and each the one last written."""
    if not copies:
        return (
            f"the {name} record is missing: the manifest says {entry.copies} cop{'y' if entry.copies == 1 else 'ies'} "
            f"were written at seq {entry.seq}"
        )
    problems = []
    present = {c.copy for c in copies}
    gone = [str(i) for i in range(entry.copies) if i not in present]
    if gone:
        problems.append(f"cop{'y' if len(gone) == 1 else 'ies'} {', '.join(gone)} of {entry.copies} missing")
    for c in copies:
        if c.copy < entry.copies and c.intact and c.sha256 != entry.sha256:
            problems.append(
                f"copy {c.copy} (seq {c.seq}) is intact but not the one last written (seq {entry.seq}): an older copy "
                "was put back"
            )
    if not problems:
        return None
    return f"the {name} record: " + "; ".join(problems)


@dataclass(frozen=True, slots=True)
class Rollback:
    """A rollback recorded at start: seqs after_seq+1 .. upto_seq are not in this file (none when equal)."""

    after_seq: int
    upto_seq: int
    hash: str
    reason: str
    recorded_at: str

    @property
    def skipped(self) -> int:
        return self.upto_seq - self.after_seq

    def as_dict(self) -> dict[str, Any]:
        return {
            "after_seq": self.after_seq,
            "upto_seq": self.upto_seq,
            "hash": self.hash,
            "reason": self.reason,
            "recorded_at": self.recorded_at,
        }


def lost_in(recorded: Sequence[Rollback], seq: int) -> Rollback | None:
    """The recorded rollback that skipped `seq`, if one did: an anchor made before it may name such a seq."""
    return next((rb for rb in recorded if rb.after_seq < seq <= rb.upto_seq), None)


def rollbacks(db: sqlite3.Connection, table_id: str) -> list[Rollback]:
    """The table's recorded rollbacks, oldest first (empty in a file older than schema 3)."""
    try:
        cur = db.execute(
            "SELECT after_seq, upto_seq, hash, reason, recorded_at FROM rollbacks WHERE table_id = ? "
            "ORDER BY upto_seq, recorded_at",
            (table_id,),
        )
    except sqlite3.OperationalError:
        return []
    return [Rollback(int(a), int(u), str(h), str(r), str(t)) for a, u, h, r, t in cur]


def record_rollback(db: sqlite3.Connection, table_id: str, rb: Rollback) -> None:
    """Inside the caller's transaction."""
    db.execute(
        "INSERT INTO rollbacks (table_id, after_seq, upto_seq, hash, reason, recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
        (table_id, rb.after_seq, rb.upto_seq, rb.hash, rb.reason, rb.recorded_at),
    )


def after_rollback(m: Manifest, rb: Rollback, commits: int, round_no: int) -> Manifest:
    """The manifest once a rollback is recorded: its tail is the anchor's, its counts no lower than the anchor's."""
    return replace(
        m,
        seq=rb.upto_seq,
        hash=rb.hash,
        commits=max(m.commits, commits) + 1,
        round_no=max(m.round_no, round_no),
    )
