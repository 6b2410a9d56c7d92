"""What the anchor file costs per commit, and what the checks at start cost (docs/journal.md, "The anchor").

The same 655a rounds (six seats, as bench/engine_rounds.py) are stepped and each step's events and changed state
appended to a real SQLite journal (WAL, synchronous=FULL, hash chain, the manifest in every transaction), the
outbox read after every commit as a publisher that keeps up reads it:
  journal            a journal that keeps no anchor file (baseline)
  journal+anchor     the daemon's journal: the anchor file written after every commit and made durable (fdatasync)
                     before the outbox is read, i.e. here once per commit (the most it costs)
  anchor, broker away  the same with the outbox never read (a broker outage): written, never synced
Ratios against the baseline's time, and the cost per commit in microseconds. Then the start: opening the
journal of those rounds (reading its anchor file) and holding it against its manifest and anchor
(controller.store.integrity.assess), against opening it alone.

    .venv/bin/python bench/anchor.py [--rounds N] [--seed S] [--repeat R]
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
from controller.shell.logs import configure_logging
from controller.store import integrity, snapshot
from controller.store.journal import Journal
from controller.store.records import Record

NOW = datetime(2024, 5, 1, 12, tzinfo=UTC)


def journaling(path: Path, anchored: bool, publishing: bool) -> tuple[Hook, Journal, list[int]]:
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
            if publishing:
                journal.unpublished(limit=1, after_seq=journal.last_seq)

    return hook, journal, commits


def timed_rounds(decks: list[list[str]], path: Path, anchored: bool, publishing: bool = True) -> tuple[float, int]:
    hook, journal, commits = journaling(path, anchored, publishing)
    start = time.perf_counter()
    play(decks, hook)
    elapsed = time.perf_counter() - start
    journal.close()
    return elapsed, commits[0]


def timed_starts(path: Path, repeat: int = 40) -> tuple[float, float]:
    """Seconds per start (opening the journal), and per start with the checks; alternated, so both see the same
    page cache and the same load."""
    spent = {False: 0.0, True: 0.0}
    for i in range(2 * repeat):
        check = bool(i % 2)
        start = time.perf_counter()
        journal = Journal(path, "bench", "boot")
        if check:
            integrity.assess(journal)
        journal.close()
        spent[check] += time.perf_counter() - start
    return spent[False] / repeat, spent[True] / repeat


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each variant, interleaved; the fastest is kept")
    args = ap.parse_args()
    configure_logging(json=False, level="warning")  # the figures are the output
    decks = deals(args.rounds, args.seed)
    print(f"{args.rounds} six-seat 655a rounds; the journals on real files in {tempfile.gettempdir()}", file=sys.stderr)
    variants = {"baseline": (False, True), "anchor": (True, True), "away": (True, False)}
    best: dict[str, float] = {}
    commits = 0
    with tempfile.TemporaryDirectory() as tmp:
        # Interleaved and repeated, the fastest of each kept: other work on the machine only ever slows a run down.
        for rep in range(args.repeat):
            for name, (anchored, publishing) in variants.items():
                spent, commits = timed_rounds(decks, Path(tmp) / f"{name}-{rep}.sqlite", anchored, publishing)
                best[name] = min(best.get(name, spent), spent)
        base = best["baseline"]
        print(f"journal (baseline):     {args.rounds / base:10.1f} rounds/s  {commits / args.rounds:.0f} commits/round")
        for label, name in (("journal+anchor:      ", "anchor"), ("anchor, broker away: ", "away")):
            spent = best[name]
            print(
                f"{label}  {args.rounds / spent:10.1f} rounds/s  {spent / base:.2f}x the baseline's time, "
                f"{(spent - base) / commits * 1e6:.0f} us per commit"
            )
        opened, checked = timed_starts(Path(tmp) / "anchor-0.sqlite")
        print(
            f"start on a journal of {commits} commits: open {opened * 1e3:.2f} ms "
            f"(baseline), open and check {checked * 1e3:.2f} ms ({checked / opened:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
