"""A link controller stopped (SIGTERM, as systemd stops it) says so in its log: the floor's service logs `floor
stopping`, the link's said nothing at all, so an operator reading journald saw its last command and then silence,
and could not tell a stop from a hang (found stopping each service on a floor operator's first day)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.broker import Mosquitto
from tests.floor.conftest import wait_for
from tests.link.conftest import LinkProcess, link_toml

pytestmark = [pytest.mark.floor, pytest.mark.e2e]


def test_a_stopped_link_logs_its_stop(mosquitto: Mosquitto, link_db: str, tmp_path: Path, unique_id: str) -> None:
    config = tmp_path / "link.toml"
    config.write_text(link_toml(link_db, mosquitto.url, unique_id))
    (tmp_path / "logs").mkdir()
    process = LinkProcess(config, tmp_path / "logs")
    process.start()
    try:
        wait_for(lambda: "listening for the tables" in process.log(), 60, "the link ready")
    finally:
        status = process.stop()
    assert status == 0, process.log()
    said = process.log().splitlines()
    stopping = [line for line in said if '"link stopping"' in line]
    assert len(stopping) == 1 and '"failed": false' in stopping[0], process.log()
    assert '"link stopped"' in said[-1], process.log()
