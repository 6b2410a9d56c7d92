"""A real `tablectl link` stopped (SIGTERM, as systemd stops it) at its start while PostgreSQL does not answer yet: the
stop ends the link at once, said in its log, instead of once the database answers, which the old retry loop waited
for (systemd's TimeoutStopSec ended it with a SIGKILL)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.broker import Mosquitto
from tests.floor.conftest import wait_for
from tests.link.conftest import LinkProcess, link_toml

pytestmark = [pytest.mark.floor, pytest.mark.e2e]


def test_a_stop_while_the_database_is_unreachable_at_the_start_ends_the_link(
    mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    with socket.socket() as closed:  # bound, never listening: a connection to it is refused, and no one takes it
        closed.bind(("127.0.0.1", 0))
        dsn = f"host=127.0.0.1 port={closed.getsockname()[1]} user=tablectl dbname=link connect_timeout=5"
        config = tmp_path / "link.toml"
        config.write_text(link_toml(dsn, mosquitto.url, unique_id))
        (logs := tmp_path / "logs").mkdir()
        link = LinkProcess(config, logs)
        try:
            link.start()
            wait_for(lambda: "PostgreSQL lost; reconnecting" in link.log(), 60, "the link waiting for PostgreSQL")
            # On the old code the retry loop never looked at the stop: the 30 s guard of stop() ran out.
            assert link.stop() == 0, link.log()
        finally:
            link.kill()
    said = [json.loads(line)["event"] for line in link.log().splitlines() if line.startswith("{")]
    assert "link stopped before its database was reachable" in said, link.log()
    assert "Traceback" not in link.log()
