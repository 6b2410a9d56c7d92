"""Where the event loop's thread spends its CPU a round, without a profiler: bench/footprint.py --wakeups.

cProfile triples the daemon's CPU and charges most of it to whatever makes many small calls, so its picture of a
round is not the round's. The daemon runs instead under COUNTED (told the first and the last measured
round.completed by SIGUSR1 and SIGUSR2, like --profile), which counts and times, on the thread's CPU clock:
- each turn of the loop (`_run_once`) and the selector's `select` in it (the kernel's poll and its bookkeeping);
- each callback the loop runs (`Handle._run`), by source: a task's step by its coroutine, a reader callback by its
  function (the MQTT socket, a device's pty), a timer or call_soon by its function.
Two clock reads per callback cost about 1 us each: a round of ~1,000 callbacks reads some 1-2 ms more than it used.
"""

from __future__ import annotations

import json
from pathlib import Path

import procfs

# The wrap's output, one JSON object: {"turns": n, "turn_cpu": s, "select": n, "select_cpu": s,
# "handles": {source: [count, cpu seconds]}}.
COUNTED = (
    procfs.WRAP_ARGS
    + """
import asyncio, asyncio.base_events, asyncio.events, functools, json, selectors, signal, time
open(out, "w").close()
on = [False]
clock = time.thread_time
stats = {"turns": 0, "turn_cpu": 0.0, "select": 0, "select_cpu": 0.0, "handles": {}}
handles = stats["handles"]
def source(handle):
    cb = handle._callback
    while isinstance(cb, functools.partial):
        cb = cb.func
    owner = getattr(cb, "__self__", None)
    if isinstance(owner, asyncio.Task):
        coro = owner.get_coro()
        name = getattr(coro, "__qualname__", type(coro).__name__)
        task = owner.get_name()
        named = "" if task.startswith("Task-") else f" [{task}]"  # a supervised task's name (controller/shell/tasks.py)
        return f"task {name}{named} ({getattr(cb, '__name__', '?')})"
    if isinstance(owner, asyncio.Future):
        return f"future {getattr(cb, '__name__', '?')}"
    kind = "timer" if isinstance(handle, asyncio.TimerHandle) else "callback"
    module = getattr(cb, "__module__", None) or type(owner).__name__
    name = getattr(cb, "__qualname__", None) or repr(cb)[:60]
    return f"{kind} {module}.{name}"
run = asyncio.events.Handle._run
def counted_run(self):
    if not on[0]:
        return run(self)
    key = source(self)  # before: a handle cancelled by its own callback has none left after
    start = clock()
    try:
        return run(self)
    finally:
        entry = handles.get(key)
        if entry is None:
            entry = handles[key] = [0, 0.0]
        entry[0] += 1
        entry[1] += clock() - start
asyncio.events.Handle._run = counted_run
run_once = asyncio.base_events.BaseEventLoop._run_once
def counted_run_once(self):
    if not on[0]:
        return run_once(self)
    start = clock()
    try:
        return run_once(self)
    finally:
        stats["turns"] += 1
        stats["turn_cpu"] += clock() - start
asyncio.base_events.BaseEventLoop._run_once = counted_run_once
select = selectors.EpollSelector.select
def counted_select(self, timeout=None):
    if not on[0]:
        return select(self, timeout)
    start = clock()
    try:
        return select(self, timeout)
    finally:
        stats["select"] += 1
        stats["select_cpu"] += clock() - start
selectors.EpollSelector.select = counted_select
def start(*_):
    on[0] = True
def stop(*_):
    on[0] = False
    with open(out, "w") as f:
        json.dump(stats, f)
signal.signal(signal.SIGUSR1, start)
signal.signal(signal.SIGUSR2, stop)
"""
    + procfs.WRAP_RUN
)


def report(path: Path, rounds: int, top: int = 25) -> str:
    """The loop's turns and callbacks a round, the costliest sources first."""
    if rounds <= 0:
        return "wakeups: no measured rounds"
    stats = json.loads(path.read_text() or "{}")
    if not stats:
        return f"wakeups: {path} is empty (the daemon was not told the last round)"
    handles: dict[str, list[float]] = stats["handles"]
    total_n = sum(n for n, _ in handles.values())
    total_cpu = sum(cpu for _, cpu in handles.values())
    lines = [
        f"event loop a round over {rounds} rounds (thread CPU, census overhead included): "
        f"{stats['turns'] / rounds:.0f} turns {stats['turn_cpu'] / rounds * 1e3:.2f} ms, of which select "
        f"{stats['select_cpu'] / rounds * 1e3:.2f} ms and {total_n / rounds:.0f} callbacks "
        f"{total_cpu / rounds * 1e3:.2f} ms",
        f"{'callbacks':>9} {'ms':>6}  source (a round)",
    ]
    for key, (n, cpu) in sorted(handles.items(), key=lambda kv: -kv[1][1])[:top]:
        lines.append(f"{n / rounds:9.1f} {cpu / rounds * 1e3:6.3f}  {key}")
    return "\n".join(lines)
