"""PostgreSQL's server processes, for tests that stop (SIGSTOP) or resume a cluster as a whole."""

from __future__ import annotations

import os
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
