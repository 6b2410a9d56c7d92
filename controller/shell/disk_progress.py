"""Whether a journal commit that takes long is moving (a slow disk) or not (a hung one): the stop at once waits for the
first up to its budget and gives up on the second after HUNG_COMMIT_S (controller/shell/writer.py; docs/journal.md,
"A disk that hangs").

What is sampled, between two looks (every PROBE_S), and why these:

- the writer thread's own I/O counters (/proc/self/task/TID/io: its read and write calls and their bytes). Per thread,
  so nothing else moves them: the loop's sockets and serial ports, the marks' and reads' thread, the rest of the
  machine. A write that returns, however slowly (the kernel throttling a writer of dirty pages on a slow disk, a large
  commit or a checkpoint copying page after page), moves them; a thread waiting for a lock (SQLite's busy wait on
  another writer, the journal's lock) or stuck inside one write does not.
- while that thread is inside a sync or a write call (/proc/self/task/TID/syscall), the writes the journal's block
  device has completed (/sys/dev/block/MAJ:MIN/stat): a long fsync shows no progress of its own, but a slow disk
  completes writes meanwhile and a hung one completes none. The device's count is the machine's, so another writer
  on a disk that hangs only for this file can pass for progress: then the stop waits its whole budget, still within
  the unit's TimeoutStopSec, and exits 3 as before.

Everything is read from procfs and sysfs, which never wait on a disk: a sample on the event loop costs about 0.1 ms.
A counter that cannot be read (another kernel, another architecture) counts as not moving.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

from controller.core.digits import is_ascii_digits

# The sync and write calls a commit may be inside, by machine (SQLite writes with write and pwrite64, syncs with fsync
# and fdatasync; the anchor file with pwrite64 and fdatasync).
_IO_SYSCALLS = {
    "x86_64": frozenset({1, 18, 20, 74, 75, 277}),  # write pwrite64 writev fsync fdatasync sync_file_range
    "aarch64": frozenset({64, 66, 68, 82, 83, 84}),  # write writev pwrite64 fsync fdatasync sync_file_range
}.get(platform.machine(), frozenset())

Sample = tuple[str, str]


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def device_stat(journal: Path) -> str:
    """The sysfs stat file of the block device the journal's directory is on ('' when there is none: tmpfs, NFS).
    Looked up when the writer is made, while the disk answers: a stat on a hung one could wait."""
    try:
        dev = os.stat(journal.parent).st_dev
    except OSError:
        return ""
    path = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat"
    return path if os.path.exists(path) else ""


class DiskProgress:
    """Samples of one writer thread's progress on one journal's disk; two samples that differ mean it moved."""

    def __init__(self, device: str, thread_id: int | None) -> None:
        """`device`: the journal's (device_stat), or ''."""
        self._thread = thread_id
        self._device = device

    def sample(self) -> Sample:
        if self._thread is None:
            return ("", "")
        task = f"/proc/self/task/{self._thread}"
        own = _read(f"{task}/io")
        syscall = _read(f"{task}/syscall").split(" ", 1)[0]
        inside_io = is_ascii_digits(syscall) and int(syscall) in _IO_SYSCALLS
        # Fields 5 and 7 of the device's stat: writes completed, sectors written (Documentation/block/stat.rst).
        fields = _read(self._device).split() if inside_io and self._device else []
        device = " ".join(fields[4:7:2]) if len(fields) >= 7 else ""
        return (own, device)


def moved(before: Sample, after: Sample) -> bool:
    """The thread's own counters moved, or (it being inside a sync or write both times) its device completed writes."""
    own = before[0] != after[0] and bool(after[0])
    device = bool(before[1]) and bool(after[1]) and before[1] != after[1]
    return own or device
