"""The durable journal: every domain event is committed here before any effect leaves the process.

The journal is also the MQTT outbox: a row stays unpublished until the broker has acknowledged it
(`mark_published`), so nothing journaled is lost to a broker outage or a crash. All methods are
synchronous and meant to be called from one thread (the daemon's event loop thread); each write is
one short fsync'd transaction.

Integrity (docs/journal.md): every row carries `hash` = sha256(previous row's hash || canonical encoding of
the row's immutable fields), genesis 64 zeros, one chain per table; `chain_head` holds the last (seq, hash)
written, in the same transaction as the row, so a removed tail shows as a head mismatch. The critical state
(the engine's TableState, later the progressive meters) lives beside the events in `critical_state` and is
written in the same transaction as the step's events, so a crash at any instant leaves both or neither.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import structlog

from controller.core.events import DomainEvent, JournaledEvent

log = structlog.get_logger(__name__)

# Bumped when the schema changes so an older daemon refuses a newer file instead of misreading it.
# 1: events (the outbox). 2: the hash chain (events.hash, chain_head) and critical_state.
SCHEMA_VERSION = 2
GENESIS = "0" * 64

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    table_id     TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    event_id     TEXT    NOT NULL UNIQUE,
    boot_id      TEXT    NOT NULL,
    ts           TEXT    NOT NULL,
    round_id     TEXT,
    type         TEXT    NOT NULL,
    rule         TEXT,
    payload      TEXT    NOT NULL,
    sealed       TEXT,
    published_at TEXT,
    replayed     INTEGER NOT NULL DEFAULT 0,
    hash         TEXT,
    PRIMARY KEY (table_id, seq)
);
-- Partial index: the outbox query stays cheap however long the journal grows.
CREATE INDEX IF NOT EXISTS events_outbox ON events (table_id, seq) WHERE published_at IS NULL;
"""

# Added by schema 2 (also on a migrated v1 file).
_SCHEMA_2 = """
-- The last row written per table, updated in the row's own transaction: deleting the tail leaves it behind.
CREATE TABLE IF NOT EXISTS chain_head (
    table_id TEXT    PRIMARY KEY,
    seq      INTEGER NOT NULL,
    hash     TEXT    NOT NULL
);
-- Critical state records ("engine": the TableState, later "meters"), each in one or more copies, written in
-- the same transaction as the events of the step that produced them. `seq` is the journal's last seq then.
CREATE TABLE IF NOT EXISTS critical_state (
    table_id   TEXT    NOT NULL,
    record     TEXT    NOT NULL,
    copy       INTEGER NOT NULL,
    body       BLOB    NOT NULL,
    sha256     TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    updated_at TEXT    NOT NULL,
    PRIMARY KEY (table_id, record, copy)
);
"""

_COLUMNS = "seq, event_id, boot_id, ts, table_id, round_id, type, rule, payload, sealed"


class JournalError(Exception):
    """A journal file that cannot be used as asked; the message names the file, the problem and the fix."""


def connect(path: Path | str) -> sqlite3.Connection:
    """Open a connection with the durability settings every connection to a critical file must have.

    `synchronous` is a per-connection setting (only `journal_mode=WAL` persists in the file), so it
    is set here, for every connection, rather than once when the file is created.
    """
    # isolation_level=None: we issue BEGIN IMMEDIATE/COMMIT ourselves so a batch is one transaction
    # and the write lock is taken up front (no upgrade deadlock with another writer).
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=10.0)
    try:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            # Some filesystems (network mounts) refuse WAL; silently running in another mode would
            # void the crash-safety argument, so refuse to start instead.
            raise RuntimeError(f"journal {path}: SQLite refused WAL mode (got {mode!r}); use a local disk")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
    except BaseException:
        conn.close()
        raise
    return conn


