"""Ctrl-C on a long `tablectl` command ends it with one line naming the command and exit status 130 (a shell's for a
command SIGINT ended), never Python's traceback: `tablectl par` over the 684a config (about 10 s here) printed 30 lines
of numpy's frames and died by the signal. A verb that has more to say about what it left says it itself
(`floor fill-rounds`, `journal tail --follow`); `run` closes the table on its first Ctrl-C (controller/shell/runner.py).
A real process and a real SIGINT."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.interrupt import interrupted

ROOT = Path(__file__).resolve().parents[2]


def test_ctrl_c_during_a_long_par_sheet_is_one_line_and_exit_130() -> None:
    par = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "par", "--config", str(ROOT / "configs" / "chapter-684a.toml")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )

    def analysing() -> None:
        assert par.stderr is not None
        first = par.stderr.readline()  # the log's "analysing": the sheet's work has begun
        assert '"analysing"' in first, first

    done = interrupted(par, analysing)
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert done.stderr.strip().splitlines()[-1] == "tablectl par: interrupted (Ctrl-C)", done.stderr
