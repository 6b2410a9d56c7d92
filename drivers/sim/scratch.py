"""One temp dir per process for all that simulated devices and people put on disk, gone with the last of them.

Each simulator used to make a `tablectl-sim-*` dir of its own for its one stable symlink, and the demo a
`tablectl-demo-*` for its signers' replay file; a run that did not stop its simulators, or was killed, left them all
behind (53,524 and 4,852 of them in one machine's /tmp after a few days of tests). Now a process has at most one
top-level dir: each user leases a subdir in it (`lease`), gives it back when done (`release`), and the dir goes when
the last lease does, or at interpreter exit for leases nobody gave back.

A SIGKILL runs no exit handler, so the dir names its owner in the `.leash` format (leash.own_dir: `owner PID START`),
and the process that makes the first such dir sweeps those of its own kind (leash.SIM_PATTERNS) whose owner is gone:
a `tablectl demo` SIGKILLed on a dealer's PC leaves its dir only until the next demo, simulate or simulator starts,
and a dir whose owner runs is never touched. The leash is a package of neither side (drivers must not import floor),
so this is the same format and the same sweep as the floor's clusters use, not a copy.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from pathlib import Path

import structlog

import leash

# One of leash.SIM_PATTERNS, or the sweep would never take a killed process's dir (tests/drivers/test_sim_scratch.py).
PREFIX = "tablectl-sim-"

log = structlog.get_logger(__name__)


def sweep_stale() -> list[str]:
    """The dirs of our kind a killed process left (its owner is gone), deleted: once per process and temp dir,
    before its first dir is made. Costs one listing of the temp dir and a /proc read per dir of our kind
    (bench/sim_sweep.py)."""
    swept = leash.sweep_stale(leash.SIM_PATTERNS)
    for line in swept:
        log.warning("stale simulator dir swept", what=line)
    return swept


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
                sweep_stale()
                self.path = Path(tempfile.mkdtemp(prefix=PREFIX))
                leash.own_dir(self.path, self.pid)
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
