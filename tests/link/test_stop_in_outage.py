"""A real `tablectl link` stopped (SIGTERM, as systemd stops it) while a database host gone dark (one that takes the
connection and never answers; no connect_timeout in the dsn) holds its connect: at its start, and once running after
its server was killed and the port taken. On the old code the connect ran in the link's database thread, which the
stop could not reach and the process's exit waited for: the 30 s guard of stop() ran out."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from floor.pgcluster import PgCluster
from tests.broker import Mosquitto
from tests.floor.conftest import wait_for
from tests.link.conftest import LinkProcess, link_toml

pytestmark = [pytest.mark.floor, pytest.mark.e2e]


def _said(link: LinkProcess) -> list[str]:
    return [json.loads(line)["event"] for line in link.log().splitlines() if line.startswith("{")]


def test_a_stop_while_a_dark_database_host_holds_the_start_ends_the_link(
    mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    with socket.socket() as dark:
        dark.bind(("127.0.0.1", 0))
        dark.listen()
        dark.settimeout(60)
        dsn = f"host=127.0.0.1 port={dark.getsockname()[1]} user=tablectl dbname=link"
        (config := tmp_path / "link.toml").write_text(link_toml(dsn, mosquitto.url, unique_id))
        (logs := tmp_path / "logs").mkdir()
        link = LinkProcess(config, logs)
        try:
            link.start()
            held, _ = dark.accept()  # the link's first connect, which now waits for an answer that never comes
            with held:
                assert link.stop() == 0, link.log()
        finally:
            link.kill()
    assert "link stopped before its database was reachable" in _said(link), link.log()
    assert "Traceback" not in link.log()


def test_a_stop_while_a_dark_database_host_holds_the_running_link_s_reconnect_ends_it(
    mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    cluster = PgCluster.create(durable=False)
    (logs := tmp_path / "logs").mkdir()
    link = LinkProcess(tmp_path / "link.toml", logs)
    dark = socket.socket()
    try:
        cluster.start()
        dsn = cluster.create_database("link", connect_timeout_s=None)
        link.config.write_text(link_toml(dsn, mosquitto.url, unique_id))
        link.start()
        wait_for(lambda: "link ready" in _said(link), 60, "the link ready")
        cluster.kill()
        dark.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        dark.bind(("127.0.0.1", cluster.port))
        dark.listen()
        dark.settimeout(60)
        held, _ = dark.accept()  # the probe's reconnect, which now waits for an answer that never comes
        with held:
            assert link.stop() == 0, link.log()
        assert "PostgreSQL lost; reconnecting" in _said(link), link.log()
        assert "Traceback" not in link.log()
    finally:
        dark.close()
        link.kill()
        cluster.remove()
