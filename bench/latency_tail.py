"""bench/event_latency.py's slowest events, stage by stage: where the 1 % above the p99 spent their time.

Each stepped event carries CLOCK_MONOTONIC stamps from the measured process and the subscriber's (one clock on Linux):
its step returned; its commit handed to the writer thread; the writer's append began; SQLite's COMMIT returned (the
WAL's fsync); the anchor file written (the append returned); the events offered to the publisher on the loop; taken
by the publisher's drain; its PUBLISH written to the socket; the kernel's arrival stamp on the subscriber's socket;
the subscriber handing it over. The stages between them add up to the event's latency exactly, so the table below says
which stage owns the tail and which the rest, and what ran beside the slow ones (the anchor's fdatasync, a WAL
checkpoint, a garbage collection). "written" is stamped once paho's publish returned on the loop: a loop thread kept
from running after its send (the GIL, the CPU) stamps it late, and the broker's stage comes out short, even negative.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

import benchlib

# (name, stamp it starts at, stamp it ends at); consecutive, so they add up to step -> received.
STAGES = (
    ("step -> handed to the writer (records built; a group's earlier steps wait for the rest)", "step", "handed"),
    ("handed -> the writer thread's append began (its wake-up)", "handed", "began"),
    ("the append's statements before COMMIT (the rows, the state, the manifest)", "began", "sql_commit"),
    ("SQLite's COMMIT (the WAL's frames written and fsynced)", "sql_commit", "wal"),
    ("the anchor file written (pwrite)", "wal", "committed"),
    ("committed -> offered on the loop (the loop's wake-up)", "committed", "offered"),
    ("offered -> taken by the publisher's drain (its turn)", "offered", "taken"),
    ("taken -> written to the socket (bodies, paho, the batch's earlier events)", "taken", "written"),
    ("written -> on the subscriber's socket (the broker)", "written", "arrived"),
    ("on its socket -> the subscriber has it (the subscriber)", "arrived", "received"),
)


def stamps(seen: dict[str, Any], received: dict[int, int]) -> dict[int, dict[str, int]]:
    """seq -> every stamp of that event, for the events that have them all."""
    written = {int(json.loads(body)["seq"]): ns for ns, body in seen["written"]}
    out: dict[int, dict[str, int]] = {}
    for seq, step in seen["step_ns"].items():
        commit = seen["commit_of"].get(seq)
        if commit is None:
            continue
        handed, began, sql_commit, wal, committed = seen["commits"][commit]
        at = {"step": step, "handed": handed, "began": began, "sql_commit": sql_commit, "wal": wal}
        at["committed"] = committed
        # Taken from the outbox before (or instead of) its offer: its offer stage is nil, its turn counted from there.
        taken = seen["taken_ns"].get(seq)
        offered = seen["offered_ns"].get(seq, taken)
        if offered is not None and taken is not None:
            offered = min(offered, taken)
        at |= {"offered": offered, "taken": taken, "written": written.get(seq)}
        at |= {"arrived": seen["arrived_ns"].get(seq), "received": received.get(seq)}
        if all(v is not None for v in at.values()):
            out[seq] = at
    return out


def _overlaps(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(a < end and b > start for a, b in spans)


def report(seen: dict[str, Any], received: dict[int, int]) -> None:
    """Print the stages of the slowest 1 % against every event's, and what ran beside the slow ones."""
    events = stamps(seen, received)
    if len(events) < 100:
        print(f"  (the tail's stages: {len(events)} events carry every stamp, too few)")
        return
    total = {q: (at["received"] - at["step"]) / 1e6 for q, at in events.items()}
    p99 = benchlib.percentile(list(total.values()), 99)
    slow = [q for q, ms in total.items() if ms >= p99]
    print(
        f"the slowest 1 % ({len(slow)} events at or above p99 {p99:.2f} ms), stage by stage (mean ms; every event's):"
    )
    owners: dict[str, int] = {}
    for name, a, b in STAGES:
        tail = [(events[q][b] - events[q][a]) / 1e6 for q in slow]
        every = [(at[b] - at[a]) / 1e6 for at in events.values()]
        print(
            f"  {name}: {statistics.fmean(tail):.2f} (max {max(tail):.2f}); every event's mean "
            f"{statistics.fmean(every):.2f}, p99 {benchlib.percentile(every, 99):.2f}"
        )
    for q in slow:
        longest = max(STAGES, key=lambda st: events[q][st[2]] - events[q][st[1]])[0]
        owners[longest] = owners.get(longest, 0) + 1
    print(
        "  the longest stage of each slow event: "
        + "; ".join(f"{n} {name}" for name, n in sorted(owners.items(), key=lambda kv: -kv[1]))
    )
    syncs, checkpoints = seen["syncs"], seen["checkpoints"]
    gcs = [(a, b) for a, b, _ in seen["gc"]]
    waited_sync = sum(_overlaps(syncs, events[q]["handed"], events[q]["began"]) for q in slow)
    waited_cp = sum(_overlaps(checkpoints, events[q]["handed"], events[q]["began"]) for q in slow)
    collected = sum(_overlaps(gcs, events[q]["step"], events[q]["received"]) for q in slow)
    beside = sum(_overlaps(syncs, events[q]["committed"], events[q]["received"]) for q in slow)
    print(
        f"  of them: handed while the writer still synced an anchor {waited_sync}, or checkpointed {waited_cp}; "
        f"a collection on the way {collected}; their own anchor's fdatasync beside their publish {beside}; "
        f"positions in the step {sorted(seen['position'][q] + 1 for q in slow)}"
    )


def after_checkpoints(seen: dict[str, Any]) -> None:
    """SQLite's COMMIT of the first step commit after each idle checkpoint against the others', in the same run: the
    WAL's restart (a header written and synced before the frames) fell to that commit until the checkpoint did it
    itself (controller.store.wal; `--no-wal-restart` puts it back on the commit, to compare)."""
    checkpoints = sorted(end for _, end in seen["checkpoints"])
    if not checkpoints:
        print("  (no WAL checkpoint while the table played)")
        return
    first: list[float] = []
    rest: list[float] = []
    last_began = 0
    for _, began, sql_commit, wal, _ in seen["commits"]:
        after = any(last_began < end <= began for end in checkpoints)
        (first if after else rest).append((wal - sql_commit) / 1e6)
        last_began = began
    spans = seen["checkpoints"]
    held = [
        (min(end, began) - handed) / 1e6
        for handed, began, *_ in seen["commits"]
        for start, end in spans
        if start < began and end > handed
    ]
    took = [(end - start) / 1e6 for start, end in spans]
    restarts = [(end - start) / 1e6 for start, end in seen.get("restarts", [])]
    print(
        f"  the WAL restarted by {len(restarts)} of them"
        + (f", p50 {statistics.median(restarts):.2f} ms, max {max(restarts):.2f} ms" if restarts else "")
    )
    print(
        f"  the {len(spans)} idle checkpoints: p50 {statistics.median(took):.2f} ms, max {max(took):.2f} ms; step "
        f"commits handed while one ran {len(held)}" + (f", waiting up to {max(held):.2f} ms for it" if held else "")
    )
    if first and rest:
        print(
            f"  SQLite's COMMIT, the first step commit after each of {len(first)} checkpoints: p50 "
            f"{statistics.median(first):.2f} ms, mean {statistics.fmean(first):.2f} ms; the other {len(rest)}: p50 "
            f"{statistics.median(rest):.2f} ms, mean {statistics.fmean(rest):.2f} ms"
        )
