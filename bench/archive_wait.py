"""How long the daemon's journal writer waits while the daemon archives (controller/shell/archiver.py).

A journal of `--rounds` synthetic rounds (`--events` events a round, payloads the size of a seven-seat round's,
about 26 KiB a round as bench/growth.py measures) is written, every row acknowledged. Then the writer commits
`--commits` step batches (one event each, as most steps are) twice, in the same process on the same disk:

- baseline: nothing else touches the file;
- archiving: a thread archives meanwhile as the daemon does (seal_next, then commit_sealed: segments of
  DAEMON_SEGMENT_ROWS rows), with no gate, so every delete lands among the commits: the worst case, which the
  daemon's gate (between rounds only) avoids.

It prints the commit latencies (median, p99, max) of both runs and their ratio: the max while archiving is the
longest the writer waited; and each delete transaction's time from asking for the write lock (it queues behind the
writer's own commits) to its commit.

    .venv/bin/python bench/archive_wait.py [--rounds 2000] [--events 20] [--commits 3000] [--keep 100]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from benchlib import filesystem, machine, percentile, progress  # the bench/ scripts' shared figures

from controller.core.events import DomainEvent
from controller.shell.archiver import DAEMON_SEGMENT_ROWS
from controller.store import archive
from controller.store.journal import Journal

TABLE = "bench-archive"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
PAD = "x" * 1_200  # a seven-seat round's events average about 1.3 KB of payload each (bench/growth.py)


def build(path: Path, rounds: int, events: int) -> None:
    j = Journal(path, TABLE, "bench-boot")
    for n in range(1, rounds + 1):
        rid = f"{TABLE}-r{n:06d}"
        batch = [DomainEvent("betting.opened", "655a.7", {"round_no": n, "pad": PAD}, rid)]
        batch += [DomainEvent("wager.accepted", "655a.7", {"seat": i % 7, "pad": PAD}, rid) for i in range(events - 2)]
        batch.append(DomainEvent("round.completed", "655a.12", {"round_no": n, "pad": PAD}, rid))
        j.append(batch, T0)
        if n % 500 == 0:
            progress(f"built {n} of {rounds} rounds")
    j.mark_published(list(range(1, j.last_seq + 1)), replayed=False)
    j.close()


def commits(j: Journal, n: int, stop: threading.Event | None = None) -> list[float]:
    out = []
    for i in range(n):
        started = time.perf_counter()
        j.append([DomainEvent("device.status", None, {"i": i})], T0)
        out.append(time.perf_counter() - started)
        if stop is not None and stop.is_set():
            break
    return out


def archiver(path: Path, keep: int, held: list[float], done: threading.Event) -> None:
    directory = archive.default_dir(path)
    db = archive.open_journal(path, keep, directory)
    try:
        while (seg := archive.seal_next(db, path, directory, TABLE, keep, DAEMON_SEGMENT_ROWS)) is not None:
            started = time.perf_counter()
            archive.commit_sealed(db, path, directory, seg)
            held.append(time.perf_counter() - started)
    finally:
        db.close()
        done.set()


def ms(xs: list[float]) -> str:
    return (
        f"median {percentile(xs, 50) * 1e3:.2f} ms, p99 {percentile(xs, 99) * 1e3:.2f} ms, max {max(xs) * 1e3:.2f} ms"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2000)
    p.add_argument("--events", type=int, default=20)
    p.add_argument("--commits", type=int, default=3000)
    p.add_argument("--keep", type=int, default=100)
    a = p.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        path = Path(tmp) / "j.sqlite"
        print(f"journal on {filesystem(path.parent)}; {a.rounds} rounds of {a.events} events")
        build(path, a.rounds, a.events)
        j = Journal(path, TABLE, "bench-boot-2")
        progress("baseline: commits alone")
        base = commits(j, a.commits)
        progress("archiving: commits while a thread archives")
        held: list[float] = []
        done = threading.Event()
        t = threading.Thread(target=archiver, args=(path, a.keep, held, done))
        started = time.perf_counter()
        t.start()
        during: list[float] = []
        while not done.is_set():  # commits for as long as the archiving runs, at least the baseline's number
            during += commits(j, a.commits, done)
        t.join()
        took = time.perf_counter() - started
        j.close()
    print(f"baseline commits ({len(base)}):  {ms(base)}")
    print(f"while archiving ({len(during)}): {ms(during)}  [{len(held)} segments in {took:.1f} s]")
    print(f"delete transactions, from asking for the write lock to its commit (queued behind the writer): {ms(held)}")
    print(
        f"ratio while archiving / baseline: median {percentile(during, 50) / percentile(base, 50):.2f}x, "
        f"p99 {percentile(during, 99) / percentile(base, 99):.2f}x, max {max(during) / max(base):.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
