"""What reading the outbox off the event loop costs (controller/mqtt/offloop.py; docs/journal.md, "A disk that slows or
hangs"): the publisher's outbox read made on the loop, as before, against the same read through the publisher's thread,
alternately in one process on one journal, and how long the loop was held by each.

A read returns up to 200 rows (OUTBOX_ROWS), unpublished; `--rows` of them wait in the journal (a backlog after an
outage, a reconnect) or a few (a note's: the usual case, the offers carry the rest). Printed: each way's time a read
(p50, p99) from the ask to the rows on the loop, and the loop's longest stall meanwhile (a ticker every 1 ms), with the
ratio of the thread's time to the loop's.

    .venv/bin/python bench/outbox_read.py [--reads 400] [--rows 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from controller.core.events import DomainEvent
from controller.mqtt.offloop import JournalThread
from controller.store.journal import Journal


async def ticker(stalls: list[float], stop: asyncio.Event) -> None:
    last = time.perf_counter()
    while not stop.is_set():
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        stalls.append(now - last)
        last = now


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--reads", type=int, default=400)
    ap.add_argument("--rows", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        journal = Journal(Path(tmp) / "journal.sqlite", "T1", "boot-1")
        payload = {"seat": 3, "amount_cents": 2500, "wager": "ante"}
        for at in range(0, args.rows, 50):
            n = min(50, args.rows - at)
            journal.append([DomainEvent("wager.placed", "643a.7(c)", payload) for _ in range(n)], datetime.now(UTC))
        reads = JournalThread("journal-outbox-bench")
        times: dict[str, list[float]] = {"loop": [], "thread": []}
        stalls: dict[str, list[float]] = {"loop": [], "thread": []}
        for i in range(args.reads):
            way = "loop" if i % 2 == 0 else "thread"
            stop = asyncio.Event()
            ticks: list[float] = []
            tick = asyncio.create_task(ticker(ticks, stop))
            await asyncio.sleep(0.002)
            began = time.perf_counter()
            if way == "loop":
                rows = journal.outbox(200)
            else:
                rows = await reads.call(lambda: journal.outbox(200))
            times[way].append(time.perf_counter() - began)
            await asyncio.sleep(0.002)
            stop.set()
            await tick
            stalls[way].append(max(ticks))
            if len(rows) != min(args.rows, 200):
                raise SystemExit(f"read {len(rows)} rows, not {min(args.rows, 200)}")
        reads.close()
        journal.close()
    print(f"{args.reads // 2} reads each way of {min(args.rows, 200)} rows, alternately, one process")
    for way in ("loop", "thread"):
        q = statistics.quantiles(times[way], n=100)
        print(
            f"  {way:6}: read p50 {q[49] * 1e3:.3f} ms, p99 {q[98] * 1e3:.3f} ms; the loop's longest stall a read "
            f"p50 {statistics.median(stalls[way]) * 1e3:.2f} ms"
        )
    ratio = statistics.median(times["thread"]) / statistics.median(times["loop"])
    stall = statistics.median(stalls["thread"]) / statistics.median(stalls["loop"])
    print(f"ratio thread/loop: read time p50 {ratio:.2f}x, the loop's longest stall p50 {stall:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
