"""A SIGINT or SIGTERM at a stage of `tablectl demo --floor`'s start stops it with one line and `tablectl run`'s exit
statuses, and leaves none of its children running (start26). Its start took neither: a SIGTERM before the floor's
handlers ended it by the signal's default action with no line, and one once they were in went unheard until the link
had opened and every table had started (then killed with SIGKILL, mid-write for all it knew); a Ctrl-C ended it with
status 0. The controller hands the floor its StartSignals (controller/shell/start_signals.py); each table, a `tablectl
demo` of its own, is stopped at once with SIGTERM, as systemd stops a table.

Real processes throughout: the demo with its private PostgreSQL and mosquitto, the link controller and the tables on
simulated devices; each is sent the signal once its log says it reached the stage (not after a delay). The demo leads
a session of its own: a child of it still in that session once it ended is one it left running."""

from __future__ import annotations

import signal

import pytest

from tests.e2e.start_stages import AT_START, left_in_session, signalled_at, spoken

pytestmark = [pytest.mark.floor, pytest.mark.e2e]

PROGRESS = "tablectl demo --floor: starting a private"  # what the demo says of its servers as they start
# (stage, signal): one run each, both signals, each stage a different child's (a start costs some 7 s).
SIGNALLED = (
    ("checking the config", signal.SIGTERM),
    ("starting the private servers", signal.SIGINT),
    ("opening the link", signal.SIGTERM),
    ("starting the tables", signal.SIGINT),
    ("starting the tables", signal.SIGTERM),
)


@pytest.mark.parametrize(("stage", "sig"), SIGNALLED, ids=[f"{s.replace(' ', '-')}-{g.name}" for s, g in SIGNALLED])
def test_a_signal_in_the_floor_demos_start_stops_it_with_a_line_and_leaves_nothing_running(
    stage: str, sig: signal.Signals
) -> None:
    sessions: list[int] = []
    argv = ["demo", "--floor", "--seed", "3", "--http", "127.0.0.1:0"]
    status, said = signalled_at(stage, sig, argv, sessions)
    lines = [line for line in spoken(said) if not line.startswith(PROGRESS)]
    if "handlers installed" in said:  # landed once the floor's own handlers were in: its stop, status 0
        assert status == 0 and lines == [], (stage, status, said)
    else:
        assert status == AT_START[sig], (stage, status, said)
        assert len(lines) == 1 and lines[0].startswith(f"tablectl demo --floor: stopped by {sig.name}"), said
    assert left_in_session(sessions[0]) == [], "the demo left children running"


def test_a_signal_once_the_floor_is_up_stops_it_with_status_0() -> None:
    sessions: list[int] = []
    status, said = signalled_at(
        "handlers installed", signal.SIGINT, ["demo", "--floor", "--http", "127.0.0.1:0"], sessions
    )
    assert status == 0 and [line for line in spoken(said) if not line.startswith(PROGRESS)] == [], said
    assert left_in_session(sessions[0]) == [], "the demo left children running"
