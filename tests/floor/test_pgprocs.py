"""stall() stops a server's every process, the children it forks while they are being stopped included: the parent
first, and its children listed once it is stopped, so none is forked after the list is read.
bench/floor_outage_stop.py signalled its own way, the list read first and the parent stopped with its children, so a
child forked between the two ran on (a backend answering while the bench measured a stalled server); and stall() read
the list as soon as kill() returned, before the parent had stopped, which let a fork under way slip by the same way.
A real parent forking children as fast as it can stands in for a postmaster (its forks are what the race needs, not
PostgreSQL's)."""

from __future__ import annotations

import subprocess
import sys

from tests.floor.pgprocs import resume, server_processes, stall, state

TRIALS = 40
# Up to 200 children at once, each living 3 s: a child missed by the stall is still alive (not a zombie) at the check.
FORKER = """
import os, time
alive = 0
while True:
    if alive < 200:
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        alive += 1
    else:
        os.wait()
        alive -= 1
    while alive and os.waitpid(-1, os.WNOHANG)[0]:
        alive -= 1
"""


def test_stall_leaves_no_child_of_the_parent_running() -> None:
    parent = subprocess.Popen([sys.executable, "-c", FORKER])
    try:
        for trial in range(TRIALS):
            stalled = stall(parent.pid)
            try:
                # Every process of the parent now was signalled by the stall, or had ended (a zombie its stopped
                # parent cannot reap); a child not signalled and alive was forked after the list was read.
                missed = [p for p in server_processes(parent.pid) if p not in stalled and state(p) not in ("Z", None)]
                assert missed == [], f"trial {trial}: processes of the stalled server never stopped: {missed}"
            finally:
                resume(stalled)
    finally:
        parent.kill()
        parent.wait()
