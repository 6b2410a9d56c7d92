"""A real process interrupted as an operator's Ctrl-C interrupts it: SIGINT once it has reached a known point (not after
a sleep), then run to its end. Shared by the tests of what each command says when interrupted."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable


def interrupted(proc: subprocess.Popen[str], reached: Callable[[], object]) -> subprocess.CompletedProcess[str]:
    """`proc` sent SIGINT once `reached()` returns (it waits for the point: a lock waited on, a line printed), then its
    exit status and output; killed if it does not end within 60 s (the failure is then the test's, not a hang)."""
    try:
        reached()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
