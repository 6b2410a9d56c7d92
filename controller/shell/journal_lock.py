"""One daemon per journal: `tablectl run` holds an exclusive lock beside its journal for its whole life.

Without it a second `run` of the same table (a second terminal, a unit started by hand beside systemd's) opened the
first one's serial ports, knocking its devices offline, and restored and played the same journal's round. SQLite's
own locking serialises each commit, not the ownership of a table. The lock is a file of its own (`<journal>.lock`,
like the `.anchor` beside it), so the journal's format is unchanged; flock() is let go by the kernel when the process
ends, however it ends, so a kill -9 leaves no stale lock to clear by hand.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

# The holder's pid, written for the second daemon's message; a pid is at most 7 digits on Linux, 22 bits.
_PID_BYTES = 32


class JournalBusy(Exception):
    """Another process holds the journal; the message names it and the fix."""


def lock_path(journal: Path) -> Path:
    return journal.with_name(journal.name + ".lock")


def hold_journal(journal: Path) -> int | None:
    """The open descriptor holding the journal's lock (keep it open while the table runs), or None when the lock file
    cannot be made (a missing or read-only directory): the journal's own opening then refuses with its message.
    Raises JournalBusy when another process holds it."""
    path = lock_path(journal)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o640)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, _PID_BYTES, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise JournalBusy(
            f"the journal {journal} is in use by another `tablectl run` (pid {holder}, per {path}): one daemon per "
            "table. Stop that one first (systemctl stop tablectl, or Ctrl-C in its terminal), or give this one "
            "another --journal"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd
