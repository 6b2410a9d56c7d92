"""One table's record of what its journal must hold: the manifest written in each transaction, the anchor file
written after each commit, and the rollbacks recorded at start (docs/journal.md, "What must exist", "The anchor").

The journal (controller.store.journal) calls `base` once it holds the write lock, `in_transaction` before each
COMMIT and `after_commit` after it; everything else here is read at open, for the start-up checks
(controller.store.integrity).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from controller.core.events import DomainEvent
from controller.store import manifest, segments
from controller.store.anchor import AnchorError, Claim, Found, Sidecar
from controller.store.chain import GENESIS
from controller.store.records import Record
from controller.store.schema import JournalError

ROUND_SPAN = 20_000  # rows: far more than one round journals, however long it waited


class CriticalBook:
    """The manifest and anchor of one table's journal, as the journal's writer keeps them."""

    def __init__(self, db: sqlite3.Connection, path: Path, table_id: str, anchored: bool) -> None:
        self.table_id = table_id
        self._db = db  # the journal's own connection, for reads (closed with the journal)
        self.rollbacks = manifest.rollbacks(db, table_id)
        self.manifest_problem: str | None = None
        try:
            self.manifest: manifest.Manifest | None = manifest.read(db, table_id)
        except manifest.ManifestError as err:
            self.manifest, self.manifest_problem = None, str(err)
        self._sidecar = Sidecar(path, table_id) if anchored else None
        found = self.found
        if found is not None and found.claim is not None and found.claim.table_id != table_id:
            raise JournalError(
                f"{found.path} anchors the journal of table {found.claim.table_id!r}, not of {table_id!r}: give each "
                "table its own journal file (journal.path); if this journal really is this table's, the anchor file "
                "beside it is another's: find out how it got there before moving it aside"
            )

    @property
    def found(self) -> Found | None:
        """What the anchor file held when the journal was opened (None when this journal keeps none)."""
        return None if self._sidecar is None else self._sidecar.found

    def anchor_new(self, tail: tuple[int, str], ts: str) -> None:
        """Anchor a journal that has not committed since it was created (or migrated), before its first commit:
        a missing anchor is then never a journal that had no time to write it."""
        commits = self.manifest.commits if self.manifest is not None else 0
        found = self.found
        if self._sidecar is not None and found is not None and not found.exists and commits == 0:
            try:
                self._sidecar.write(self._claim(self.manifest or manifest.Manifest(*tail)), ts, sync=True)
            except AnchorError as err:  # at open: the table does not start, and says why
                raise JournalError(str(err)) from None

    def _claim(self, m: manifest.Manifest) -> Claim:
        return Claim("this journal", self.table_id, m.seq, m.hash, m.commits, m.round_no)

    def base(self, db: sqlite3.Connection, commits: int | None) -> manifest.Manifest:
        """The manifest as the last transaction left it, checked under the write lock (the caller's transaction,
        which read the row's `commits` there, None when there is no row): what `in_transaction` advances, and what
        says how many copies of each record are stored now."""
        if self.manifest is not None and commits == self.manifest.commits:
            return self.manifest
        return self._read_base(db)

    def read_base(self, db: sqlite3.Connection) -> manifest.Manifest:
        """`base`, reading the manifest's count itself."""
        return self._base(db)

    def _base(self, db: sqlite3.Connection) -> manifest.Manifest:
        # Checked again under the write lock, like the tail, so a second writer's transactions count too; the count
        # alone tells whether the row is still the one this journal wrote last (no JSON to read on every commit).
        row = db.execute("SELECT commits FROM manifest WHERE table_id = ?", (self.table_id,)).fetchone()
        return self.base(db, None if row is None else int(row[0]))

    def _read_base(self, db: sqlite3.Connection) -> manifest.Manifest:
        try:
            base = manifest.read(db, self.table_id)
        except manifest.ManifestError:
            base = None
        if base is not None:
            return base
        # Gone or damaged (found at open): what the file holds now, counting on from the anchor's count.
        rebuilt = manifest.rebuild(db, self.table_id)
        found = self.found
        if found is not None and found.claim is not None and found.claim.commits is not None:
            rebuilt = replace(rebuilt, commits=found.claim.commits)
        return rebuilt

    def in_transaction(
        self,
        db: sqlite3.Connection,
        base: manifest.Manifest,
        seq: int,
        hash_: str,
        records: Sequence[Record],
        events: Sequence[DomainEvent],
        ts: str,
    ) -> None:
        self.manifest = base.advance(seq, hash_, records, events)
        manifest.write(db, self.table_id, self.manifest, ts)

    def after_commit(self, ts: str, sync: bool = False) -> None:
        """The anchor file says where the journal is now: written after every commit, so a kill -9 (which loses no
        written page) leaves it exact; made durable right after the hand-off to the publisher (`durable`), or at
        once."""
        if self._sidecar is not None and self.manifest is not None:
            self._sidecar.write(self._claim(self.manifest), ts, sync)

    def durable(self) -> None:
        """The anchor file durable on disk: called by the writer thread right after a commit's events were handed to
        the publisher (before the next commit), and before the outbox is read, so every seq the floor can hold but the
        last commit's is anchored across a power loss too; a power loss loses at most that one anchor, of a commit
        SQLite itself keeps (synchronous=FULL): the file one behind (docs/journal.md, "The anchor")."""
        if self._sidecar is not None:
            self._sidecar.sync()

    def record_rollback(
        self, db: sqlite3.Connection, tail: tuple[int, str], claim: Claim | None, reason: str, ts: str
    ) -> manifest.Rollback:
        """Inside the caller's transaction: the rollback, and when `claim` is ahead of `tail` the seqs skipped."""
        seq, prev = tail
        upto, hash_ = (claim.seq, claim.hash) if claim is not None and claim.seq > seq else (seq, prev)
        rb = manifest.Rollback(seq, upto, hash_, reason, ts)
        manifest.record_rollback(db, self.table_id, rb)
        if rb.skipped:
            db.execute(
                "INSERT OR REPLACE INTO chain_head (table_id, seq, hash) VALUES (?, ?, ?)", (self.table_id, upto, hash_)
            )
        commits, round_no = (0, 0) if claim is None else (claim.commits or 0, claim.round_no)
        self.manifest = manifest.after_rollback(self._base(db), rb, commits, round_no)
        manifest.write(db, self.table_id, self.manifest, ts)
        self.rollbacks.append(rb)
        return rb

    def skipped_to(self, tail: tuple[int, str]) -> tuple[int, str]:
        """The tail to append after: the journal's last row, or the seq a rollback skipped to if that is later."""
        last = max(self.rollbacks, key=lambda r: r.upto_seq, default=None)
        return (last.upto_seq, last.hash) if last is not None and last.upto_seq > tail[0] else tail

    def hash_at(self, seq: int) -> str | None:
        """The chain hash at `seq`: its row's, or the anchor's a rollback skipped to; None when neither exists."""
        if seq == 0:
            return GENESIS
        row = self._db.execute(
            "SELECT hash FROM events WHERE table_id = ? AND seq = ?", (self.table_id, seq)
        ).fetchone()
        if row is not None:
            return str(row[0])
        # Rows archived since (possibly by `tablectl journal archive` beside this daemon): only the last one's hash
        # is recorded here; the others are in their segment file.
        archived = segments.head_of(self._db, self.table_id)
        if archived[0] == seq:
            return archived[1]
        skipped = [r.hash for r in self.rollbacks if r.upto_seq == seq and r.skipped]
        return skipped[-1] if skipped else None

    def archived(self, seq: int) -> bool:
        """Whether `seq` was sealed into an archive segment (an anchor of the broker's may name such a seq)."""
        return 0 < seq <= segments.head_of(self._db, self.table_id)[0]

    def last_stop(self, *types: str) -> tuple[int, str | None] | None:
        """(seq, its payload's `by`) when the table's last journaled event is of one of `types` (a stop on purpose),
        else None. Read in SQL, so a row damaged on disk cannot stop the start: its `by` reads as None (`journal verify`
        reports the row)."""
        row = self._db.execute(
            "SELECT seq, type IN (SELECT value FROM json_each(?)), "
            "CASE WHEN json_valid(payload) AND json_type(payload, '$.by') = 'text' "
            "THEN CAST(json_extract(payload, '$.by') AS BLOB) END "
            "FROM events WHERE table_id = ? ORDER BY seq DESC LIMIT 1",
            (json.dumps(types), self.table_id),
        ).fetchone()
        if row is None or not row[1]:
            return None
        try:
            by = bytes(row[2]).decode() if row[2] is not None else None
        except UnicodeDecodeError:
            by = None
        return int(row[0]), by

    def open_round(self) -> tuple[str, int] | None:
        """(round_id, wagers accepted) of the journal's last round when it was neither completed nor voided: what a
        supervisor settles by hand when the stored state that held it cannot be restored."""
        row = self._db.execute(
            "SELECT round_id, seq FROM events WHERE table_id = ? AND round_id IS NOT NULL ORDER BY seq DESC LIMIT 1",
            (self.table_id,),
        ).fetchone()
        if row is None:
            return None
        # round_id has no index: a round's events are within its last ROUND_SPAN rows, which the primary key finds.
        counts = dict(
            self._db.execute(
                "SELECT type, COUNT(*) FROM events WHERE table_id = ? AND seq > ? AND round_id = ? AND type IN "
                "('wager.accepted', 'round.completed', 'round.voided') GROUP BY type",
                (self.table_id, int(row[1]) - ROUND_SPAN, row[0]),
            ).fetchall()
        )
        if counts.get("round.completed") or counts.get("round.voided"):
            return None
        return str(row[0]), int(counts.get("wager.accepted", 0))

    def close(self, clean: bool = False) -> None:
        """`clean`: SQLite closed the journal cleanly; the anchor file says so (Claim.closed), durably, best effort."""
        if self._sidecar is not None:
            if clean and self.manifest is not None:
                with contextlib.suppress(AnchorError):  # the next start then checks the whole file, as after a crash
                    self._sidecar.mark_closed(self._claim(self.manifest), datetime.now(UTC).isoformat())
            self._sidecar.close()
