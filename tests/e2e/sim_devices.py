"""`tablectl sim-devices` for the demo table in a process of its own, as an operator runs it beside `tablectl run`:
what the end-to-end tests of the two share."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.tablectl_runs import TABLECTL

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "configs" / "demo.toml"


def read_until(proc: subprocess.Popen[str], marker: str, lines: list[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:  # the process's own output paces the test; the fixture's timeout bounds it
        lines.append(line)
        if marker in line:
            return
    raise AssertionError(f"process ended before printing {marker!r}:\n{''.join(lines)}")


def started(command: list[str]) -> subprocess.Popen[str]:
    """`command` started as a table's tests watch it: its stdout read line by line as printed (read_until), its
    stderr dropped, no stdin (a Ctrl-C test sends SIGINT itself)."""
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


@contextmanager
def running_simulators(
    ports: Path, env: Mapping[str, str] | None = None, config: Path = DEMO, extra: Sequence[str] = ()
) -> Iterator[Path]:
    """The simulated devices of `config` (the demo table's) running, their ports written to `ports` (yielded); stopped
    by Ctrl-C, which must end them cleanly. `extra`: more of sim-devices' options (--seed, --state-file)."""
    proc = subprocess.Popen(
        [*TABLECTL, "sim-devices", "--config", str(config), "--ports-file", str(ports), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
        env=None if env is None else dict(env),
    )
    lines: list[str] = []
    try:
        read_until(proc, "simulators running", lines)
        yield ports
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
