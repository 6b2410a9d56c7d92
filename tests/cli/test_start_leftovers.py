"""What `tablectl run`'s start leaves behind is let go once the table is ready (controller/shell/leftovers.py, issue
19: resident memory): the start's executor threads end and later calls get a fresh executor; the cyclic garbage that
controller.cli.main froze with the loaded modules stays frozen (collecting it would hold the loop for a full
collection).

Each case is a fresh interpreter: freezing is process-wide, and this test process must keep its own collector."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# argv[1]: "frozen" (as controller.cli.main leaves a `tablectl run` process) or "plain" (a test calling run_table).
PROBE = """
import asyncio, gc, json, sys, threading, weakref
from controller.shell.leftovers import StartLeftovers

class Node:
    pass

def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)

kept = Node()  # alive: must stay frozen
gc.disable()
garbage = cycle()  # what loading drops with the collector off
if sys.argv[1] == "frozen":
    gc.freeze()
gc.enable()

async def main():
    loop = asyncio.get_running_loop()
    leftovers = StartLeftovers(loop)
    # Ports opening together (drivers/serial_port.py): a barrier holds each call until all four run at once, so
    # the start's pool has four threads.
    barrier = threading.Barrier(4, timeout=10)
    started = await asyncio.gather(*(loop.run_in_executor(None, lambda: (barrier.wait(), threading.current_thread())[1])
                                     for _ in range(4)))
    ready = asyncio.Event()
    ready.set()
    await leftovers.let_go(ready)
    for t in started:
        t.join(10)
    later = await loop.run_in_executor(None, lambda: threading.current_thread().name)
    return {
        "start_threads": sorted({t.name for t in started}),
        "start_threads_alive": [t.name for t in started if t.is_alive()],
        "later_thread": later,
        "garbage_collected": garbage() is None,
        "frozen": gc.get_freeze_count(),
        "kept_frozen": sys.argv[1] == "frozen" and gc.is_tracked(kept) and kept not in gc.get_objects(),
    }

print(json.dumps(asyncio.run(main())))
"""


def probe(mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_the_start_threads_end_once_ready_and_nothing_frozen_is_collected_on_the_loop() -> None:
    got = probe("frozen")
    assert got["start_threads"] == ["start_0", "start_1", "start_2", "start_3"]
    assert got["start_threads_alive"] == []  # the start's pool shut down: its idle threads ended
    assert got["later_thread"] == "asyncio_0"  # a fresh default executor, one thread for one call
    assert got["garbage_collected"] is False  # frozen at the start and left so: no full collection on the loop
    assert isinstance(got["frozen"], int) and got["frozen"] > 0
    assert got["kept_frozen"] is True


def test_a_process_that_froze_nothing_keeps_its_collector_as_it_was() -> None:
    got = probe("plain")
    assert got["start_threads_alive"] == []
    assert got["later_thread"] == "asyncio_0"
    assert got["frozen"] == 0  # nothing frozen by let_go in a process that had not frozen its start
