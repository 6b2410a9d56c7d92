"""One temp dir per process for all that simulated devices and people put on disk, gone with the last of them.

Each simulator used to make a `tablectl-sim-*` dir of its own for its one stable symlink, and the demo a
`tablectl-demo-*` for its signers' replay file; a run that did not stop its simulators, or was killed, left them all
behind (53,524 and 4,852 of them in one machine's /tmp after a few days of tests). Now a process has at most one
top-level dir: each user leases a subdir in it (`lease`), gives it back when done (`release`), and the dir goes when
the last lease does, or at interpreter exit for leases nobody gave back.

A SIGKILL runs no exit handler, so the dir names its owner in floor/leash.py's `.leash` format (`owner PID START`):
leash's sweep (`python3 floor/leash.py --sweep`, and the tests' broker fixture) deletes a `tablectl-sim-*` dir whose
owner is gone and never touches one whose owner runs. The layers keep drivers from importing floor (the controller,
which imports drivers, must never reach it), so the one line is written here, not by `floor.leash.Leash.own`.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from pathlib import Path

PREFIX = "tablectl-sim-"
# floor/leash.py's LEASH_FILE and its first line: the sweep reads who owns the dir from it.
LEASH_FILE = ".leash"


def _start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat, as floor/leash.py names a process (a recycled pid is a different start)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


class _ProcessDir:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid = 0
        self.path: Path | None = None
        self.leases: set[Path] = set()

    def lease(self, name: str) -> Path:
        with self.lock:
            if self.pid != os.getpid():
                # A forked child: the dir and its leases are its parent's, which removes them; start afresh.
                self.pid, self.path, self.leases = os.getpid(), None, set()
            if self.path is None or not self.path.is_dir():
                self.path = Path(tempfile.mkdtemp(prefix=PREFIX))
                start = _start_time(self.pid)
                if start is not None:
                    (self.path / LEASH_FILE).write_text(f"owner {self.pid} {start}\n")
            leased = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.path))
            self.leases.add(leased)
            return leased

    def release(self, leased: Path) -> None:
        with self.lock:
            shutil.rmtree(leased, ignore_errors=True)
            if self.pid != os.getpid():
                return  # the parent's, inherited across a fork: only the rmtree of what the caller was given
            self.leases.discard(leased)
            if not self.leases:
                self._remove()

    def _remove(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None

    def at_exit(self) -> None:
        """Whatever was never given back (a test that did not stop its simulators): the dir goes with the process."""
        with self.lock:
            if self.pid == os.getpid():
                self.leases.clear()
                self._remove()


_dir = _ProcessDir()
atexit.register(_dir.at_exit)


def lease(name: str) -> Path:
    """A new empty private dir named after `name`, inside this process's `tablectl-sim-*` dir (made on first use)."""
    return _dir.lease(name)


def release(leased: Path) -> None:
    """Delete a leased dir (close what is open in it first); the process's dir goes with its last lease."""
    _dir.release(leased)


def process_dir() -> Path | None:
    """This process's dir while anything holds a lease in it (tests assert it is gone)."""
    return _dir.path if _dir.pid == os.getpid() else None
