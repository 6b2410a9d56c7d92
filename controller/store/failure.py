"""A journal's storage failing under a running table: disk full, an I/O error, a disk gone read-only.

SQLite reports each as an `OperationalError` whose text ("database or disk is full", "disk I/O error") names
neither the file nor what to do, and the `ROLLBACK` after a failed `COMMIT` used to hide it behind its own
"cannot rollback - no transaction is active". `StorageError` carries one line an operator can act on: the cause,
the file and the fix. The table cannot play without its journal (nothing may leave the process that the journal
does not hold), so the daemon stops on it; everything committed before it stays in the file (docs/recovery.md,
"Storage failures").
"""

from __future__ import annotations

import errno
import os
import pwd
import sqlite3
from pathlib import Path

from controller.store.damage import check_at_open, damaged, was_journal
from controller.store.schema import JournalError, connect, create_or_migrate


class StorageError(JournalError):
    """The journal's storage failed while the table was running; `str()` is the one line to show."""

    def __init__(self, message: str, cause: str) -> None:
        super().__init__(message)
        self.cause = cause  # "disk_full", "io_error", "read_only", "cannot_open", "damaged" or "sqlite"


def _kind(err: BaseException) -> str:
    name = getattr(err, "sqlite_errorname", "") if isinstance(err, sqlite3.Error) else ""
    text = str(err).lower()
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return "disk_full"
    if name.startswith("SQLITE_READONLY") or "readonly database" in text or "read-only" in text:
        return "read_only"
    if name.startswith("SQLITE_IOERR") or "disk i/o error" in text:
        return "io_error"
    if name.startswith("SQLITE_CANTOPEN") or "unable to open" in text:
        return "cannot_open"
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text:
        return "damaged"
    if isinstance(err, OSError):
        return {errno.ENOSPC: "disk_full", errno.EROFS: "read_only", errno.EIO: "io_error"}.get(err.errno or 0, "io")
    return "sqlite"


_FIX = {
    "disk_full": "the disk holding it is full: free space on it, then start the table again (everything committed "
    "is in the file; the round in progress is recovered as after a power loss)",
    "read_only": "it, or the disk holding it, became read-only (a disk remounted read-only after errors, or its "
    "permissions changed): check the disk (dmesg, mount) and make the file writable by the tablectl user, then "
    "start the table again",
    "io_error": "the disk reported an I/O error, it may be failing: copy the journal off it (tablectl journal "
    "export, or cp with its -wal file), check the disk (dmesg), then start the table again on a sound disk",
    "cannot_open": "SQLite cannot open it or its -wal file: check that its directory exists and is writable by the "
    "tablectl user, then start the table again",
    "damaged": "the file is damaged: keep it for the investigation (tablectl journal verify), restore the last "
    "backup, and start the table again",
}


def storage_error(err: BaseException, path: Path, doing: str) -> StorageError:
    """The StorageError for `err`, raised by SQLite (or the OS) while `doing` something with journal `path`."""
    # SQLite reports a write to a disk remounted read-only as "database or disk is full": ask the filesystem.
    kind = "read_only" if _read_only_dir(path.parent) is not None else _kind(err)
    fix = _FIX.get(kind, "check the disk and the file's permissions, then start the table again")
    return StorageError(f"journal {path}: {doing} failed ({err}): {fix}", kind)


def _read_only_dir(directory: Path) -> str | None:
    """Why the journal cannot create files in `directory` (its -wal and -shm beside it), or None."""
    try:
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return f"its directory {directory} is on a read-only filesystem"
    except OSError:
        return None
    if not os.access(directory, os.W_OK):
        return f"its directory {directory} is not writable by this user ({_user()})"
    return None


def _user() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return f"uid {os.geteuid()}"


def open_journal_file(path: Path) -> sqlite3.Connection:
    """The writer's connection to journal `path`, its schema brought up to date; JournalError naming the file,
    what is wrong and the fix: a missing directory that cannot be made, a read-only directory or disk, a file
    that is not a journal, a newer schema."""
    directory = path.parent
    if not directory.is_dir():
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise JournalError(
                f"journal {path}: its directory {directory} does not exist and cannot be created ({err.strerror}): "
                "create it, writable by the tablectl user, or point journal.path (or --journal) at a file in an "
                "existing directory"
            ) from None
    try:
        conn = connect(path)
    except sqlite3.DatabaseError as err:
        raise _open_failure(path, err) from None
    try:
        # Before anything is written to it: a torn file is kept as it was found (controller.store.damage).
        found = check_at_open(conn, path)
        if found:
            raise JournalError(damaged(path, found))
        create_or_migrate(conn, path)
    except sqlite3.DatabaseError as err:
        conn.close()
        raise _open_failure(path, err) from None
    except BaseException:
        conn.close()
        raise
    return conn


def _open_failure(path: Path, err: sqlite3.DatabaseError) -> JournalError:
    kind = _kind(err)
    if kind in ("read_only", "cannot_open"):
        why = _read_only_dir(path.parent)
        if why is not None:
            return JournalError(
                f"journal {path}: {why}; the journal needs to write there (the file and its -wal beside it): "
                "make the directory writable by the tablectl user (or remount the disk read-write), or point "
                "journal.path (or --journal) at a writable directory. The file was not changed"
            )
        if path.exists() and not os.access(path, os.W_OK):
            return JournalError(
                f"journal {path} is not writable by this user ({_user()}): give the tablectl user write access "
                "to it (chown or chmod), or point journal.path (or --journal) at another file"
            )
        return storage_error(err, path, "opening the journal")
    if kind in ("disk_full", "io_error"):
        return storage_error(err, path, "opening the journal")
    # SQLITE_CORRUPT is an SQLite file damaged; "not a database" is one only beside its anchor file (a journal's).
    if kind == "damaged" and ("malformed" in str(err) or was_journal(path)):
        return JournalError(damaged(path, [str(err)]))
    return JournalError(
        f"{path} is not a tablectl journal (SQLite says: {err}); move it aside or point journal.path at another file"
    )
