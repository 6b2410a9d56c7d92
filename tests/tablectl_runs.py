"""`tablectl` as the tests run it: one command in a child process (`tablectl`), as an operator's shell runs it, or the
same main() in this process (`in_process`), where a test reads its output from capsys. The e2e, journal and release
tests share these; a test that needs the process itself (its stdout line by line, a signal) starts `TABLECTL` with
Popen (tests/e2e/sim_devices.py). `here` is `in_process` for a helper that has no test's capsys (the floor's)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from controller.cli.main import main

TABLECTL = [sys.executable, "-m", "controller.cli"]
# No state of the machine's own: a command that falls back to its default journal (~/.local/state/tablectl/) finds
# nothing there rather than another run's or a developer's.
NO_STATE = {"XDG_STATE_HOME": "/nonexistent"}


def tablectl(
    *args: str | Path, timeout: float = 120, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """One `tablectl` command run to its end in a child process, its output captured and no stdin. `env` replaces
    the environment (the release tests' installed copy); without it, this one's with NO_STATE. `timeout` only bounds
    a failure."""
    return subprocess.run(
        [*TABLECTL, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        check=False,
        env=dict(env) if env is not None else {**os.environ, **NO_STATE},
    )


def in_process(capsys: pytest.CaptureFixture[str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    """One `tablectl` command through this process's main(), the console script's, its output read from capsys;
    argparse's usage errors (SystemExit) give their exit status."""
    # What the fixtures printed before (the journal's own "journal opened" line, while structlog is still at its
    # defaults, as when the module runs first) is not the command's output.
    capsys.readouterr()
    try:
        rc = main([str(a) for a in args])
    except SystemExit as exit_:
        rc = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess([str(a) for a in args], rc, out, err)


def here(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`in_process` without capsys: the command's stdout and stderr (its log lines too: they go to the stderr of the
    moment) caught in strings of its own. A command run this way costs no interpreter start and import of its verb
    (some 0.4 s each, seconds on a loaded machine); a test of the process itself (its exit on a signal, a hang a
    timeout bounds, its environment) runs `tablectl` instead. NO_STATE holds for the command as for `tablectl`'s
    child."""
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _no_state():
        try:
            rc = main(argv)
        except SystemExit as exit_:
            rc = int(exit_.code or 0)
    return subprocess.CompletedProcess(argv, rc, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _no_state() -> Iterator[None]:
    """NO_STATE in this process's environment while a command runs in it; what was there before, after."""
    saved = {name: os.environ.get(name) for name in NO_STATE}
    os.environ.update(NO_STATE)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
