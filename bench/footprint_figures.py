"""bench/footprint.py's figures of one run and how it prints them against issue 19's targets."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from drivers.sim.line import default_timing

TARGET_RSS_MB = 45.0  # issue 19 (issue 6 asked 80)
TARGET_IDLE_CPU_PERCENT = 1.0


@dataclass
class Figures:
    rss_open: float = 0.0  # once the table opened
    resident_open: tuple[float, float, list[tuple[str, float]]] = (0.0, 0.0, [])  # resident_parts() then
    rss_max: float = 0.0
    hwm: float = 0.0
    rss_end: float = 0.0
    rounds: int = 0
    idle_cpu: float = 0.0
    # The daemon's CPU and the wall time from the first round.completed to the last: the controller alone, since the
    # simulators and the people run in this process.
    play: tuple[float, float] = (0.0, 0.0)
    play_end: tuple[float, float] = (0.0, 0.0)
    # The main thread's share of that CPU (the event loop); the rest is the journal writer's thread.
    play_main: tuple[float, float] = (0.0, 0.0)
    # This process's CPU (the simulators, the people and the MQTT follower, one loop) at those two round.completed.
    play_bench: tuple[float, float] = (0.0, 0.0)
    # The events published between those two round.completed, as received: what the publish baseline sends again.
    published: list[bytes] = field(default_factory=list)
    journal: Path = Path()  # the daemon's: its commits (and state size) at those two round.completed (commitbound)
    commits: list[tuple[int, int]] = field(default_factory=list)
    # What each simulated line had carried (seconds, to its device and from it) at those two round.completed.
    lines: list[dict[str, tuple[float, float]]] = field(default_factory=list)


def print_memory(figures: Figures, base_rss: float) -> None:
    """RSS against the target, and what was resident with the table open."""
    print(f"`tablectl run`, seven-seat 643a table on simulated devices, {figures.rounds} rounds played")
    print(f"baseline `python -c 'import controller.cli, controller.shell.runner'`: RSS {base_rss:.1f} MB")
    verdict = "meets" if figures.hwm <= TARGET_RSS_MB else "misses"
    print(
        f"daemon RSS: {figures.rss_open:.1f} MB with the table open, {figures.rss_max:.1f} MB at most while "
        f"playing, {figures.rss_end:.1f} MB after; peak (VmHWM) {figures.hwm:.1f} MB = {figures.hwm / base_rss:.2f}x "
        f"the baseline; {verdict} the target of {TARGET_RSS_MB:g} MB"
    )
    anonymous, pss, files = figures.resident_open
    top = ", ".join(f"{name} {mb:.1f}" for name, mb in files[:5])
    print(
        f"what was resident with the table open (/proc/<pid>/smaps): anonymous {anonymous:.1f} MB (Python's objects, "
        f"malloc, the threads), files {sum(mb for _, mb in files):.1f} MB ({top}, ...); proportional share (Pss) "
        f"{pss:.1f} MB"
    )


def print_cpu(figures: Figures, publish_cpu: float) -> None:
    """CPU per round and rounds/s against the targets, beside a bare aiomqtt process publishing the same events."""
    played = figures.rounds - 1
    if played > 0 and figures.play_end[1] > figures.play[1]:
        cpu_ms = (figures.play_end[0] - figures.play[0]) / played * 1000
        rate = played / (figures.play_end[1] - figures.play[1])
        lines = "paced 115200-baud lines" if default_timing().paced else "unpaced ptys"
        base_ms = publish_cpu / played * 1000
        ratio = f"{cpu_ms / base_ms:.1f}x" if base_ms > 0 else "n/a"
        print(
            f"baseline: a bare aiomqtt process publishing the same {len(figures.published)} events "
            f"({len(figures.published) / played:.0f} a round, QoS 1): {base_ms:.1f} ms of CPU a round"
        )
        print(
            f"the controller alone (simulators and people in the bench process, on {lines}), over {played} rounds: "
            f"CPU per seven-seat round {cpu_ms:.1f} ms ({ratio} the baseline; "
            f"{'meets' if cpu_ms <= 5 else 'misses'} the target of 5 ms), "
            f"{rate:.1f} rounds/s at pace 0 with the journal durable ({'meets' if rate >= 100 else 'misses'} the "
            "target of 100; the people act on events as published over MQTT)"
        )
        main_ms = (figures.play_main[1] - figures.play_main[0]) / played * 1000
        if main_ms > 0:
            print(
                f"  of which the event loop's thread {main_ms:.1f} ms a round, the journal writer's thread (commits, "
                f"fsyncs) {cpu_ms - main_ms:.1f} ms"
            )
        bench_ms = (figures.play_bench[1] - figures.play_bench[0]) / played * 1000
        print(
            f"  the outside (this process: the simulators, the people and their MQTT follower, one event loop) "
            f"{bench_ms:.1f} ms of CPU a round, busy {bench_ms * rate / 10:.0f} % of the wall time: near 100 % it, not "
            "the controller, sets the pace"
        )


def carried(lines: list[dict[str, tuple[float, float]]]) -> dict[str, tuple[float, float]]:
    """What each line carried between the two readings (seconds, to its device and from it); empty without both."""
    if len(lines) != 2:
        return {}
    first, last = lines
    return {k: (to - first.get(k, (0.0, 0.0))[0], back - first.get(k, (0.0, 0.0))[1]) for k, (to, back) in last.items()}


def print_idle(figures: Figures, base_cpu: float, idle_seconds: float) -> None:
    """The idle table's CPU against a bare aiomqtt process's."""
    print(f"baseline bare aiomqtt process, idle: {base_cpu:.3f} % of a core")
    verdict = "meets" if figures.idle_cpu < TARGET_IDLE_CPU_PERCENT else "misses"
    ratio = f"{figures.idle_cpu / base_cpu:.0f}x the baseline" if base_cpu > 0 else "the baseline used no CPU ticks"
    short = (
        ""
        if idle_seconds >= 20
        else " (under 20 s: heartbeats every 2 s and 30 s ticks are not averaged over; a smoke run, not a figure)"
    )
    print(
        f"daemon idle with the table open, over {idle_seconds:g} s: {figures.idle_cpu:.3f} % of a core "
        f"({ratio}); {verdict} the target of under {TARGET_IDLE_CPU_PERCENT:g} %{short}"
    )
