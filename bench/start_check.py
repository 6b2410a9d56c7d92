"""What SQLite's `PRAGMA quick_check` at the journal's open costs the daemon's start (controller/store/damage.py).

The journal is opened as the daemon opens it (`Journal(path, table_id, boot_id)`, then closed), on a journal of
--rounds synthetic seven-seat rounds (bench/growth.py's: 66 events a round, about 26 KiB), built once into --file and
kept for later runs (about 2.5 GB at 100,000 rounds). Two starts, alternately:

- after a crash: the anchor file as a kill -9 leaves it (its newest slot without `closed`), so the file is checked;
- after a clean stop: the anchor file as the journal's close left it (`closed` in this tree; nothing in the base tree,
  whose open never checks), so the open is the base's plus the anchor file read.

"cold" evicts the file's pages from the page cache first (posix_fadvise DONTNEED on this file only: the start after a
power cut or a reboot), "warm" opens it with the file in the page cache (one untimed open first reads it back in: a
restart of the service). Run it from the base tree too (the same --file): its figures are the baseline of the clean
start, and its "after a crash" is its open, which checks nothing.

    .venv/bin/python bench/start_check.py --file /var/tmp/j100k.sqlite [--rounds 100000] [--trials 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import benchlib
import growth

from controller.shell.logs import configure_logging
from controller.store.anchor import Sidecar, read_sidecar
from controller.store.journal import Journal

TABLE = "bench-start"


def build(path: Path, rounds: int) -> None:
    journal = Journal(path, TABLE, uuid.uuid4().hex)
    try:
        for n in range(1, rounds + 1):
            journal.append(growth.synthetic_round(n), datetime.now(UTC))
            if n % 5000 == 0:
                benchlib.progress(f"{n}/{rounds} rounds journaled")
    finally:
        journal.close()


def evict(path: Path) -> None:
    """This file's pages out of the page cache: the next read comes from the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def as_after_a_crash(path: Path) -> None:
    """The anchor file's newest slot rewritten without `closed`, as the last commit before a kill -9 left it."""
    claim = read_sidecar(path).claim
    if claim is None:
        sys.exit(f"bench: {path} has no sound anchor file beside it")
    if getattr(claim, "closed", False):
        sidecar = Sidecar(path, claim.table_id)
        sidecar.write(replace(claim, closed=False), datetime.now(UTC).isoformat(), sync=True)
        sidecar.close()


def open_s(path: Path, cold: bool, crashed: bool) -> float:
    if crashed:
        as_after_a_crash(path)
    if cold:
        evict(path)
    start = time.perf_counter()
    Journal(path, TABLE, uuid.uuid4().hex).close()
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, required=True, help="the journal to open (built there if absent)")
    ap.add_argument("--rounds", type=int, default=100_000, help="rounds to build it with")
    ap.add_argument("--trials", type=int, default=3, help="opens of each kind, alternating")
    args = ap.parse_args()
    configure_logging(json=False, level="warning")
    if not args.file.exists():
        build(args.file, args.rounds)
    print(f"machine: {benchlib.machine()}")
    print(f"journal {args.file}: {args.file.stat().st_size / 1e9:.2f} GB; tree {Path(__file__).resolve().parents[1]}")
    for cold in (True, False):
        if not cold:
            open_s(args.file, cold=False, crashed=True)  # untimed: the file back in the page cache after the evictions
        times: dict[str, list[float]] = {"after a crash": [], "after a clean stop": []}
        for _ in range(args.trials):
            for kind in times:
                times[kind].append(open_s(args.file, cold, kind == "after a crash"))
        for kind, found in times.items():
            print(
                f"  {'cold' if cold else 'warm'}, {kind}: open {statistics.median(found):.3f} s (median of "
                f"{args.trials}: {', '.join(f'{t:.3f}' for t in found)}); load {os.getloadavg()[0]:.1f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
