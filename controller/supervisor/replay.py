"""The replay store: every supervisor command's id and nonce already received, kept in the journal's file.

A command is carried out once (docs/commands.md, "Replay"): its id and nonce are recorded, durably, before it
is stepped, and a second arrival of either is refused, after a restart too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from controller.mqtt.contract import SupervisorCommand
from controller.store.schema import connect
from controller.supervisor.envelope import iso_utc

_REPLAY_SCHEMA = """
CREATE TABLE IF NOT EXISTS command_seen (
    table_id   TEXT NOT NULL,
    command_id TEXT NOT NULL,
    nonce      TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    issued_at  REAL NOT NULL,  -- Unix seconds, for pruning
    seen_at    TEXT NOT NULL,
    PRIMARY KEY (table_id, command_id)
);
CREATE UNIQUE INDEX IF NOT EXISTS command_seen_nonce ON command_seen (table_id, nonce);
CREATE INDEX IF NOT EXISTS command_seen_issued ON command_seen (table_id, issued_at);
"""


class ReplayStoreError(Exception):
    """The records of a batch could not be committed: none of the commands judged in it may be carried out."""


class ReplayStore:
    """Command ids and nonces already received, in the journal's SQLite file (its own table), so a replay is
    refused after a restart too. Each record is committed (fsync) before the command is stepped: a crash in
    between loses the command, never lets it run twice."""

    def __init__(self, path: Path | str, table_id: str) -> None:
        self.table_id = table_id
        self._batch: list[BaseException] | None = None  # inside batch(): what failed in it
        self._db: sqlite3.Connection | None = connect(path)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _REPLAY_SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    @contextmanager
    def batch(self) -> Iterator[None]:
        """The records made inside are committed together at its end: one fsync for a burst of commands
        instead of one each. ReplayStoreError when that commit (or any record in it) failed: then none of the
        commands judged inside may be carried out, since a crash could let them run again."""
        db = self._require()
        self._batch = []
        try:
            yield
            failed = self._batch
            if not failed and db.in_transaction:
                db.execute("COMMIT")
        except sqlite3.Error as err:
            failed = [err]
        finally:
            self._batch = None
            if db.in_transaction:
                db.execute("ROLLBACK")
        if failed:
            raise ReplayStoreError(f"the replay store could not record the commands: {failed[0]}") from failed[0]

    def seen_or_record(self, cmd: SupervisorCommand, now: datetime, keep_seconds: float) -> str | None:
        """Why the command is a replay, or None after recording it. Prunes what has gone stale anyway."""
        db = self._require()
        if self._batch is not None:
            try:
                if not db.in_transaction:
                    db.execute("BEGIN IMMEDIATE")
                return self._check(db, cmd, now, keep_seconds)
            except BaseException as err:
                self._batch.append(err)
                raise
        db.execute("BEGIN IMMEDIATE")
        try:
            replay = self._check(db, cmd, now, keep_seconds)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return replay

    def _check(self, db: sqlite3.Connection, cmd: SupervisorCommand, now: datetime, keep_seconds: float) -> str | None:
        cutoff = now.timestamp() - keep_seconds
        db.execute("DELETE FROM command_seen WHERE table_id = ? AND issued_at < ?", (self.table_id, cutoff))
        row = db.execute(
            "SELECT command_id, nonce, key_id, seen_at FROM command_seen "
            "WHERE table_id = ? AND (command_id = ? OR nonce = ?) LIMIT 1",
            (self.table_id, cmd.command_id, cmd.nonce),
        ).fetchone()
        if row is None:
            db.execute(
                "INSERT INTO command_seen (table_id, command_id, nonce, key_id, issued_at, seen_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (self.table_id, cmd.command_id, cmd.nonce, cmd.key_id, cmd.issued_at.timestamp(), iso_utc(now)),
            )
            return None
        what, value = ("command_id", cmd.command_id) if row[0] == cmd.command_id else ("nonce", cmd.nonce)
        return (
            f"{what} {value} was already received at {row[3]} (signed by {row[2]}): a command is "
            "carried out once; sign a new one (`tablectl command send` makes a fresh id and nonce)"
        )

    def count(self) -> int:
        return int(
            self._require()
            .execute("SELECT COUNT(*) FROM command_seen WHERE table_id = ?", (self.table_id,))
            .fetchone()[0]
        )

    def _require(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError("the command replay store is closed")
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
