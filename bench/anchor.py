"""What the anchor file costs per commit, and what the checks at start cost (docs/journal.md, "The anchor").

The same 655a rounds (six seats, as bench/engine_rounds.py) are stepped and each step's events and changed state
appended to a real SQLite journal (WAL, synchronous=FULL, hash chain, the manifest in every transaction):
  journal            a journal that keeps no anchor file (baseline)
  journal+anchor     the daemon's journal: the anchor file written with an fdatasync after every commit
Ratio: journal+anchor / journal time, and the cost per commit in microseconds. Then the start: opening the
journal of those rounds (reading its anchor file) and holding it against its manifest and anchor
(controller.store.integrity.assess), against opening it alone.

    .venv/bin/python bench/anchor.py [--rounds N] [--seed S]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from engine_rounds import Hook, deals, play  # the same rounds, driven the same way

from controller.core.events import DomainEvent
from controller.engine.state import TableState
from controller.store import integrity, snapshot
from controller.store.journal import Journal
from controller.store.records import Record

NOW = datetime(2024, 5, 1, 12, tzinfo=UTC)


def journaling(path: Path, anchored: bool) -> tuple[Hook, Journal, list[int]]:
    journal = Journal(path, "bench", "boot", anchored=anchored)
    last = b""
    commits = [0]

    def hook(state: TableState, events: list[DomainEvent]) -> None:
        nonlocal last
        body = snapshot.encode(state)
        records = [] if body == last else [Record(snapshot.RECORD, body)]
        last = body
        if events or records:
            journal.append(events, NOW, records)
            commits[0] += 1

    return hook, journal, commits


def timed_rounds(decks: list[list[str]], path: Path, anchored: bool) -> tuple[float, int]:
    hook, journal, commits = journaling(path, anchored)
    start = time.perf_counter()
    play(decks, hook)
    elapsed = time.perf_counter() - start
    journal.close()
    return elapsed, commits[0]


def timed_start(path: Path, assess: bool, repeat: int = 20) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        journal = Journal(path, "bench", "boot")
        if assess:
            integrity.assess(journal)
        journal.close()
    return (time.perf_counter() - start) / repeat


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    decks = deals(args.rounds, args.seed)
    print(f"{args.rounds} six-seat 655a rounds; the journals on real files in {tempfile.gettempdir()}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        base, commits = timed_rounds(decks, Path(tmp) / "base.sqlite", anchored=False)
        anchored, _ = timed_rounds(decks, Path(tmp) / "anchored.sqlite", anchored=True)
        print(f"journal (baseline):     {args.rounds / base:10.1f} rounds/s  {commits / args.rounds:.0f} commits/round")
        print(f"journal+anchor:         {args.rounds / anchored:10.1f} rounds/s")
        print(
            f"ratio journal+anchor/journal time: {anchored / base:.2f}x; "
            f"{(anchored - base) / commits * 1e6:.0f} us per commit"
        )
        opened = timed_start(Path(tmp) / "anchored.sqlite", assess=False)
        checked = timed_start(Path(tmp) / "anchored.sqlite", assess=True)
        print(
            f"start: open {opened * 1e3:.2f} ms (baseline), open and check {checked * 1e3:.2f} ms "
            f"({checked / opened:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
