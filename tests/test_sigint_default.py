"""The tests' child processes take a Ctrl-C as an operator's shell gives it one: SIGINT at its default. A run started
in the background by a script (`pytest ... &` with no job control) starts with SIGINT ignored, and every child
inherits that (an exec keeps an ignored signal ignored; Python then installs no KeyboardInterrupt): the Ctrl-C tests'
`tablectl floor status` and `fill-rounds` never saw their SIGINT and ran out their 30 and 60 s bounds
(tests/floor/test_ctrl_c.py, test_fill_rounds_migrate_interrupted.py, test_summary_stop.py).
tests/conftest.py puts SIGINT back to Python's handler in each pytest process, so a child starts with the default."""

from __future__ import annotations

import signal
import subprocess
import sys


def test_a_child_of_the_tests_gets_sigint_at_its_default() -> None:
    child = subprocess.run(
        [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert child.stdout.strip() == "True", "the child ignores SIGINT: a Ctrl-C test's command would never end"
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
