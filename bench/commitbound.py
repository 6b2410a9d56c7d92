"""What the journal's durable commits alone allow a table: the bound on rounds/s that no CPU saving lifts.

The service awaits each step batch's commit (the WAL's fsync and the anchor's fdatasync, docs/journal.md) before it
takes the next batch, and a round's steps depend on each other (a decision follows the deal it answers), so a round
costs at least its commits one after another. bench/footprint.py counts the daemon's commits from its journal's
manifest (the `commits` column, advanced by every commit) at the first and the last measured round.completed, and
times bare commits on the same disk in the same run (step_commit.BareCommits: Journal.append and make_durable on one
thread, nothing else running): commits a round x a bare commit's wall time is the floor under a round's wall time.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from step_commit import BareCommits

from controller.store import snapshot


def commits(journal: Path) -> tuple[int, int]:
    """(the journal's commit count from its manifest, the size of its engine state record), read beside the daemon
    (WAL: a reader does not block the writer)."""
    db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=5.0)
    try:
        count = db.execute("SELECT coalesce(sum(commits), 0) FROM manifest").fetchone()
        size = db.execute(
            "SELECT coalesce(max(length(body)), 0) FROM critical_state WHERE record = ?", (snapshot.RECORD,)
        )
        return int(count[0]), int(size.fetchone()[0])
    finally:
        db.close()


def bare_commit_wall(tmp: Path, state_bytes: int, n: int = 200, warmup: int = 20) -> float:
    """Seconds of wall time a bare durable commit (one event and a state record of `state_bytes`) takes on the disk
    `tmp` is on: the median of `n`."""
    bare = BareCommits(tmp / "bare-commits.sqlite", state_bytes)
    try:
        walls = []
        for i in range(warmup + n):
            start = time.perf_counter()
            bare.commit(i)
            walls.append(time.perf_counter() - start)
    finally:
        bare.journal.close()
    return sorted(walls[warmup:])[n // 2]


def bound(tmp: Path, commits_read: list[tuple[int, int]], rounds: int, wall_s: float) -> str:
    """The daemon's commits a round (`commits` read at the first and the last measured round.completed) and the
    rounds/s they allow at the wall time of bare commits timed now on `tmp`'s disk; empty if nothing was measured."""
    if len(commits_read) != 2 or rounds < 1 or wall_s <= 0:
        return "  the journal: no commits measured (fewer than 2 rounds played)"
    bare_s = bare_commit_wall(tmp, commits_read[1][1])
    per_round = (commits_read[1][0] - commits_read[0][0]) / rounds
    floor_ms = per_round * bare_s * 1000
    return (
        f"  the journal: {per_round:.1f} durable commits a round (its manifest); baseline, a bare commit on this disk "
        f"(Journal.append + the anchor's fdatasync, one thread): {bare_s * 1e6:.0f} us of wall time, so the commits "
        f"alone, one after another, take {floor_ms:.1f} ms a round and bound the table to {1000 / floor_ms:.0f} "
        f"rounds/s whatever the CPU; the daemon's rounds took {wall_s / rounds * 1000:.0f} ms "
        f"({wall_s / rounds * 1000 / floor_ms:.1f}x that floor)"
    )
