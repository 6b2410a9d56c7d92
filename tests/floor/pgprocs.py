"""PostgreSQL's server processes, for tests that stop (SIGSTOP) or resume a cluster as a whole."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path


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


def stall(postmaster: int) -> list[int]:
    """SIGSTOP the cluster: the postmaster first, so that it forks no child after the list is read, then each child.
    A child that exited between the list and its signal (a backend ending, an autovacuum worker) is left out: it is
    no process to stall, and its ProcessLookupError failed a test on a loaded CI machine."""
    os.kill(postmaster, signal.SIGSTOP)
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
