"""Two floor services on one config (a `tablectl floor` run by hand while systemd runs it, or a second floor host
started with the first's config): they share the fixed client id, so the broker hands the persistent session from one
to the other, back and forth. The log said "broker connection lost; reconnecting: Disconnected during message
iteration" twice a second, with seq gaps, and never why (found on a floor operator's first day)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.broker import Mosquitto
from tests.floor.conftest import FloorProcess, floor_toml, wait_for

pytestmark = [pytest.mark.floor, pytest.mark.e2e]


def test_a_session_taken_over_names_the_other_floor(
    tmp_path: Path, floor_dsn: str, mosquitto: Mosquitto, unique_id: str
) -> None:
    config = tmp_path / "floor.toml"
    config.write_text(floor_toml(floor_dsn, mosquitto.url, unique_id, f"floor-{unique_id}"))
    first_logs, second_logs = tmp_path / "first", tmp_path / "second"
    first_logs.mkdir()
    second_logs.mkdir()
    first, second = FloorProcess(config, first_logs), FloorProcess(config, second_logs)
    first.start()
    try:
        wait_for(lambda: "subscribed to the tables" in first.log(), 60, "the first floor subscribed")
        second.start()
        wait_for(lambda: "broker connection lost" in first.log(), 60, "the first floor's session taken over")
    finally:
        second.stop()
        first.stop()
    lost = [line for line in first.log().splitlines() if "broker connection lost" in line]
    assert lost, first.log()
    assert f"'floor-{unique_id}'" in lost[0] and "a second floor service on this config" in lost[0], lost[0]
    assert "another client connected with this [mqtt] client_id" in lost[0], lost[0]
