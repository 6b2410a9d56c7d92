"""Two floor services on one config (a `tablectl floor` run by hand while systemd runs it, or a second floor host
started with the first's config): they share the fixed client id, so the broker hands the persistent session from one
to the other, back and forth. The log said "broker connection lost; reconnecting: Disconnected during message
iteration" twice a second, with seq gaps, and never why (found on a floor operator's first day). Now the second one
on the same archive does not start (floor/floor_lock.py): exit 2, naming the first. Two floors on two archives with
one client id still take the session from each other; their log names that cause."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from floor.pgcluster import PgCluster
from tests.broker import Mosquitto
from tests.floor.conftest import FloorProcess, floor_toml, wait_for

pytestmark = [pytest.mark.floor, pytest.mark.e2e]


def test_a_second_floor_on_the_same_archive_refuses_to_start_naming_the_first(
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
        assert second.proc is not None
        status = second.proc.wait(timeout=60)
        assert first.proc is not None and first.proc.poll() is None, first.log()  # the first archives on
    finally:
        second.stop()
        stopped = first.stop()
    said = second.log()
    assert status == 2, said
    assert f"tablectl-floor {socket.gethostname()} pid {first.proc.pid}" in said, said  # the first, by host and pid
    assert "another floor service holds this archive" in said and "systemctl stop tablectl-floor" in said, said
    assert "subscribed to the tables" not in said, said  # it never took the broker session
    assert "broker connection lost" not in first.log(), first.log()
    assert stopped == 0, first.log()


def test_a_session_taken_over_names_the_other_floor(
    tmp_path: Path, floor_dsn: str, pg_cluster: PgCluster, mosquitto: Mosquitto, unique_id: str
) -> None:
    """Each floor on an archive of its own, both on one client id: the lock does not see it, the broker does."""
    other_dsn = pg_cluster.create_database(f"floor_other_{unique_id}".replace("-", "_")[:60])
    config, other = tmp_path / "floor.toml", tmp_path / "other.toml"
    config.write_text(floor_toml(floor_dsn, mosquitto.url, unique_id, f"floor-{unique_id}"))
    other.write_text(floor_toml(other_dsn, mosquitto.url, unique_id, f"floor-{unique_id}"))
    first_logs, second_logs = tmp_path / "first", tmp_path / "second"
    first_logs.mkdir()
    second_logs.mkdir()
    first, second = FloorProcess(config, first_logs), FloorProcess(other, second_logs)
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
