"""`run` and `demo` take SIGINT and SIGTERM as the verb is chosen, before their modules load (controller/cli/main.py,
`_launched`), and the verb's main takes those very handlers over (start26): a SIGTERM in that half second ended the
process with no line. The launcher's handlers are given back whatever ends the command, its arguments refused too,
and a later main in the same process (a test's) does not take handlers given back already."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from controller.cli.main import main
from controller.shell.start_signals import StartSignals, StoppedAtStart, at_launch, taken


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


class _Signalled:
    """A descriptor whose `__set_name__` is where a SIGTERM lands: in a class being created, as in an import."""

    def __set_name__(self, owner: type, name: str) -> None:
        os.kill(os.getpid(), signal.SIGTERM)


def test_a_signal_in_a_class_being_created_stops_the_start_at_its_next_stage() -> None:
    """Raised by the handler, the stop came out of the class's creation as "RuntimeError: Error calling __set_name__"
    (`tablectl demo`: "unexpected RuntimeError ... (a bug)", exit 1)."""
    start = StartSignals().install()
    try:

        class Seat:
            known = _Signalled()

        with pytest.raises(StoppedAtStart) as stop:
            start.reached("checking the config")
        assert (stop.value.by, stop.value.stage) == ("SIGTERM", "loading the config")  # the stage it came in
        assert Seat.known is not None
    finally:
        start.restore()
