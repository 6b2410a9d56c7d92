"""`run` and `demo` take SIGINT and SIGTERM as the verb is chosen, before their modules load (controller/cli/main.py,
`_launched`), and the verb's main takes those very handlers over (start26): a SIGTERM in that half second ended the
process with no line. The launcher's handlers are given back whatever ends the command, its arguments refused too,
and a later main in the same process (a test's) does not take handlers given back already."""

from __future__ import annotations

import signal
from pathlib import Path

from controller.cli.main import main
from controller.shell.start_signals import at_launch, taken


def test_the_verbs_main_takes_the_handlers_installed_at_launch() -> None:
    before = signal.getsignal(signal.SIGTERM)
    launched = at_launch()
    try:
        assert signal.getsignal(signal.SIGTERM) != before  # taken at launch
        assert taken() is launched  # the verb's main has those, not handlers of its own
    finally:
        launched.restore()
    assert signal.getsignal(signal.SIGTERM) == before


def test_handlers_given_back_are_not_taken_by_a_later_main() -> None:
    launched = at_launch()
    launched.restore()  # the command ended before its verb ran
    later = taken()
    try:
        assert later is not launched
    finally:
        later.restore()


def test_a_refused_command_gives_the_handlers_back(tmp_path: Path) -> None:
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    assert main(["run", "--config", str(tmp_path / "absent.toml")]) == 2  # refused: the config is not there
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
