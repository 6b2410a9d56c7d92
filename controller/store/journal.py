"""The durable journal: every domain event is committed here before any effect leaves the process.

The journal is also the MQTT outbox: a row stays unpublished until the broker has acknowledged it
(`mark_published`), so nothing journaled is lost to a broker outage or a crash. All methods are
synchronous; each write is one short fsync'd transaction. The daemon commits its steps on a writer thread
(controller/shell/writer.py) while the publisher's thread reads the outbox (controller/mqtt/offloop.py), so every
method that touches the connection holds the journal's lock (`serialised()`): one thread at a time, one transaction.

Integrity (docs/journal.md): every row is linked into its table's hash chain (controller.store.chain);
`chain_head` holds the last (seq, hash) written, in the same transaction as the row, so a removed tail shows
as a head mismatch. The critical state (the engine's TableState, the progressive meters; controller.store.records)
lives beside the events in `critical_state` and is written in the same transaction as the step's events, so a
crash at any instant leaves both or neither. The file's schema and connections are controller.store.schema;
reading without writing is controller.store.reader.

What must exist (controller.store.manifest) is rewritten in each transaction, and after each commit the anchor file
(controller.store.anchor) says where the journal has got to, so that a journal that went back in time, or lost a
record, is found at start (controller.store.integrity) instead of being taken for a new table.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

import structlog

from controller.core.events import DomainEvent, JournaledEvent
from controller.store import hung_disk, wal
from controller.store import statements as sql
from controller.store.anchor import Claim
from controller.store.chain import GENESIS, row_hash
from controller.store.critical import CriticalBook
from controller.store.failure import open_journal_file, storage_error
from controller.store.manifest import Entry, Manifest, Rollback
from controller.store.outbox import DamagedRow, OutboxItem, read_outbox
from controller.store.records import Record, StoredCopy
from controller.store.rows import Fields, SerialisedEvent, event_id, iso_utc, journaled_event, rollback_open, to_json
from controller.store.schema import COLUMNS, SCHEMA_VERSION, JournalError

if TYPE_CHECKING:
    from controller.store.walk import Progress, VerifyReport

log = structlog.get_logger(__name__)

# The last rows of this many recent commits keep their chain hash in memory (Journal.hash_at).
RECENT_HASHES = 64

# SQLite checkpoints inside the COMMIT that takes the WAL past 1,000 pages (about one commit in 130): 0.6-2.5 ms more
# before that commit's events may leave. With checkpoint(defer=True) only past this many, a bound for a busy writer.
DEFERRED_CHECKPOINT_PAGES = 4000

P = ParamSpec("P")
R = TypeVar("R")


def _serialised(method: Callable[Concatenate[Journal, P], R]) -> Callable[Concatenate[Journal, P], R]:
    """Hold the journal's lock for the call: the writer thread and the publisher's share one connection."""

    @functools.wraps(method)
    def locked(self: Journal, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            return method(self, *args, **kwargs)

    return locked


class Journal:
    """Append-only, gap-free, hash-chained per-table event journal in SQLite, doubling as the MQTT outbox and
    holding the critical state."""

    def __init__(self, path: Path | str, table_id: str, boot_id: str, *, anchored: bool = True) -> None:
        """`anchored=False` keeps no anchor file: for a second table in a file another table anchors (tools, tests);
        a table's daemon always anchors its journal."""
        self.path = Path(path)
        self.table_id = table_id
        self.boot_id = boot_id
        self._lock = threading.RLock()
        # A missing or read-only directory, a file that is not a journal: each refused with its own message.
        self._conn: sqlite3.Connection | None = open_journal_file(self.path)
        try:
            self.critical = CriticalBook(self._conn, self.path, table_id, anchored)
        except JournalError:
            self._conn.close()
            raise
        self._last_seq, self._last_hash = self._tail(self._conn)
        # seq -> chain hash of the rows committed last (RECENT_HASHES at most): the publisher names its retained anchor
        # from here without the journal's lock, which the writer thread holds while it syncs the anchor file after
        # handing the same events on (controller/shell/writer.py). Written by the committing thread only; a dict's
        # single get and set are atomic under the GIL. `_outbox_hashes`: the same for the rows the last outbox read
        # returned (a replay's, older), replaced whole by the thread that read them.
        self._recent: dict[int, str] = {}
        self._outbox_hashes: dict[int, str] = {}
        # A head that disagrees with the last row (rows removed, or written by other means): found at open so
        # that the service can stop play and say so before appending over the evidence.
        self.head_problem: str | None = self._check_head()
        try:
            self.critical.anchor_new((self._last_seq, self._last_hash), iso_utc(datetime.now(UTC)))
        except JournalError:
            self.close()
            raise
        log.info(
            "journal opened",
            path=str(self.path),
            table_id=table_id,
            last_seq=self._last_seq,
            head_problem=self.head_problem,
        )

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"journal {self.path} is closed")
        return self._conn

    def _tail(self, db: sqlite3.Connection) -> tuple[int, str]:
        row = db.execute(
            "SELECT seq, hash FROM events WHERE table_id = ? ORDER BY seq DESC LIMIT 1", (self.table_id,)
        ).fetchone()
        tail = (0, GENESIS) if row is None else (int(row[0]), str(row[1]))
        # Seqs skipped after a rollback (controller.store.manifest): the next row goes after them.
        return self.critical.skipped_to(tail)

    def _check_head(self) -> str | None:
        head = self._db.execute("SELECT seq, hash FROM chain_head WHERE table_id = ?", (self.table_id,)).fetchone()
        seq, hash_ = self._last_seq, self._last_hash
        if head is None:
            return None if seq == 0 else f"the journal has rows up to seq {seq} but no chain head"
        if int(head[0]) != seq:
            return f"the journal's chain head says seq {head[0]} but its last row is seq {seq}: " + (
                "rows were removed from its end" if int(head[0]) > seq else "rows were added outside tablectl"
            )
        if head[1] != hash_:
            return f"the journal's chain head hash differs from its last row (seq {seq}): that row was replaced"
        return None

    @contextlib.contextmanager
    def serialised(self) -> Iterator[None]:
        """Hold the journal's lock across several calls (the writer records a commit's result before anyone else
        may append after it)."""
        with self._lock:
            yield

    @property
    def last_seq(self) -> int:
        return self._last_seq

    @_serialised
    def append(
        self, events: Sequence[DomainEvent], now: datetime, records: Sequence[Record] = ()
    ) -> list[JournaledEvent]:
        """Commit `events` (and the critical state `records`) as one transaction: all of them get consecutive
        seqs, or none is stored."""
        if not events and not records:
            return []
        ts = iso_utc(now)
        # Serialise before touching the database so a bad payload cannot leave a half-built batch.
        rows = [
            SerialisedEvent(ev, to_json(ev.payload), None if ev.sealed is None else to_json(ev.sealed), event_id())
            for ev in events
        ]
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                hung_disk.wait()  # tests only: a disk that hangs here (controller/store/hung_disk.py)
                # The tail and the manifest's count re-read under the write lock, in one statement (below).
                last = db.execute(sql.TAIL_AND_COMMITS, (self.table_id,)).fetchone()
                if last is None:
                    tail, base = (0, GENESIS), self.critical.read_base(db)
                else:
                    tail = (int(last[0]), str(last[1]))
                    base = self.critical.base(db, None if last[2] is None else int(last[2]))
                seq, prev, out = self._insert(db, rows, ts, records, base, self.critical.skipped_to(tail))
                # What must exist (controller.store.critical), in the same transaction as what it describes.
                self.critical.in_transaction(db, base, seq, prev, records, events, ts)
                db.execute("COMMIT")
            except BaseException:
                rollback_open(db)
                raise
        except sqlite3.IntegrityError:
            raise  # a second writer on the file, or a bug: not the disk's fault
        except sqlite3.DatabaseError as err:
            # Disk full, an I/O error, a disk gone read-only: nothing of this batch was committed, everything before
            # it was. One line that says so, instead of SQLite's words alone.
            raise storage_error(err, self.path, f"committing {len(rows)} event(s)") from err
        self._last_seq, self._last_hash = seq, prev
        self._remember(out, prev)
        try:
            self.critical.after_commit(ts)
        except OSError as err:  # the batch is committed, but a table whose anchor cannot be written stops (item 3)
            raise storage_error(err, self.path, "writing the anchor file after a commit") from err
        return out

    def _remember(self, rows: Sequence[JournaledEvent], last_hash: str) -> None:
        if not rows:
            return
        recent = self._recent
        recent[rows[-1].seq] = last_hash
        if len(recent) > RECENT_HASHES:
            for seq in sorted(recent)[: len(recent) - RECENT_HASHES // 2]:
                del recent[seq]

    def _insert(
        self,
        db: sqlite3.Connection,
        rows: Sequence[SerialisedEvent],
        ts: str,
        records: Sequence[Record],
        base: Manifest,
        tail: tuple[int, str],
    ) -> tuple[int, str, list[JournaledEvent]]:
        # `tail` was re-read under the write lock instead of trusting the cached values, so a second writer on the
        # same file (a mistake, but possible) fails on the primary key or chains on, rather than leaving a gap.
        seq, prev = tail
        out: list[JournaledEvent] = []
        values: list[object] = []
        for row in rows:
            seq += 1
            fields = self._fields(row, seq, ts)
            prev = row_hash(prev, *fields)
            values += fields
            values.append(prev)
            out.append(journaled_event(fields))
        for at in range(0, len(rows), sql.ROWS_PER_INSERT):
            n = min(sql.ROWS_PER_INSERT, len(rows) - at)
            db.execute(sql.insert_rows(n), values[at * sql.ROW_PARAMS : (at + n) * sql.ROW_PARAMS])
        if rows:
            db.execute(sql.HEAD_UPSERT, (self.table_id, seq, prev))
        stored = dict(base.records)  # as each record is written, so a record named twice in one commit counts right
        for rec in records:
            self._put(db, rec, seq, ts, stored.get(rec.name))
            stored[rec.name] = Entry(rec.copies, rec.sha256, seq)
        return seq, prev, out

    def _fields(self, r: SerialisedEvent, seq: int, ts: str) -> Fields:
        ev = r.event
        return (seq, r.event_id, self.boot_id, ts, self.table_id, ev.round_id, ev.type, ev.rule, r.payload, r.sealed)

    def _put(self, db: sqlite3.Connection, rec: Record, seq: int, ts: str, stored: Entry | None) -> None:
        if rec.copies < 1:
            raise ValueError(f"critical state record {rec.name!r}: copies must be 1 or more, got {rec.copies}")
        rows = [(self.table_id, rec.name, c, rec.body, rec.sha256, seq, ts) for c in range(rec.copies)]
        db.executemany(sql.RECORD_UPSERT, rows)
        # Fewer copies than before: the surplus ones would be stale. The manifest, checked under this write lock,
        # says how many are stored (a rebuilt one counts them in the file); a record it does not name may have any.
        if stored is None or stored.copies > rec.copies:
            db.execute(
                "DELETE FROM critical_state WHERE table_id = ? AND record = ? AND copy >= ?",
                (self.table_id, rec.name, rec.copies),
            )

    # -- what must exist, and the anchor (controller.store.critical) ------------------------------------------------

    @property
    def last_hash(self) -> str:
        return self._last_hash

    def hash_at(self, seq: int) -> str | None:
        """The chain hash at `seq` (its row's, or the anchor's a rollback skipped to); None when neither exists. A
        recent commit's last row, or one the last outbox read returned, is answered without waiting for the lock."""
        known = self._recent.get(seq) or self._outbox_hashes.get(seq)
        if known is not None:
            return known
        with self._lock:
            return self.critical.hash_at(seq)

    @_serialised
    def resume_after(self, claim: Claim | None, reason: str, now: datetime) -> Rollback:
        """Record a rollback found at start, in a transaction of its own: when `claim` is ahead of the journal, the
        next row goes after it (seq claim.seq + 1, chained from claim.hash), so no seq the anchor knows is used
        again for another event (controller.store.manifest); with no claim ahead, nothing is skipped."""
        ts = iso_utc(now)
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            rb = self.critical.record_rollback(db, self._tail(db), claim, reason, ts)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._last_seq, self._last_hash = rb.upto_seq, rb.hash
        log.warning("journal rollback recorded", path=str(self.path), after_seq=rb.after_seq, upto_seq=rb.upto_seq)
        self.critical.after_commit(ts, sync=True)
        return rb

    def save(self, records: Sequence[Record], now: datetime) -> None:
        """Store critical state records alone (a step that changed the state but emitted no event)."""
        self.append((), now, records)

    @_serialised
    def load(self, name: str) -> list[StoredCopy]:
        """Every stored copy of a critical state record, copy 0 first (empty if never stored)."""
        cur = self._db.execute(
            "SELECT record, copy, body, sha256, seq, updated_at FROM critical_state WHERE table_id = ? AND record = ? "
            "ORDER BY copy",
            (self.table_id, name),
        )
        return [StoredCopy.of(row) for row in cur]

    @_serialised
    def last_round_no(self) -> int:
        """The highest `round_no` any journaled event's payload carries (0 if none): the last round
        started, so numbering continues across restarts (used by the service at start-up)."""
        row = self._db.execute(
            "SELECT MAX(CAST(json_extract(payload, '$.round_no') AS INTEGER)) FROM events WHERE table_id = ?",
            (self.table_id,),
        ).fetchone()
        return int(row[0] or 0)

    @_serialised
    def checkpoint(self, defer: bool = False, idle: Callable[[], bool] = lambda: True) -> None:
        """A PASSIVE checkpoint (it waits for no reader; crash-safe, changes nothing the journal holds), or with
        `defer` none now and, from now on, the commits' own only past DEFERRED_CHECKPOINT_PAGES: the writer thread
        checkpoints between commits instead (controller/shell/writer.py)."""
        try:  # with the WAL's restart, not left to the next commit (controller.store.wal)
            wal.checkpoint(self._db, DEFERRED_CHECKPOINT_PAGES if defer else None, idle)
        except sqlite3.DatabaseError as err:
            raise storage_error(err, self.path, "checkpointing the journal's WAL") from err

    @_serialised
    def make_durable(self) -> None:
        """The anchor file durable now (CriticalBook.durable): the writer thread's, after each commit."""
        self.critical.durable()

    @_serialised
    def outbox(self, limit: int = 200, after_seq: int = 0) -> list[OutboxItem]:
        """The outbox row by row: each unpublished row after `after_seq` as its event, or as a DamagedRow when it
        cannot be published as journaled (controller.store.outbox)."""
        self.critical.durable()  # nothing leaves the process that the anchor file does not hold across a power loss
        hashes: dict[int, str] = {}
        try:
            rows = read_outbox(self._db, self.table_id, after_seq, limit, hashes)
        except sqlite3.DatabaseError as err:
            raise storage_error(err, self.path, "reading the outbox") from err
        self._outbox_hashes = hashes
        return rows

    def unpublished(self, limit: int = 200, after_seq: int = 0) -> list[JournaledEvent]:
        """The outbox's events, oldest first, damaged rows left out (tests, tools; the publisher reads `outbox`)."""
        return [e for e in self.outbox(limit, after_seq) if not isinstance(e, DamagedRow)]

    @_serialised
    def mark_published(self, seqs: Sequence[int], replayed: bool) -> None:
        """Mark rows published: acknowledged by the broker, or a damaged row whose quarantine was journaled (its
        `journal.row_quarantined` event says so; the row itself never went out)."""
        if not seqs:
            return
        stamp = iso_utc(datetime.now(UTC))
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                # `published_at IS NULL` keeps the first publication's time if a duplicate is ever marked.
                db.executemany(
                    "UPDATE events SET published_at = ?, replayed = ? "
                    "WHERE table_id = ? AND seq = ? AND published_at IS NULL",
                    [(stamp, int(replayed), self.table_id, s) for s in seqs],
                )
                db.execute("COMMIT")
            except BaseException:
                rollback_open(db)
                raise
        except sqlite3.DatabaseError as err:
            raise storage_error(err, self.path, f"marking {len(seqs)} event(s) published") from err

    @_serialised
    def events(self, after_seq: int = 0, limit: int | None = None) -> list[JournaledEvent]:
        cur = self._db.execute(
            f"SELECT {COLUMNS} FROM events WHERE table_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (self.table_id, after_seq, -1 if limit is None else limit),
        )
        return [journaled_event(r) for r in cur]

    @_serialised
    def verify(self, progress: Progress | None = None) -> VerifyReport:
        """Walk the whole file's chains (every table in it); never raises on a damaged file."""
        from controller.store.verify import verify_connection  # here: a table's start never walks them (issue 19)

        return verify_connection(self._db, str(self.path), SCHEMA_VERSION, progress)

    @_serialised
    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()  # the last connection: SQLite checkpoints and removes the -wal (controller.store.damage)
        self.critical.close(clean=conn is not None and not Path(f"{self.path}-wal").exists())

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
