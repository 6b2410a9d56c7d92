"""The journal's SQLite file: its schema and version, the connections every reader and writer opens, and the
migration of an older file.

Every connection to a critical file is opened here, with the durability settings it must have (WAL,
`synchronous=FULL`): the journal writer, the read-only reader of the CLI and examiners, and the supervisor
commands' replay store, which keeps its own table in the same file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

import structlog

from controller.store.chain import GENESIS, row_hash
from controller.store.damage import damaged, was_journal
from controller.store.manifest import migrate_to_manifest

log = structlog.get_logger(__name__)

# Bumped when the schema changes so an older daemon refuses a newer file instead of misreading it.
# 1: events (the outbox). 2: the hash chain (events.hash, chain_head) and critical_state. 3: the manifest of what
# must exist, and the rollbacks found at start (controller.store.manifest). 4: the archive segments sealed out of
# the file (controller.store.archive): an older daemon would take their rows for missing.
SCHEMA_VERSION = 4

# The rows and the rollbacks as the journal holds them; an archive segment holds them the same way
# (controller.store.archive).
EVENTS_TABLE = """
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
"""
ROLLBACKS_TABLE = """
CREATE TABLE IF NOT EXISTS rollbacks (
    table_id    TEXT    NOT NULL,
    after_seq   INTEGER NOT NULL,
    upto_seq    INTEGER NOT NULL,
    hash        TEXT    NOT NULL,
    reason      TEXT    NOT NULL,
    recorded_at TEXT    NOT NULL,
    PRIMARY KEY (table_id, recorded_at, upto_seq)
);
"""

_SCHEMA = (
    EVENTS_TABLE
    + """
-- Partial index: the outbox query stays cheap however long the journal grows.
CREATE INDEX IF NOT EXISTS events_outbox ON events (table_id, seq) WHERE published_at IS NULL;
"""
)

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

# Added by schema 3 (docs/journal.md, "What must exist").
_SCHEMA_3 = (
    """
