"""What storing the critical round state costs per engine step, against the pure engine and the journal alone.

The same 655a rounds (six seats, Ante, both bonuses, all three streets, as bench/engine_rounds.py) are stepped:
  engine            the pure engine, nothing else (baseline A)
  engine+encode     plus what the service does per step for the state: snapshot.encode and a compare with the
                    last stored body (the write itself is the journal's)
  journal           the engine and each step's events appended to a real SQLite journal (WAL, synchronous=FULL,
                    hash chain) (baseline B)
  journal+state     the same, the state stored in the same transaction whenever the step changed it
Ratios: engine+encode / engine, and journal+state / journal; and the encode cost per step in microseconds.

    .venv/bin/python bench/critical_state.py [--rounds N] [--seed S]
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
from controller.store import snapshot
from controller.store.journal import Journal
from controller.store.records import Record

NOW = datetime(2024, 5, 1, 12, tzinfo=UTC)


def timed(decks: list[list[str]], hook: Hook) -> tuple[float, int]:
    start = time.perf_counter()
    steps = play(decks, hook)
    return time.perf_counter() - start, steps


def encoder() -> Hook:
    last = b""

    def hook(state: TableState, events: list[DomainEvent]) -> None:
        nonlocal last
        body = snapshot.encode(state)
        if body != last:
            last = body

    return hook


def journaling(path: Path, with_state: bool) -> tuple[Hook, Journal]:
    journal = Journal(path, "bench", "boot")
    last = b""

    def hook(state: TableState, events: list[DomainEvent]) -> None:
        nonlocal last
        records = []
        if with_state:
            body = snapshot.encode(state)
            if body != last:
                records = [Record(snapshot.RECORD, body)]
                last = body
        if events or records:
            journal.append(events, NOW, records)

    return hook, journal


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    decks = deals(args.rounds, args.seed)
    print(f"{args.rounds} six-seat 655a rounds; the journal on a real file in {tempfile.gettempdir()}", file=sys.stderr)
    base, steps = timed(decks, lambda s, e: None)
    print(f"engine (baseline A):    {args.rounds / base:10.0f} rounds/s  {steps / args.rounds:.0f} steps/round")
    enc, _ = timed(decks, encoder())
    print(f"engine+encode:          {args.rounds / enc:10.0f} rounds/s")
    print(
        f"ratio engine+encode/engine time: {enc / base:.2f}x; encode and compare: "
        f"{(enc - base) / steps * 1e6:.1f} us per step"
    )
    with tempfile.TemporaryDirectory() as tmp:
        hook, j = journaling(Path(tmp) / "a.sqlite", with_state=False)
        jbase, _ = timed(decks, hook)
        j.close()
        hook, j = journaling(Path(tmp) / "b.sqlite", with_state=True)
        jstate, _ = timed(decks, hook)
        j.close()
    print(f"journal (baseline B):   {args.rounds / jbase:10.0f} rounds/s")
    print(f"journal+state:          {args.rounds / jstate:10.0f} rounds/s")
    print(f"ratio journal+state/journal time: {jstate / jbase:.2f}x; {(jstate - jbase) / steps * 1e6:.1f} us per step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
