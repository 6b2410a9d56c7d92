"""PostgreSQL's server processes, for tests that stop (SIGSTOP) or resume a cluster as a whole."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

STOP_WITHIN_S = 10.0


def server_processes(postmaster: int) -> list[int]:
    """The postmaster and its backends: each backend is in a process group of its own (setsid), so a group's
    signal would miss them; they are found by their parent in /proc."""
    out = [postmaster]
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue  # gone meanwhile
            if int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:
                out.append(int(entry.name))
    return out


def state(pid: int) -> str | None:
    """The process's state letter in /proc (T: stopped), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def stall(postmaster: int) -> list[int]:
    """SIGSTOP the cluster: the postmaster first, so that it forks no child after the list is read, then each child.
    The list is read once the postmaster is stopped, not once the signal is sent: kill() returns before the process
    stops, and a fork it was making meanwhile (on another core) made a child after the list that ran on.
    A child that exited between the list and its signal (a backend ending, an autovacuum worker) is left out: it is
    no process to stall, and its ProcessLookupError failed a test on a loaded CI machine."""
    os.kill(postmaster, signal.SIGSTOP)
    deadline = time.monotonic() + STOP_WITHIN_S
    while state(postmaster) not in ("T", "t", None):  # the kernel tells no one else when a process stopped
        if time.monotonic() > deadline:
            raise RuntimeError(f"the postmaster {postmaster} did not stop within {STOP_WITHIN_S} s of its SIGSTOP")
        time.sleep(0.001)
    stalled = [postmaster]
    for pid in server_processes(postmaster)[1:]:
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            continue
        stalled.append(pid)
    return stalled


def resume(stalled: list[int]) -> None:
    """SIGCONT what stall() stopped; one gone meanwhile (killed by the test) is skipped."""
    for pid in stalled:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
