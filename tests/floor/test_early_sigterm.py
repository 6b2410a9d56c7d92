"""A SIGTERM that reaches `tablectl floor` before its handler is installed (its interpreter's start and imports, the
config's read: the handler comes first in the event loop, before any connection) ends it by the signal's default
action, exit status -15: the archive and the broker's session are not touched yet, so the next start archives every
message the broker held for the floor, as after a kill -9 (docs/supervision.md, "A SIGTERM before the handlers")."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.broker import Mosquitto, fresh_id
from tests.floor.conftest import FloorProcess, count, floor_toml, wait_for
from tests.floor.qos1_events import publish_events

pytestmark = [pytest.mark.e2e, pytest.mark.floor]


def test_a_sigterm_before_the_handler_loses_nothing_the_broker_holds(
    mosquitto: Mosquitto, floor_dsn: str, tmp_path: Path
) -> None:
    prefix = fresh_id("early")
    floor = FloorProcess(tmp_path / "floor.toml", tmp_path)
    floor.config.write_text(floor_toml(floor_dsn, mosquitto.url, prefix, f"floor-{prefix}"))
    try:
        floor.start()  # the floor's session at the broker, kept while the floor is away
        wait_for(lambda: "subscribed to the tables" in floor.log(), 60, "the floor to subscribe")
        assert floor.stop() == 0, floor.log()
        publish_events(mosquitto, prefix, "t1", range(1, 41))  # held by the broker for the floor's session
        floor.start()
        proc = floor.proc
        assert proc is not None
        proc.send_signal(signal.SIGTERM)  # at once: the interpreter is still starting (its imports take ~0.5 s)
        assert proc.wait(timeout=30) == -signal.SIGTERM, floor.log()
        assert count(floor_dsn, "SELECT count(*) FROM events") == 0
        floor.start()
        wait_for(lambda: count(floor_dsn, "SELECT count(*) FROM events") == 40, 60, "the events the broker held")
        assert count(floor_dsn, "SELECT count(DISTINCT seq) FROM events") == 40
        assert floor.stop() == 0, floor.log()
    finally:
        floor.kill()
