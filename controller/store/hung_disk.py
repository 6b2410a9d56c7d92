"""Test only: a journal commit that does not return, in a real `tablectl run` (tests/journal/test_note_hung_disk.py).

A disk that hangs cannot be made here (no device-mapper delay target, no FUSE server), and a test cannot reach into the
daemon's process to hold its journal's lock. So: when the environment names a path in TABLECTL_TEST_HUNG_DISK, each
commit, once it holds SQLite's write lock and the journal's, opens that path for reading. While the test keeps a FIFO
there, the open blocks in the kernel until something opens the other end, as a write that never returns would: no
I/O counter moves, the thread is in no write or sync call (controller/shell/disk_progress.py reads it as not moving),
and every other use of the journal waits behind it. With nothing there the open fails at once and the commit goes on.

Never set outside tests (docs/journal.md lists it as such): unset, a commit costs one comparison with None.
"""

from __future__ import annotations

import contextlib
import os

ENV = "TABLECTL_TEST_HUNG_DISK"
PATH = os.environ.get(ENV) or None


def wait() -> None:
    """Blocks while a FIFO is at PATH and nothing opens its other end (the test's hung disk)."""
    if PATH is not None:
        with contextlib.suppress(OSError), open(PATH, "rb"):
            pass
