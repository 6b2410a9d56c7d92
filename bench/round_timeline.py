"""Where a paced round's wall time goes, and which steps commit: bench/footprint.py --timeline.

The daemon runs under TIMED (like footprint's --profile, told the first and the last measured round.completed by
SIGUSR1 and SIGUSR2), which wraps the service's and its writer's methods and records, on the loop's clock:
- each step batch (TableService.apply_all): when it started and ended, its inputs' kinds, how many events it journaled
  and whether it committed;
- each commit (JournalWriter.submit to the end of JournalWriter.wait): the loop waiting on the disk;
- each step's device commands carried out (TableService._execute, and _start for the locks that leave before the
  commit): the loop awaiting a device's frame on the wire.
Between two batches the loop waits for an input; that gap is put down to the kind of input that ended it (a card
from the shoe: the shoe's wire; a wager or a button: the people, who act on events as published over MQTT).
Only the loop's thread is timed: the writer thread's work shows as the loop waiting on a commit.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import procfs

# The wrap's output, one JSON object: {"wall": [t0, t1], "batches": [[start, end, [kinds], events, committed]],
# "commits": [[start, end]], "commands": [[start, end, [kinds]]]}.
TIMED = (
    procfs.WRAP_ARGS
    + """
import json, signal, time
open(out, "w").close()
from controller.shell import service as service_mod, writer as writer_mod
on, log = [False], {"wall": [0.0, 0.0], "batches": [], "commits": [], "commands": []}
def kind(inp):
    device = getattr(inp, "device_id", None)
    name = type(inp).__name__
    return f"{name}@{device.rstrip('0123456789_')}" if isinstance(device, str) else name
apply_all, submit, wait, execute = (
    service_mod.TableService.apply_all, writer_mod.JournalWriter.submit, writer_mod.JournalWriter.wait,
    service_mod.TableService._execute,
)
pending = {}
async def timed_apply_all(self, inputs):
    start = time.monotonic()
    out = await apply_all(self, inputs)
    if on[0]:
        committed = pending.pop("committed", False)
        log["batches"].append([start, time.monotonic(), [kind(i) for i in inputs], sum(map(len, out)), committed])
    pending.clear()
    return out
def timed_submit(self, events, now, records):
    pending["committed"] = True
    pending["submitted"] = time.monotonic()
    return submit(self, events, now, records)
async def timed_wait(self, commit):
    try:
        await wait(self, commit)
    finally:
        if on[0] and "submitted" in pending:
            log["commits"].append([pending["submitted"], time.monotonic()])
async def timed_execute(self, commands):
    start = time.monotonic()
    await execute(self, commands)
    if on[0] and commands:
        log["commands"].append([start, time.monotonic(), [type(c).__name__ for c in commands]])
start_commands = service_mod.TableService._start
def timed_start(self, commands):
    start, running = time.monotonic(), start_commands(self, commands)
    def done(_f):
        if on[0] and commands:
            log["commands"].append([start, time.monotonic(), [type(c).__name__ for c in commands]])
    running.add_done_callback(done)
    return running
service_mod.TableService.apply_all = timed_apply_all
service_mod.TableService._execute = timed_execute
service_mod.TableService._start = timed_start
writer_mod.JournalWriter.submit = timed_submit
writer_mod.JournalWriter.wait = timed_wait
def start(*_):
    on[0] = True
    log["wall"][0] = time.monotonic()
def stop(*_):
    on[0] = False
    log["wall"][1] = time.monotonic()
    with open(out, "w") as f:
        json.dump(log, f)
signal.signal(signal.SIGUSR1, start)
signal.signal(signal.SIGUSR2, stop)
"""
    + procfs.WRAP_RUN
)


@dataclass
class Timeline:
    wall: float = 0.0
    busy: float = 0.0  # the loop in a step batch
    commit_wait: float = 0.0
    command_wait: Counter[str] = field(default_factory=Counter)  # by the batch's command kinds
    idle_before: Counter[str] = field(default_factory=Counter)  # the gap before a batch, by its first input's kind
    commits_by: Counter[str] = field(default_factory=Counter)  # committing batches by their inputs' kinds
    batch_sizes: Counter[int] = field(default_factory=Counter)
    events: int = 0


def _inputs(kinds: list[str]) -> str:
    counts = Counter(kinds)
    return " + ".join(f"{n}x {k}" if n > 1 else k for k, n in sorted(counts.items()))


def read(path: Path) -> Timeline:
    log = json.loads(path.read_text())
    t = Timeline(wall=log["wall"][1] - log["wall"][0])
    last_end = log["wall"][0]
    for start, end, kinds, events, committed in log["batches"]:
        t.busy += end - start
        t.idle_before[kinds[0] if kinds else "?"] += max(0.0, start - last_end)
        last_end = end
        t.batch_sizes[len(kinds)] += 1
        t.events += events
        if committed:
            t.commits_by[_inputs(kinds)] += 1
    t.idle_before["(after the last batch)"] += max(0.0, log["wall"][1] - last_end)
    t.commit_wait = sum(end - start for start, end in log["commits"])
    for start, end, kinds in log["commands"]:
        t.command_wait[_inputs(kinds)] += end - start
    return t


def report(path: Path, rounds: int, top: int = 12) -> str:
    """The timeline a round, from the wrap's file; `rounds` rounds were measured."""
    if rounds < 1 or not path.exists() or path.stat().st_size == 0:
        return "  timeline: nothing recorded (fewer than 2 rounds played)"
    t = read(path)
    ms = 1000 / rounds
    commands = sum(t.command_wait.values())
    lines = [
        f"timeline of a round (the loop thread, {rounds} rounds): wall {t.wall * ms:.1f} ms = waiting for inputs "
        f"{(t.wall - t.busy) * ms:.1f} ms + in step batches {t.busy * ms:.1f} ms (of which awaiting commits "
        f"{t.commit_wait * ms:.1f} ms, device commands on the wire {commands * ms:.1f} ms, the rest stepping)",
        f"  {sum(t.commits_by.values()) / rounds:.1f} commits a round for {t.events / rounds:.1f} events; batches of "
        + ", ".join(f"{size} input(s): {n / rounds:.1f}" for size, n in sorted(t.batch_sizes.items())),
        "  waiting for inputs, by the input that ended the wait (ms a round):",
    ]
    lines += [f"    {k:<40} {v * ms:7.1f}" for k, v in t.idle_before.most_common(top)]
    lines.append("  commits a round, by the step batch's inputs:")
    lines += [f"    {k:<60} {v / rounds:5.1f}" for k, v in t.commits_by.most_common(top)]
    lines.append("  device commands awaited (ms a round):")
    lines += [f"    {k:<60} {v * ms:7.1f}" for k, v in t.command_wait.most_common(top)]
    return "\n".join(lines)
