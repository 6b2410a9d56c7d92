"""One daemon per journal: `tablectl run` (and each table of `tablectl demo`) holds an exclusive lock beside its
journal for its whole life.

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


# The journals this process holds, by resolved path: `run` takes its lock before the devices start and run_table takes
# it again (a no-op here) for the demo's tables, which have no such earlier step. flock() conflicts between two open
# descriptions of one file even in one process, so a second take must not open the file again.
_held: dict[Path, int] = {}


def hold_journal(journal: Path) -> None:
    """Hold the journal's lock until let_go (or the process's end). Nothing is held when the lock file cannot be made
    (a missing or read-only directory): the journal's own opening then refuses with its message. Raises JournalBusy
    when another process holds it."""
    key = journal.resolve()
    if key in _held:
        return
    path = lock_path(journal)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o640)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, _PID_BYTES, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise JournalBusy(
            f"the journal {journal} is in use by another tablectl (pid {holder}, per {path}): one daemon per table. "
            "Stop that one first (systemctl stop tablectl, or Ctrl-C in its terminal), or give this one another "
            "--journal"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    _held[key] = fd


def let_go(journal: Path) -> None:
    fd = _held.pop(journal.resolve(), None)
    if fd is not None:
        os.close(fd)
