"""The durable journal: every domain event is committed here before any effect leaves the process.

The journal is also the MQTT outbox: a row stays unpublished until the broker has acknowledged it
(`mark_published`), so nothing journaled is lost to a broker outage or a crash. All methods are
synchronous and meant to be called from one thread (the daemon's event loop thread); each write is
one short fsync'd transaction.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from controller.events import DomainEvent, JournaledEvent

log = structlog.get_logger(__name__)

# Bumped when the schema changes so an older daemon refuses a newer file instead of misreading it.
SCHEMA_VERSION = 1

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
    PRIMARY KEY (table_id, seq)
);
-- Partial index: the outbox query stays cheap however long the journal grows.
CREATE INDEX IF NOT EXISTS events_outbox ON events (table_id, seq) WHERE published_at IS NULL;
"""

_COLUMNS = "seq, event_id, boot_id, ts, table_id, round_id, type, rule, payload, sealed"


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


class Journal:
    """Append-only, gap-free per-table event journal in SQLite, doubling as the MQTT outbox."""

    def __init__(self, path: Path | str, table_id: str, boot_id: str) -> None:
        self.path = Path(path)
        self.table_id = table_id
        self.boot_id = boot_id
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn: sqlite3.Connection | None = connect(self.path)
        self._init_schema()
        row = self._db.execute("SELECT MAX(seq) FROM events WHERE table_id = ?", (table_id,)).fetchone()
        self._last_seq: int = int(row[0] or 0)
        log.info("journal opened", path=str(self.path), table_id=table_id, last_seq=self._last_seq)

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
                raise RuntimeError(
                    f"journal {self.path} has schema version {version}, newer than this software "
                    f"understands ({SCHEMA_VERSION}); upgrade tablectl rather than risk misreading it"
                )
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    @property
    def last_seq(self) -> int:
        return self._last_seq

    def append(self, events: Sequence[DomainEvent], now: datetime) -> list[JournaledEvent]:
        """Commit `events` as one transaction: all of them get consecutive seqs, or none is stored."""
        if not events:
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
            # Re-read under the write lock instead of trusting the cached value, so a second writer on
            # the same file (a mistake, but possible) fails on the primary key rather than leaving a gap.
            row = db.execute("SELECT MAX(seq) FROM events WHERE table_id = ?", (self.table_id,)).fetchone()
            seq = int(row[0] or 0)
            out: list[JournaledEvent] = []
            for ev, payload, sealed, event_id in rows:
                seq += 1
                db.execute(
                    f"INSERT INTO events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._last_seq = seq
        return out

    def last_round_no(self) -> int:
        """The highest `round_no` any journaled event's payload carries (0 if none): the last round
        started, so numbering continues across restarts (used by the service at start-up)."""
        row = self._db.execute(
            "SELECT MAX(CAST(json_extract(payload, '$.round_no') AS INTEGER)) FROM events WHERE table_id = ?",
            (self.table_id,),
        ).fetchone()
        return int(row[0] or 0)

    def unpublished(self, limit: int = 200) -> list[JournaledEvent]:
        """The outbox: events not yet acknowledged by the broker, oldest first."""
        cur = self._db.execute(
            f"SELECT {_COLUMNS} FROM events WHERE table_id = ? AND published_at IS NULL ORDER BY seq LIMIT ?",
            (self.table_id, limit),
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
