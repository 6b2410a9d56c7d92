"""The floor service as systemd/tablectl-floor.service runs it: `PYTHONOPTIMIZE=2 PYTHONNODEBUGRANGES=1` (python -OO
-X no_debug_ranges: no `assert`, no docstrings, no column tables). A real `tablectl floor` so started, its console on
loopback, archives a real table (`tablectl demo` on simulated devices over real ptys, its journal a real SQLite file)
through the suite's mosquitto into the suite's PostgreSQL, and serves the console's API to a supervisor logged in
over HTTP. The archive equals the journal; what the console serves equals what this (unoptimised) process reads from
the same archive; the verbs an operator runs beside the service print what they print unoptimised; and the console,
without aiohttp's `assert`s (152 of them, none with a side effect), refuses hostile requests as it does unoptimised
(tests/floor/console_requests.py's checks)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import psycopg
import pytest

from floor.console.plumbing import COOKIE
from floor.pgcluster import PgCluster
from floor.recall import last_rounds, recall_round
from tests.broker import Mosquitto, fresh_id
from tests.e2e.optimised import cache, env, unit_env
from tests.floor.conftest import (
    KEYS,
    TableProcess,
    console_floor,
    count,
    table_config,
    wait_for,
)
from tests.floor.console_login import log_in
from tests.floor.console_probe import console_up
from tests.floor.console_requests import (
    BAD_BODIES,
    FIX,
    PIPELINED,
    RELAY,
    answers_good_then_refuses_bad,
    bad_chunk_after_the_answer,
    floor_console,
)
from tests.tablectl_runs import tablectl

pytestmark = [pytest.mark.e2e, pytest.mark.floor]

ROUNDS = 3


def _archive(dsn: str, table_id: str) -> list[dict[str, Any]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT event_id, boot_id, seq, ts_text, table_id, round_id, type, rule, payload FROM events"
            " WHERE table_id = %s ORDER BY seq",
            (table_id,),
        ).fetchall()
    return [dict(zip(KEYS, r, strict=True)) for r in rows]


def _get(origin: str, token: str, path: str) -> Any:
    req = urllib.request.Request(origin + path, headers={"Cookie": f"{COOKIE}={token}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def test_the_floor_archives_a_table_and_serves_the_console_optimised(
    mosquitto: Mosquitto, pg_cluster: PgCluster, tmp_path: Path
) -> None:
    prefix = fresh_id("optfl")  # the table's retained topics are this test's alone on the shared broker
    table_id = f"{prefix}-ms"
    dsn = pg_cluster.create_database(f"opt_{prefix}")
    floor, port = console_floor(tmp_path, dsn, mosquitto.url, prefix, env=unit_env(tmp_path))
    origin = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: "subscribed to the tables" in floor.log(), 60, "the floor's subscription")
        wait_for(lambda: console_up(origin), 60, "the console")
        config = table_config(table_id, "demo.toml", prefix, tmp_path)
        table = TableProcess(table_id, config, tmp_path / "table.sqlite", tmp_path / "logs", mosquitto.url, ROUNDS)
        table.start(seed=16)
        assert table.proc is not None and table.proc.wait(timeout=180) == 0, (tmp_path / "logs").iterdir()
        journal = table.rows()
        wait_for(lambda: len(_archive(dsn, table_id)) == len(journal), 60, f"the archive to hold {len(journal)} rows")
        assert _archive(dsn, table_id) == journal
        assert count(dsn, "SELECT count(*) FROM integrity_alarms") == 0
        assert count(dsn, "SELECT count(*) FROM rejected_messages") == 0
        assert count(dsn, "SELECT count(*) FROM seq_gaps WHERE filled_at IS NULL") == 0

        token = log_in(origin, dsn)
        [tile] = [t for t in _get(origin, token, "/api/floor")["tiles"] if t["table_id"] == table_id]
        assert tile["rounds_completed"] == ROUNDS and tile["tilts"] == {} and tile["faults"] == {}
        detail = _get(origin, token, f"/api/tables/{table_id}")
        with psycopg.connect(dsn) as conn:
            assert detail["rounds"] == [s.to_json() for s in last_rounds(conn, table_id, 5)]
            first = f"{table_id}-r000001"
            story = recall_round(conn, first)
        assert story is not None and story.outcome == "completed" and len(detail["rounds"]) == ROUNDS
        served = _get(origin, token, f"/api/rounds/{first}")
        assert served == story.to_json() and served["settlements"] and served["problems"] == []
        assert floor.stop() == 0
        assert [line for line in floor.log().splitlines() if '"level": "error"' in line or "Traceback" in line] == []
    finally:
        floor.kill()
    # The service ran as the unit runs it: what it loaded was compiled at -OO (the test's cache, unit_env).
    assert list(cache(tmp_path).rglob("floor/service.*.opt-2.pyc")), "the floor did not run optimised"
    assert list(cache(tmp_path).rglob("floor/console/server.*.opt-2.pyc"))

    for argv in (["round", first], ["rounds", table_id, "--last", "5"], ["alarms"], ["check-config"], ["--help"]):
        _says_the_same(["floor", "--config", str(floor.config), *argv], tmp_path)


def _says_the_same(args: list[str], tmp: Path) -> None:
    """argparse's help, the config check and the recall are strings of their own, not docstrings: -OO prints them."""

    def said(optimised: bool) -> tuple[int, str, str]:
        out = tablectl(*args, env=env(tmp, optimised))
        return out.returncode, out.stdout, out.stderr

    plain = said(False)
    assert plain[0] == 0 and plain[1], plain
    assert said(True) == plain, args


def test_the_optimised_console_refuses_bad_requests_as_it_does_unoptimised(
    pg_cluster: PgCluster, mosquitto: Mosquitto, tmp_path: Path
) -> None:
    with floor_console(pg_cluster, mosquitto, tmp_path, unit_env(tmp_path)) as console:  # no error logged at its end
        for what, body, status, problem in BAD_BODIES:
            for path in ("/api/enrol", "/api/login", RELAY):
                r = console.post(path, body)
                assert (r.status, problem in r.error(), FIX in r.error()) == (status, True, True), (r, what, path)
        for bad, problem, _ in PIPELINED:
            answers_good_then_refuses_bad(console, bad, problem)
        bad_chunk_after_the_answer(console)
        console.still_serves()
    assert list(cache(tmp_path).rglob("floor/console/wire.*.opt-2.pyc")), "the floor did not run optimised"