-- Per table, what the journal must hold, rewritten in every transaction that writes to it: the last seq and its
-- hash, how many transactions were committed, the highest round number, and each critical state record with its
-- copies, sha256 and seq. A record, a copy or the tail that disappears is then missing from something that says
-- it exists, and the manifest itself missing while rows exist is found the same way.
CREATE TABLE IF NOT EXISTS manifest (
    table_id   TEXT    PRIMARY KEY,
    seq        INTEGER NOT NULL,
    hash       TEXT    NOT NULL,
    commits    INTEGER NOT NULL,
    round_no   INTEGER NOT NULL,
    records    TEXT    NOT NULL,
    updated_at TEXT    NOT NULL
);
-- A journal found behind its anchor at start (committed events lost): recorded at once, in its own transaction.
-- Seqs after_seq+1 .. upto_seq were committed (and maybe published) but are not in this file: the next row is
-- upto_seq + 1, chained from `hash`, so no seq is used twice. upto_seq = after_seq when none was skipped.
"""
    + ROLLBACKS_TABLE
)

# Added by schema 4 (docs/journal.md, "Archiving"): each segment of rows sealed into its own file and removed from
# this one, so that the chain is verified from `head_hash` on without the segments (controller.store.archive).
_SCHEMA_4 = """
CREATE TABLE IF NOT EXISTS archives (
    table_id    TEXT    NOT NULL,
    segment     TEXT    NOT NULL,
    first_seq   INTEGER NOT NULL,
    last_seq    INTEGER NOT NULL,
    prev_seq    INTEGER NOT NULL,
    prev_hash   TEXT    NOT NULL,
    head_hash   TEXT    NOT NULL,
    rows        INTEGER NOT NULL,
    sha256      TEXT    NOT NULL,
    archived_at TEXT    NOT NULL,
    PRIMARY KEY (table_id, last_seq)
);
"""

# The immutable fields of an events row, in the order row_hash links them.
COLUMNS = "seq, event_id, boot_id, ts, table_id, round_id, type, rule, payload, sealed"


class JournalError(Exception):
    """A journal file that cannot be used as asked; the message names the file, the problem and the fix."""


class JournalRefused(Exception):
    """The journal a table was to run on cannot be used (another run holds it, or JournalError): the message is the
    one line to show, and `tablectl` exits 2. An Exception, not SystemExit: it is raised in the event loop's task, and
    a SystemExit there leaves the loop at once while the task keeps it unretrieved, which asyncio then logs with its
    traceback when the task is collected (after the message on the operator's stderr, or in a later test)."""


# SQLite's page cache per connection, in KiB (its default is 2,000). A journal is appended to and read near its end
# (the outbox, the last snapshot), so a few pages at the right edge of each b-tree are what is touched again; the rest
# is the kernel's page cache, shared and reclaimable, instead of the daemon's resident memory growing as the file does
# (issue 19: 256 KiB held the daemon 0.1-0.3 MB higher while playing; bench/step_commit.py's commits were no faster).
CACHE_KIB = 64


def connect(path: Path | str) -> sqlite3.Connection:
    """Open a connection with the durability settings every connection to a critical file must have.

    `synchronous` is a per-connection setting (only `journal_mode=WAL` persists in the file), so it
    is set here, for every connection, rather than once when the file is created.
    """
    # isolation_level=None: we issue BEGIN IMMEDIATE/COMMIT ourselves so a batch is one transaction
    # and the write lock is taken up front (no upgrade deadlock with another writer).
    # check_same_thread=False: the daemon commits on its writer thread; the Journal's lock keeps one thread at a time.
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=10.0, check_same_thread=False)
    try:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            # Some filesystems (network mounts) refuse WAL; silently running in another mode would
            # void the crash-safety argument, so refuse to start instead.
            raise RuntimeError(f"journal {path}: SQLite refused WAL mode (got {mode!r}); use a local disk")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
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
        # check_same_thread=False: `journal verify` runs quick_check on a thread of its own while this one reports
        # (controller.store.check_watch), which waits for it; never two threads at once.
        conn = sqlite3.connect(
            f"file:{quote(str(p.resolve()))}?mode=ro",
            uri=True,
            isolation_level=None,
            timeout=10.0,
            check_same_thread=False,
        )
    except sqlite3.Error as err:
        raise JournalError(f"{p}: cannot open it ({err}); check the file's permissions") from None
    try:
        conn.execute("PRAGMA synchronous=FULL")
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except (sqlite3.DatabaseError, UnicodeDecodeError) as err:  # a damaged schema can carry undecodable text
        conn.close()
        if "malformed" in str(err) or was_journal(p):  # a journal's file, damaged (controller.store.damage)
            raise JournalError(damaged(p, [str(err)])) from None
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


def create_or_migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the file to SCHEMA_VERSION in one transaction: create a new file's tables, chain a schema 1
    file's rows; JournalError for a file written by newer software."""
    db.execute("BEGIN IMMEDIATE")
    try:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise JournalError(_newer(path, version))
        for statement in (_SCHEMA + _SCHEMA_2 + _SCHEMA_3 + _SCHEMA_4).split(";"):
            if statement.strip():
                db.execute(statement)
        if version == 1:
            _migrate_1_to_2(db, path)
        if 0 < version < 3:
            migrate_to_manifest(db)
            log.info("journal migrated to schema 3: manifest added", path=str(path))
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _migrate_1_to_2(db: sqlite3.Connection, path: Path) -> None:
    """Chain a v1 file in place, every table in seq order, inside the caller's transaction: a crash midway
    leaves the v1 file as it was."""
    columns = {r[1] for r in db.execute("PRAGMA table_info(events)")}
    if "hash" not in columns:
        db.execute("ALTER TABLE events ADD COLUMN hash TEXT")
    tables = [t for (t,) in db.execute("SELECT DISTINCT table_id FROM events")]
    total = 0
    for table_id in tables:
        prev, seq = GENESIS, 0
        rows = db.execute(f"SELECT {COLUMNS} FROM events WHERE table_id = ? ORDER BY seq", (table_id,)).fetchall()
        updates = []
        for r in rows:
            prev = row_hash(prev, *r)
            seq = int(r[0])
            updates.append((prev, table_id, seq))
        db.executemany("UPDATE events SET hash = ? WHERE table_id = ? AND seq = ?", updates)
        db.execute("INSERT OR REPLACE INTO chain_head (table_id, seq, hash) VALUES (?, ?, ?)", (table_id, seq, prev))
        total += len(rows)
    log.info("journal migrated to schema 2: hash chain added", path=str(path), rows=total, tables=len(tables))
