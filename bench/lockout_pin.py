"""`bench/lockout.py --pin`: the controller's process on one core, the simulators' process on the other.

Real wager stations are hardware of their own; on this machine the simulators share two cores with the controller, so
a slow lock-out can be the simulators' process waiting for a core (docs/performance-history.md, Part 13). Pinned, the
two processes stop competing for one core, though each still shares its core with whatever else the machine runs.
Every thread of a process is pinned (Linux's affinity is a thread's own: the journal's writer thread and the loop
thread are both the controller's), and unpinning gives every thread back the cores it started with.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MODES = ("off", "on", "alternate")
# --pin alternate: trials switch between unpinned and pinned every this many, so both see the same machine load.
BLOCK = 50
UNPINNED = "unpinned (either process on any core)"


def threads(pid: int) -> list[int]:
    """The thread ids of a process (/proc/PID/task): sched_setaffinity(pid) alone would pin only its main thread."""
    return sorted(int(t.name) for t in Path(f"/proc/{pid}/task").iterdir())


@dataclass(frozen=True)
class Pinning:
    """Which cores each process may run on when pinned, and the cores both had before (given back when unpinned)."""

    controller_pid: int
    sims_pid: int
    sims_core: int
    controller_core: int
    before: frozenset[int]

    @classmethod
    def for_processes(cls, sims_pid: int) -> Pinning:
        cores = sorted(os.sched_getaffinity(0))
        if len(cores) < 2:
            raise SystemExit(
                f"bench: --pin needs two cores this process may use, it may use {cores}: run without --pin, or give "
                "it two (taskset -c 0,1)"
            )
        return cls(os.getpid(), sims_pid, cores[1], cores[0], frozenset(cores))

    @property
    def label(self) -> str:
        return f"pinned (controller on CPU {self.controller_core}, simulators on CPU {self.sims_core})"

    def pin(self) -> str:
        """Pin both processes, every thread; what was pinned, for the output."""
        mine = self._set(self.controller_pid, {self.controller_core})
        theirs = self._set(self.sims_pid, {self.sims_core})
        return (
            f"pinned the controller (pid {self.controller_pid}, all {mine} threads: the loop's, the journal writer's "
            f"and asyncio's) to CPU {self.controller_core}, the simulators (pid {self.sims_pid}, all {theirs} threads) "
            f"to CPU {self.sims_core}"
        )

    def unpin(self) -> None:
        self._set(self.controller_pid, set(self.before))
        self._set(self.sims_pid, set(self.before))

    @staticmethod
    def _set(pid: int, cores: set[int]) -> int:
        """Every thread of `pid` on `cores`, read back from the OS; how many threads."""
        tids = threads(pid)
        for tid in tids:
            os.sched_setaffinity(tid, cores)
        for tid in tids:
            if os.sched_getaffinity(tid) != cores:
                raise SystemExit(f"bench: thread {tid} of pid {pid} runs on {os.sched_getaffinity(tid)}, not {cores}")
        return len(tids)


def pinned_trial(mode: str, trial: int) -> bool:
    """Whether trial number `trial` (from 0) runs pinned: every trial with `on`, none with `off`, and with `alternate`
    blocks of BLOCK trials, unpinned first."""
    if mode == "alternate":
        return (trial // BLOCK) % 2 == 1
    return mode == "on"


def trial_pinning(trials: int, mode: str, sims_pid: int | None) -> Iterator[str]:
    """Pins or unpins the two processes before each trial as `mode` says and yields the trial's label (UNPINNED or
    the Pinning's); says once on stdout what was pinned; leaves both processes unpinned when done."""
    pinning = Pinning.for_processes(sims_pid) if sims_pid is not None and mode != "off" else None
    pinned, said = False, False
    try:
        for i in range(trials):
            if pinning is not None and pinned_trial(mode, i) != pinned:
                pinned = not pinned
                if not pinned:
                    pinning.unpin()
                elif (what := pinning.pin()) and not said:
                    print(what, flush=True)  # the same every time: once
                    said = True
            yield pinning.label if pinned and pinning is not None else UNPINNED
    finally:
        if pinning is not None and pinned:
            pinning.unpin()
