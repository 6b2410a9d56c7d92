"""`tablectl journal verify`'s word on SQLite's check of the file while it runs (controller.store.check_watch).

The check comes before the chain walk and is one blocking SQLite call: 7 s warm, 45-60 s cold on a 2.5 GB journal
(docs/performance-history.md), during which the walk's own progress lines (PROGRESS_EVERY rows) have not begun. So
every few seconds a line on stderr (as the walk's: a terminal, a pipe or a log file alike) says how far it has read.
A check over before its first report says nothing, as a walk of fewer rows than PROGRESS_EVERY says nothing.
"""

from __future__ import annotations

import sys
from typing import TextIO

from controller.store.check_watch import CheckProgress, Watch

# What the check reads, against the file (and its -wal): every page of every b-tree, then the rows again. extend25
# measured 430 MB read for a 249 MB journal (docs/performance-history.md, Part 68): an estimate, for the percentage.
READ_PER_MB = 1.7


def check_lines(out: TextIO | None = None, every: float | None = None) -> Watch:
    """The check's progress as lines on `out` (stderr by default) every `every` seconds (check_watch.EVERY)."""
    said = [False]  # whether a line was printed while it ran: then its end is said too

    def report(progress: CheckProgress) -> None:
        line = _line(progress, said[0])
        if line is not None:
            print(f"tablectl journal: {line}", file=sys.stderr if out is None else out, flush=True)
            said[0] = not progress.done

    return Watch(report, every)


def _line(progress: CheckProgress, said: bool) -> str | None:
    size = f"{progress.mb:.1f} MB" if progress.mb < 10 else f"{progress.mb:.0f} MB"
    if progress.done:
        return f"file checked ({size}, {progress.seconds:.0f} s); walking the hash chain" if said else None
    if progress.seconds == 0:
        return None  # as it begins: said only if it lasts (the first report)
    if not progress.moving:
        return (
            f"checking the file ({size}): nothing read since the last line ({progress.seconds:.0f} s in), SQLite "
            "is waiting for the disk (dmesg may say why); Ctrl-C stops it"
        )
    if progress.read_mb is None:  # no /proc: the time alone
        return f"checking the file ({size}) with SQLite's quick_check: {progress.seconds:.0f} s"
    about = max(READ_PER_MB * progress.mb, 0.001)
    share = min(99, int(100 * progress.read_mb / about))  # an estimate: never 100 % before it ends
    return (
        f"checking the file ({size}) with SQLite's quick_check: {progress.read_mb:.0f} of about {about:.0f} MB "
        f"read ({share} %), {progress.seconds:.0f} s"
    )