def connect_readonly(path: Path | str) -> tuple[sqlite3.Connection, int]:
    """Open an existing journal for reading only (the CLI; an examiner's copy); returns (connection, schema).

    Raises JournalError for a missing file, a file that is not SQLite or not a journal, or a newer schema.
    The daemon may be writing at the same time: WAL lets this connection read a consistent snapshot.
    """
    p = Path(path)
    if not p.exists():
        raise JournalError(
            f"no journal at {p}: check --journal, or the config's journal.path (the daemon creates "
            "the file the first time it runs)"
        )
    if not p.is_file():
        raise JournalError(f"{p} is not a file: give the journal's .sqlite file")
    try:
        conn = sqlite3.connect(f"file:{quote(str(p.resolve()))}?mode=ro", uri=True, isolation_level=None, timeout=10.0)
    except sqlite3.Error as err:
        raise JournalError(f"{p}: cannot open it ({err}); check the file's permissions") from None
    try:
        conn.execute("PRAGMA synchronous=FULL")
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except (sqlite3.DatabaseError, UnicodeDecodeError) as err:  # a damaged schema can carry undecodable text
        conn.close()
        raise JournalError(
            f"{p} is not a tablectl journal (SQLite says: {err}); give the table's journal "
            "file, e.g. ~/.local/state/tablectl/<table_id>.sqlite"
        ) from None
    if version > SCHEMA_VERSION:
        conn.close()
        raise JournalError(_newer(p, version))
    if "events" not in tables:
        conn.close()
        raise JournalError(
            f"{p} is an SQLite file but not a tablectl journal (it has no events table); give the table's journal file"
        )
    return conn, version


def _newer(path: Path, version: int) -> str:
    return (
        f"journal {path} has schema version {version}, newer than this software understands "
        f"({SCHEMA_VERSION}); upgrade tablectl rather than risk misreading it"
    )


