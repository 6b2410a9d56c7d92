"""A real `tablectl link` stopped (SIGTERM) while its server has stopped answering mid-statement: the cluster's
processes SIGSTOPped once the link ran, so the probe's `SELECT 1` waits on the database thread for an answer that
never comes, and a cancel request is taken by the kernel and never answered either. On the old code the stop waited
for that thread for ever (the 30 s guard of stop() ran out); now its connection is cut after CUT_AFTER_S."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from floor.pgcluster import PgCluster
from tests.broker import Mosquitto
from tests.floor.conftest import wait_for
from tests.floor.pgprocs import resume, stall
from tests.link.conftest import LinkProcess, link_toml

pytestmark = [pytest.mark.floor, pytest.mark.e2e]
STUCK = "a link task is stuck; the watchdog is no longer pinged"


def _said(link: LinkProcess) -> list[str]:
    return [json.loads(line)["event"] for line in link.log().splitlines() if line.startswith("{")]


def test_a_stop_while_the_server_stopped_answering_mid_statement_ends_the_link(
    mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    cluster = PgCluster.create(durable=False)
    (logs := tmp_path / "logs").mkdir()
    link = LinkProcess(tmp_path / "link.toml", logs)
    stalled: list[int] = []
    try:
        cluster.start()
        link.config.write_text(link_toml(cluster.create_database("link"), mosquitto.url, unique_id))
        link.start()
        wait_for(lambda: "link ready" in _said(link), 60, "the link ready")
        assert cluster.proc is not None
        stalled = stall(cluster.proc.pid)
        wait_for(lambda: STUCK in _said(link), 60, "the probe's call stuck on the stalled server")
        assert link.stop() == 0, link.log()
        assert "a database call still ran at the stop; cutting its connection" in _said(link), link.log()
        assert "Traceback" not in link.log()
    finally:
        resume(stalled)
        link.kill()
        cluster.remove()
