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

Whose time a round is (`split`): the service's inbox stamps when each input reached the controller, so each gap
between two batches splits into the outside's part (until the input arrived: its frame on the wire, the devices' and
the people's process) and the controller's (the input queued while the loop did other work: publishing, reading
other lines). The frames a device command writes while the step awaits it are counted too: their line time and
their ACKs' is the wire's part of that wait, the rest the device's answer and the host's read. The controller's own
time is its queueing, its stepping and its commits; the bench's simulators count what each line carried
(drivers/sim/line.py), whose busiest line is the wire's bound.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import procfs

# The wrap's output, one JSON object: {"wall": [t0, t1], "batches": [[start, end, [kinds], events, committed, arrived]],
# "commits": [[start, end]], "commands": [[start, end, [kinds], line_s]]}: `arrived` when the batch's first input was
# queued (null if not seen), `line_s` the line time of the frames the commands wrote and of their ACKs.
TIMED = (
    procfs.WRAP_ARGS
    + """
import json, signal, time
open(out, "w").close()
import asyncio
from controller.shell import inbox as inbox_mod, service as service_mod, writer as writer_mod
from drivers.reference import link_core
from drivers.reference.frames import Kind
on, log = [False], {"wall": [0.0, 0.0], "batches": [], "commits": [], "commands": []}
arrived, wire = {}, [0, {}]  # id(input) -> when queued; [commands running, line time written by link name]
BYTE_S, GAP_BYTES = 10 / 115200, 2.0  # 8N1 at the simulators' rate and gap (drivers/sim/line.py)
class StampedInbox(asyncio.Queue):
    def put_nowait(self, item):
        if on[0]:
            arrived[id(item)] = time.monotonic()
        super().put_nowait(item)
def begin(cls, devices):
    inbox = StampedInbox()
    return cls(inbox, inbox_mod.start_devices(devices, inbox.put_nowait))
inbox_mod.EarlyStart.begin = classmethod(begin)
write = link_core.LinkCore._write
async def timed_write(self, data):
    if wire[0] and on[0]:
        try:  # the ACK that answers it, in the link's version
            ack = len(self._encode(self.peer_address, 0, Kind.ACK, b"", self.version))
        except Exception:
            ack = 6
        wire[1][self.name] = wire[1].get(self.name, 0.0) + (len(data) + ack + 2 * GAP_BYTES) * BYTE_S
    await write(self, data)
link_core.LinkCore._write = timed_write
from controller.store import journal as journal_mod
stages = {}  # the writer thread's last commit: when its append began, ended, and its anchor's sync ended
append, make_durable = journal_mod.Journal.append, journal_mod.Journal.make_durable
def timed_append(self, *args, **kwargs):
    stages["append"] = time.monotonic()
    try:
        return append(self, *args, **kwargs)
    finally:
        stages["appended"] = time.monotonic()
def timed_make_durable(self):
    try:
        make_durable(self)
    finally:
        stages["durable"] = time.monotonic()
journal_mod.Journal.append, journal_mod.Journal.make_durable = timed_append, timed_make_durable
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
    first = arrived.pop(id(inputs[0]), None) if inputs else None
    for i in inputs[1:]:
        arrived.pop(id(i), None)
    out = await apply_all(self, inputs)
    if on[0]:
        committed = pending.pop("committed", False)
        row = [start, time.monotonic(), [kind(i) for i in inputs], sum(map(len, out)), committed, first]
        log["batches"].append(row)
    pending.clear()
    return out
def timed_submit(self, events, now, records):
    pending["committed"] = True
    pending["submitted"] = time.monotonic()
    stages.clear()
    return submit(self, events, now, records)
async def timed_wait(self, commit):
    try:
        await wait(self, commit)
    finally:
        if on[0] and "submitted" in pending:
            got = [stages.get(k, 0.0) for k in ("append", "appended", "durable")]
            log["commits"].append([pending["submitted"], time.monotonic(), *got])
async def timed_execute(self, commands):
    start, line_s = time.monotonic(), dict(wire[1])
    wire[0] += 1
    try:
        await execute(self, commands)
    finally:
        wire[0] -= 1
    if on[0] and commands:
        log["commands"].append([start, time.monotonic(), [type(c).__name__ for c in commands], _line_time(line_s)])
def _line_time(before):
    return max((v - before.get(k, 0.0) for k, v in wire[1].items()), default=0.0)
start_commands = service_mod.TableService._start
def timed_start(self, commands):
    start, line_s = time.monotonic(), dict(wire[1])
    wire[0] += 1
    running = start_commands(self, commands)
    def done(_f):
        wire[0] -= 1
        if on[0] and commands:
            log["commands"].append([start, time.monotonic(), [type(c).__name__ for c in commands], _line_time(line_s)])
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
class Stages:
    to_writer: float = 0.0
    append: float = 0.0
    anchor: float = 0.0
    to_loop: float = 0.0
    n: int = 0

    def __iadd__(self, parts: tuple[float, float, float, float]) -> Stages:
        self.to_writer += parts[0]
        self.append += parts[1]
        self.anchor += parts[2]
        self.to_loop += parts[3]
        self.n += 1
        return self


@dataclass
class Timeline:
    wall: float = 0.0
    busy: float = 0.0  # the loop in a step batch
    commit_wait: float = 0.0
    # The commits' wait in stages: to the writer thread, SQLite's append (its WAL fsync), the anchor's fdatasync, back
    # to the loop.
    commit_stages: Stages = field(default_factory=lambda: Stages())
    command_wait: Counter[str] = field(default_factory=Counter)  # by the batch's command kinds
    command_line: float = 0.0  # of command_after, the line time of their frames and ACKs (the longest line's)
    idle_before: Counter[str] = field(default_factory=Counter)  # the outside's part of a gap, by its first input's kind
    queued: float = 0.0  # the controller's part of the gaps: an input waiting in the inbox for the loop
    # Inputs that arrived while the batch before was still on (its commit, its device commands' ACKs): how long they
    # waited for it to end. What stepping them without waiting for that batch's ACKs could win at most.
    held: float = 0.0
    held_by: Counter[str] = field(default_factory=Counter)  # by the first input's kind
    held_on_acks: float = 0.0  # of `held`, while that batch awaited its device commands' ACKs after its commit
    command_after: float = 0.0  # the command waits past their batch's commit (a lock-out's overlaps it)
    commits_by: Counter[str] = field(default_factory=Counter)  # committing batches by their inputs' kinds
    batch_sizes: Counter[int] = field(default_factory=Counter)
    events: int = 0

    @property
    def stepping(self) -> float:
        return self.busy - self.commit_wait - self.command_after

    @property
    def own(self) -> float:
        """The controller's own time: inputs queued for the loop, the steps and their commits."""
        return self.queued + self.stepping + self.commit_wait


def _inputs(kinds: list[str]) -> str:
    counts = Counter(kinds)
    return " + ".join(f"{n}x {k}" if n > 1 else k for k, n in sorted(counts.items()))


def _after_commits(commands: list[list[Any]], commits: list[list[float]]) -> list[tuple[float, float, float]]:
    """The command waits with any part that overlapped a commit cut off (a lock-out leaves during its batch's commit:
    that part waits on the disk, not on the device)."""
    out = []
    for start, end, _kinds, line_s in commands:
        for c_start, c_end, *_ in commits:
            if c_start <= start < c_end:
                start = c_end
        if end > start:
            out.append((start, end, min(line_s, end - start)))
    return out


def read(path: Path) -> Timeline:
    log = json.loads(path.read_text())
    t = Timeline(wall=log["wall"][1] - log["wall"][0])
    last_end = log["wall"][0]
    acks = _after_commits(log["commands"], log["commits"])
    t.command_after = sum(e - s for s, e, _ in acks)
    t.command_line = sum(line_s for _, _, line_s in acks)
    for start, end, kinds, events, committed, arrived in log["batches"]:
        t.busy += end - start
        gap = max(0.0, start - last_end)
        # An input queued while the loop was in the batch before waited on the controller alone; one not stamped (queued
        # before the measured rounds) is put down to the outside.
        outside = gap if arrived is None else min(gap, max(0.0, arrived - last_end))
        t.idle_before[kinds[0] if kinds else "?"] += outside
        t.queued += gap - outside
        if arrived is not None and arrived < last_end:
            t.held += last_end - arrived
            t.held_by[kinds[0] if kinds else "?"] += last_end - arrived
            t.held_on_acks += sum(max(0.0, min(e, last_end) - max(s, arrived)) for s, e, _ in acks)
        last_end = end
        t.batch_sizes[len(kinds)] += 1
        t.events += events
        if committed:
            t.commits_by[_inputs(kinds)] += 1
    t.idle_before["(after the last batch)"] += max(0.0, log["wall"][1] - last_end)
    t.commit_wait = sum(end - start for start, end, *_ in log["commits"])
    for start, end, *got in log["commits"]:
        if len(got) == 3 and min(got) > 0:
            began, appended, durable = got
            t.commit_stages += (began - start, appended - began, durable - appended, end - durable)
    for start, end, kinds, _ in log["commands"]:
        t.command_wait[_inputs(kinds)] += end - start
    return t


Lines = dict[str, tuple[float, float]]  # seconds a round each line carried, (to its device, from it), by device id


def _mean(total: float, n: int) -> str:
    return f"{total / n * 1000:.2f}" if n else "n/a"


def split(t: Timeline, rounds: int, lines: Lines) -> list[str]:
    """Whose a round's wall time is, and the rounds/s the controller's own time and the wire each allow."""
    ms = 1000 / rounds
    commands = t.command_after
    outside = sum(t.idle_before.values())
    c = t.commit_stages
    out = [
        f"  whose time a round is (ms): the controller's own {t.own * ms:.1f} (inputs queued for the loop "
        f"{t.queued * ms:.1f}, stepping {t.stepping * ms:.1f}, awaiting commits {t.commit_wait * ms:.1f}); device "
        f"commands awaited past their commits {commands * ms:.1f} (their frames' and ACKs' line time "
        f"{t.command_line * ms:.1f}, the devices' answers and the host's read {(commands - t.command_line) * ms:.1f}); "
        "waiting on the outside "
        f"{outside * ms:.1f} (the inputs' frames, the simulators and the people)",
        f"  a commit awaited, mean (ms): to the writer thread {_mean(c.to_writer, c.n)}, SQLite's append with its WAL "
        f"fsync {_mean(c.append, c.n)}, the anchor's fdatasync {_mean(c.anchor, c.n)}, back to the loop "
        f"{_mean(c.to_loop, c.n)} ({c.n} commits)",
        f"  inputs that arrived while the batch before was still on waited {t.held * ms:.1f} ms for it to end ("
        + ", ".join(f"{k} {v * ms:.1f}" for k, v in t.held_by.most_common(4))
        + f"), {t.held_on_acks * ms:.1f} ms of it while that batch awaited its device commands' ACKs: what stepping "
        "the next input before those ACKs could win at most",
        f"  the controller's own time bounds the table to {1 / (t.own / rounds):.0f} rounds/s (its commits alone "
        f"{1 / (t.commit_wait / rounds):.0f})"
        if t.own > 0 and t.commit_wait > 0
        else "  the controller's own time: nothing measured",
    ]
    if lines:
        name, (to, back) = max(lines.items(), key=lambda kv: kv[1][0] + kv[1][1])
        each = ", ".join(f"{k} {a * 1000:.1f}+{b * 1000:.1f}" for k, (a, b) in sorted(lines.items()))
        out += [
            f"  the wire: the busiest line ({name}) carries {to * 1000:.1f} ms a round to its device and "
            f"{back * 1000:.1f} ms from it (bytes and inter-frame gaps at its baud rate): the wire alone "
            f"bounds the table to {1 / (to + back):.0f} rounds/s "
            f"({1 / max(to, back):.0f} if its two directions overlapped fully)",
            f"  each line, ms a round to+from: {each}",
        ]
    return out


def report(path: Path, rounds: int, lines: Lines | None = None, top: int = 12) -> str:
    """The timeline a round, from the wrap's file; `rounds` rounds were measured; `lines` what each simulated line
    carried over them (seconds, not a round's)."""
    if rounds < 1 or not path.exists() or path.stat().st_size == 0:
        return "  timeline: nothing recorded (fewer than 2 rounds played)"
    t = read(path)
    ms = 1000 / rounds
    commands = sum(t.command_wait.values())
    lines_out = [
        f"timeline of a round (the loop thread, {rounds} rounds): wall {t.wall * ms:.1f} ms = waiting for inputs "
        f"{(t.wall - t.busy) * ms:.1f} ms + in step batches {t.busy * ms:.1f} ms (of which awaiting commits "
        f"{t.commit_wait * ms:.1f} ms, device commands on the wire {commands * ms:.1f} ms, the rest stepping)",
        f"  {sum(t.commits_by.values()) / rounds:.1f} commits a round for {t.events / rounds:.1f} events; batches of "
        + ", ".join(f"{size} input(s): {n / rounds:.1f}" for size, n in sorted(t.batch_sizes.items())),
        *split(t, rounds, {k: (a / rounds, b / rounds) for k, (a, b) in (lines or {}).items()}),
        "  waiting on the outside, by the input that ended the wait (ms a round):",
    ]
    lines_out += [f"    {k:<40} {v * ms:7.1f}" for k, v in t.idle_before.most_common(top)]
    lines_out.append("  commits a round, by the step batch's inputs:")
    lines_out += [f"    {k:<60} {v / rounds:5.1f}" for k, v in t.commits_by.most_common(top)]
    lines_out.append("  device commands awaited (ms a round):")
    lines_out += [f"    {k:<60} {v * ms:7.1f}" for k, v in t.command_wait.most_common(top)]
    return "\n".join(lines_out)