def _to_json(value: Mapping[str, Any]) -> str:
    def default(obj: object) -> object:
        # Payloads are Mappings (often read-only proxies), which json only accepts as plain dicts.
        if isinstance(obj, Mapping):
            return dict(obj)
        raise TypeError(f"event payload value {obj!r} of type {type(obj).__name__} is not JSON-serialisable")

    return json.dumps(
        dict(value),
        default=default,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def _iso_utc(now: datetime) -> str:
    if now.tzinfo is None or now.utcoffset() is None:
        # A naive time would be stamped as if it were UTC and silently shift by the local offset.
        raise ValueError(f"journal timestamps need a timezone-aware datetime, got naive {now.isoformat()}")
    return now.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def row_hash(
    prev: str,
    seq: int,
    event_id: str,
    boot_id: str,
    ts: str,
    table_id: str,
    round_id: str | None,
    type_: str,
    rule: str | None,
    payload: str,
    sealed: str | None,
) -> str:
    """The chain link of one row: sha256 over the previous row's hash (32 bytes) and the canonical encoding of
    the row's immutable fields, a compact UTF-8 JSON array in this order (payload and sealed as stored, i.e.
    their own canonical JSON text). docs/journal.md gives the recipe for an independent checker."""
    enc = json.dumps(
        [seq, event_id, boot_id, ts, table_id, round_id, type_, rule, payload, sealed],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    try:
        prev_bytes = bytes.fromhex(prev)
    except (ValueError, TypeError):
        prev_bytes = str(prev).encode()  # a damaged stored hash: the link will not match, which is the finding
    # surrogateescape: text verify read from a damaged row (not UTF-8) hashes as the bytes stored, so it is a
    # finding, not an exception. Valid text encodes as plain UTF-8.
    return hashlib.sha256(prev_bytes + enc.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass(frozen=True, slots=True)
class Record:
    """A critical state record to store beside a step's events. `copies` > 1 keeps that many copies, each with
    its own checksum (e.g. the progressive meters in two copies), so one damaged copy is told from the other."""

    name: str
    body: bytes
    copies: int = 1


@dataclass(frozen=True, slots=True)
class StoredCopy:
    """One stored copy of a critical state record, as read back; `intact` when its sha256 matches its body."""

    record: str
    copy: int
    body: bytes
    sha256: str
    seq: int
    updated_at: str

    @property
    def intact(self) -> bool:
        return hashlib.sha256(self.body).hexdigest() == self.sha256


@dataclass(frozen=True, slots=True)
class Break:
    """Where the chain does not hold. what: "altered row", "missing seq", "head mismatch", "unchained" (a
    schema 1 file) or "unreadable"."""

    table_id: str
    seq: int | None
    what: str
    detail: str

    def __str__(self) -> str:
        at = f" at seq {self.seq}" if self.seq is not None else ""
        return f"{self.what}{at} (table {self.table_id}): {self.detail}"


@dataclass
class VerifyReport:
    """What `verify` found. `ok` only when every table's chain and head hold; never raised, always returned."""

    path: str
    rows_checked: int = 0
    tables: dict[str, int] = field(default_factory=dict)  # table_id -> last seq seen
    breaks: list[Break] = field(default_factory=list)  # the first MAX_BREAKS found, in seq order per table
    more_breaks: int = 0  # found beyond those listed

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
            "first_break": None if self.first_break is None else _break_dict(self.first_break),
            "breaks": [_break_dict(b) for b in self.breaks],
            "more_breaks": self.more_breaks,
        }


def _break_dict(b: Break) -> dict[str, Any]:
    return {"table_id": b.table_id, "seq": b.seq, "what": b.what, "detail": b.detail}


def verify_connection(
    conn: sqlite3.Connection, path: str, version: int = SCHEMA_VERSION, progress: Any = None
) -> VerifyReport:
    """Walk every table's chain in seq order. Never raises: a damaged or unreadable file is a finding.

    `progress(rows_done)` is called now and then for a long walk."""
    report = VerifyReport(path)
    factory = conn.text_factory
    # Damaged text must not stop the walk: decode what cannot be UTF-8 so that it hashes as the bytes stored.
    conn.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    try:
        if version < 2:
            n = int(conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])
            report.rows_checked = 0
            report.add(
                Break(
                    "*",
                    None,
                    "unchained",
                    f"schema version {version} has no hash chain ({n} rows); the "
                    "daemon adds it when it next opens the file",
                )
            )
            return report
        heads = {t: (int(s), h) for t, s, h in conn.execute("SELECT table_id, seq, hash FROM chain_head")}
        tables = [t for (t,) in conn.execute("SELECT DISTINCT table_id FROM events ORDER BY table_id")]
        for table_id in sorted(set(tables) | set(heads)):
            _verify_table(conn, table_id, heads.get(table_id), report, progress)
    except Exception as err:  # never raised: whatever the damage, it is a finding
        report.add(Break("*", None, "unreadable", f"{type(err).__name__} while reading: {err}"))
    finally:
        conn.text_factory = factory
    return report


def _verify_table(
    conn: sqlite3.Connection, table_id: str, head: tuple[int, str] | None, report: VerifyReport, progress: Any
) -> None:
    prev = GENESIS
    expected = 1
    last: tuple[int, str] | None = None
    cur = conn.execute(f"SELECT {_COLUMNS}, hash FROM events WHERE table_id = ? ORDER BY seq", (table_id,))
    for row in cur:
        seq, event_id, boot_id, ts, tid, round_id, type_, rule, payload, sealed, stored = row
        if seq != expected:
            report.add(
                Break(
                    table_id,
                    expected,
                    "missing seq",
                    f"seq {expected}"
                    + (f" to {seq - 1}" if seq - 1 > expected else "")
                    + f" absent (next row is seq {seq})",
                )
            )
        computed = row_hash(prev, seq, event_id, boot_id, ts, tid, round_id, type_, rule, payload, sealed)
        if stored != computed and seq == expected:
            report.add(
                Break(
                    table_id,
                    seq,
                    "altered row",
                    f"stored hash {str(stored)[:16]}... does not match the row's contents "
                    f"({computed[:16]}...): the row, or the one before it, was changed",
                )
            )
        # Carry on from the stored hash, so one altered row is reported once and the rows after it still checked.
        prev = stored if isinstance(stored, str) else computed
        expected = seq + 1
        last = (seq, prev)
        report.rows_checked += 1
        if progress is not None and report.rows_checked % 10_000 == 0:
            progress(report.rows_checked)
    report.tables[table_id] = last[0] if last else 0
    if head is None:
        if last is not None:
            report.add(
                Break(table_id, None, "head mismatch", f"no chain head recorded, yet rows up to seq {last[0]} exist")
            )
    elif last is None:
        report.add(
            Break(
                table_id,
                head[0],
                "head mismatch",
                f"the head says seq {head[0]} but the table has no rows: every row was removed",
            )
        )
    elif head[0] != last[0]:
        what = (
            "rows after it were removed (the tail was truncated)"
            if head[0] > last[0]
            else "rows were added without updating the head"
        )
        report.add(
            Break(
                table_id,
                last[0],
                "head mismatch",
                f"the head says seq {head[0]}, the last row is seq {last[0]}: {what}",
            )
        )
    elif head[1] != last[1]:
        report.add(
            Break(
                table_id,
                last[0],
                "head mismatch",
                "the head's hash differs from the last row's: the last row was replaced",
            )
        )


def _row_dict(r: Sequence[Any], with_sealed: bool) -> dict[str, Any]:
    seq, event_id, boot_id, ts, table_id, round_id, type_, rule, payload, sealed, hash_, published_at, replayed = r
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

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> JournalReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _select(self) -> str:
        hash_col = "hash" if self.version >= 2 else "NULL"
        return f"SELECT rowid, {_COLUMNS}, {hash_col}, published_at, replayed FROM events"

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

    def verify(self, progress: Any = None) -> VerifyReport:
        return verify_connection(self._conn, str(self.path), self.version, progress)


class Journal:
    """Append-only, gap-free, hash-chained per-table event journal in SQLite, doubling as the MQTT outbox and
    holding the critical state."""

    def __init__(self, path: Path | str, table_id: str, boot_id: str) -> None:
        self.path = Path(path)
        self.table_id = table_id
        self.boot_id = boot_id
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn: sqlite3.Connection | None = connect(self.path)
        except sqlite3.DatabaseError as err:
            raise JournalError(
                f"{self.path} is not a tablectl journal (SQLite says: {err}); move it aside or "
                "point journal.path at another file"
            ) from None
        self._init_schema()
        self._last_seq, self._last_hash = self._tail()
        # A head that disagrees with the last row (rows removed, or written by other means): found at open so
        # that the service can stop play and say so before appending over the evidence.
        self.head_problem: str | None = self._check_head()
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

    def _init_schema(self) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise JournalError(_newer(self.path, version))
            for statement in (_SCHEMA + _SCHEMA_2).split(";"):
                if statement.strip():
                    db.execute(statement)
            if version == 1:
                self._migrate_1_to_2(db)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _migrate_1_to_2(self, db: sqlite3.Connection) -> None:
        """Chain a v1 file in place, every table in seq order, inside the caller's transaction: a crash midway
        leaves the v1 file as it was."""
        columns = {r[1] for r in db.execute("PRAGMA table_info(events)")}
        if "hash" not in columns:
            db.execute("ALTER TABLE events ADD COLUMN hash TEXT")
        tables = [t for (t,) in db.execute("SELECT DISTINCT table_id FROM events")]
        total = 0
        for table_id in tables:
            prev, seq = GENESIS, 0
            rows = db.execute(f"SELECT {_COLUMNS} FROM events WHERE table_id = ? ORDER BY seq", (table_id,)).fetchall()
            updates = []
            for r in rows:
                prev = row_hash(prev, *r)
                seq = int(r[0])
                updates.append((prev, table_id, seq))
            db.executemany("UPDATE events SET hash = ? WHERE table_id = ? AND seq = ?", updates)
            db.execute(
                "INSERT OR REPLACE INTO chain_head (table_id, seq, hash) VALUES (?, ?, ?)", (table_id, seq, prev)
            )
            total += len(rows)
        log.info("journal migrated to schema 2: hash chain added", path=str(self.path), rows=total, tables=len(tables))

    def _tail(self) -> tuple[int, str]:
        row = self._db.execute(
            "SELECT seq, hash FROM events WHERE table_id = ? ORDER BY seq DESC LIMIT 1", (self.table_id,)
        ).fetchone()
        return (0, GENESIS) if row is None else (int(row[0]), str(row[1]))

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

    @property
    def last_seq(self) -> int:
        return self._last_seq

    def append(
        self, events: Sequence[DomainEvent], now: datetime, records: Sequence[Record] = ()
    ) -> list[JournaledEvent]:
        """Commit `events` (and the critical state `records`) as one transaction: all of them get consecutive
        seqs, or none is stored."""
        if not events and not records:
            return []
        ts = _iso_utc(now)
        # Serialise before touching the database so a bad payload cannot leave a half-built batch.
        rows = [
            (ev, _to_json(ev.payload), None if ev.sealed is None else _to_json(ev.sealed), uuid.uuid4().hex)
            for ev in events
        ]
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            # Re-read under the write lock instead of trusting the cached values, so a second writer on the same
            # file (a mistake, but possible) fails on the primary key or chains on, rather than leaving a gap.
            row = db.execute(
                "SELECT seq, hash FROM events WHERE table_id = ? ORDER BY seq DESC LIMIT 1", (self.table_id,)
            ).fetchone()
            seq, prev = (0, GENESIS) if row is None else (int(row[0]), str(row[1]))
            out: list[JournaledEvent] = []
            for ev, payload, sealed, event_id in rows:
                seq += 1
                prev = row_hash(
                    prev, seq, event_id, self.boot_id, ts, self.table_id, ev.round_id, ev.type, ev.rule, payload, sealed
                )
                db.execute(
                    f"INSERT INTO events ({_COLUMNS}, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        seq,
                        event_id,
                        self.boot_id,
                        ts,
                        self.table_id,
                        ev.round_id,
                        ev.type,
                        ev.rule,
                        payload,
                        sealed,
                        prev,
                    ),
                )
                out.append(
                    JournaledEvent(
                        seq=seq,
                        event_id=event_id,
                        boot_id=self.boot_id,
                        ts=ts,
                        table_id=self.table_id,
                        round_id=ev.round_id,
                        type=ev.type,
                        rule=ev.rule,
                        payload=json.loads(payload),
                        sealed=None if sealed is None else json.loads(sealed),
                    )
                )
            if rows:
                db.execute(
                    "INSERT OR REPLACE INTO chain_head (table_id, seq, hash) VALUES (?, ?, ?)",
                    (self.table_id, seq, prev),
                )
            for rec in records:
                self._put(db, rec, seq, ts)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._last_seq, self._last_hash = seq, prev
        return out

    def _put(self, db: sqlite3.Connection, rec: Record, seq: int, ts: str) -> None:
        if rec.copies < 1:
            raise ValueError(f"critical state record {rec.name!r}: copies must be 1 or more, got {rec.copies}")
        digest = hashlib.sha256(rec.body).hexdigest()
        db.executemany(
            "INSERT OR REPLACE INTO critical_state (table_id, record, copy, body, sha256, seq, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(self.table_id, rec.name, c, rec.body, digest, seq, ts) for c in range(rec.copies)],
        )
        # Fewer copies than before: the surplus ones would be stale.
        db.execute(
            "DELETE FROM critical_state WHERE table_id = ? AND record = ? AND copy >= ?",
            (self.table_id, rec.name, rec.copies),
        )

    def save(self, records: Sequence[Record], now: datetime) -> None:
        """Store critical state records alone (a step that changed the state but emitted no event)."""
        self.append((), now, records)

    def load(self, name: str) -> list[StoredCopy]:
        """Every stored copy of a critical state record, copy 0 first (empty if never stored)."""
        cur = self._db.execute(
            "SELECT record, copy, body, sha256, seq, updated_at FROM critical_state WHERE table_id = ? AND record = ? "
            "ORDER BY copy",
            (self.table_id, name),
        )
        return [
            StoredCopy(
                r, int(c), bytes(b) if isinstance(b, bytes | memoryview) else str(b).encode(), str(h), int(s), str(u)
            )
            for r, c, b, h, s, u in cur
        ]

    def last_round_no(self) -> int:
        """The highest `round_no` any journaled event's payload carries (0 if none): the last round
        started, so numbering continues across restarts (used by the service at start-up)."""
        row = self._db.execute(
            "SELECT MAX(CAST(json_extract(payload, '$.round_no') AS INTEGER)) FROM events WHERE table_id = ?",
            (self.table_id,),
        ).fetchone()
        return int(row[0] or 0)

    def unpublished(self, limit: int = 200, after_seq: int = 0) -> list[JournaledEvent]:
        """The outbox: events not yet marked published, oldest first; `after_seq` skips those the publisher knows
        are acknowledged but has not marked yet."""
        cur = self._db.execute(
            f"SELECT {_COLUMNS} FROM events WHERE table_id = ? AND published_at IS NULL AND seq > ? "
            "ORDER BY seq LIMIT ?",
            (self.table_id, after_seq, limit),
        )
        return [self._row(r) for r in cur]

    def mark_published(self, seqs: Sequence[int], replayed: bool) -> None:
        if not seqs:
            return
        stamp = _iso_utc(datetime.now(UTC))
        db = self._db
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
            db.execute("ROLLBACK")
            raise

    def events(self, after_seq: int = 0, limit: int | None = None) -> list[JournaledEvent]:
        cur = self._db.execute(
            f"SELECT {_COLUMNS} FROM events WHERE table_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (self.table_id, after_seq, -1 if limit is None else limit),
        )
        return [self._row(r) for r in cur]

    def verify(self, progress: Any = None) -> VerifyReport:
        """Walk the whole file's chains (every table in it); never raises on a damaged file."""
        return verify_connection(self._db, str(self.path), SCHEMA_VERSION, progress)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _row(r: tuple[Any, ...]) -> JournaledEvent:
        seq, event_id, boot_id, ts, table_id, round_id, type_, rule, payload, sealed = r
        return JournaledEvent(
            seq=seq,
            event_id=event_id,
            boot_id=boot_id,
            ts=ts,
            table_id=table_id,
            round_id=round_id,
            type=type_,
            rule=rule,
            payload=json.loads(payload),
            sealed=None if sealed is None else json.loads(sealed),
        )
