"""A real `tablectl run` or `tablectl demo` sent SIGINT or SIGTERM once its log says it reached a stage of its start
(not after a delay): what tests/e2e/test_start_signals.py and test_demo_start_signals.py share (start26)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from tests.tablectl_runs import NO_STATE, TABLECTL

UP = "command listener subscribed"  # the table is up: a stage not said by then never will be
AT_START = {signal.SIGINT: 130, signal.SIGTERM: -signal.SIGTERM}
PLAIN = "| "  # marks a line of stderr that was not a JSON log record


def _said(line: str) -> str:
    try:
        record = json.loads(line)
    except ValueError:
        return PLAIN + line.rstrip("\n")
    return f"{record.get('event')} {record.get('stage', '')}".strip()


def spoken(said: str) -> list[str]:
    """What the process wrote on stderr that is not a log record: the operator's lines, and any traceback (a line of
    one, or asyncio's "Task was destroyed" and paho's "Exception ignored in", is not a JSON record either)."""
    return [line.removeprefix(PLAIN) for line in said.splitlines() if line.startswith(PLAIN)]


def signalled_at(
    stage: str, sig: signal.Signals, argv: Sequence[str], pids: list[int] | None = None
) -> tuple[int, str]:
    """`tablectl --log-json --log-level debug *argv` sent `sig` once its log says `stage`: its exit status and all it
    said on stderr (log records as their event and stage; other lines marked PLAIN). The process leads a session of
    its own, whose id (its pid) goes in `pids`: `left_in_session` finds a child it left running."""
    proc = subprocess.Popen(
        [*TABLECTL, "--log-json", "--log-level", "debug", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **NO_STATE, "PYTHONUNBUFFERED": "1"},
        start_new_session=True,
    )
    if pids is not None:
        pids.append(proc.pid)
    said: list[str] = []
    bound = threading.Timer(60, proc.kill)  # a start that never says the stage (nor ends) fails, not hangs
    bound.start()
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # the process's own log paces the test
            said.append(_said(line))
            if stage in said[-1]:
                proc.send_signal(sig)
                break
            if UP in said[-1]:
                break
        if not said or stage not in said[-1]:
            raise AssertionError(f"the start never said {stage!r}: {said}")
        _, rest = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{sig.name} at {stage!r} was lost: the table ran on: {said}") from None
    finally:
        bound.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, "\n".join(said + [_said(line) for line in rest.splitlines()])


def in_order(outcomes: dict[str, str], stages: Sequence[str]) -> None:
    """Each stage before the handlers is a stop at start (the signal lands within it or the next one), and the last
    one the runner's; in between, once the runner's, always the runner's."""
    assert outcomes[stages[0]] == "at start" and outcomes[stages[-1]] == "by the runner", outcomes
    seen = list(outcomes.values())
    assert seen == sorted(seen, key=["at start", "by the runner"].index), outcomes


def left_in_session(session: int) -> list[str]:
    """The command lines of the processes still in `session` (a child that outlived the process that led it)."""
    left = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile
            continue
        # Field 6 is the session id; the command's name (field 2) may hold spaces, so count from its closing bracket.
        if int(stat.rsplit(")", 1)[1].split()[3]) == session:
            left.append(cmdline.strip())
    return left
