"""The link controller as systemd/tablectl-link.service runs it: `PYTHONOPTIMIZE=2 PYTHONNODEBUGRANGES=1` (python -OO
-X no_debug_ranges: no `assert`, no docstrings, no column tables). A real `tablectl link` so started, on the suite's
PostgreSQL primary and synchronous standby and the suite's mosquitto, opened by a signed command, takes three tables'
contributions (each once, however often resent) and a claim, and its reconciliation report, run optimised too,
balances and prints what it prints unoptimised. 605a.8, with NY 9 NYCRR 5321.18 as the stand-in for its text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.broker import Mosquitto, Subscribe
from tests.e2e.optimised import cache, env, unit_env
from tests.floor.conftest import wait_for
from tests.link.conftest import ROOT, TABLES, LinkProcess, LinkTable, command, link_toml, rows, send
from tests.tablectl_runs import tablectl

pytestmark = [pytest.mark.floor, pytest.mark.e2e]


def test_the_link_takes_contributions_and_a_claim_optimised(
    mosquitto: Mosquitto, subscribe: Subscribe, link_db: str, tmp_path: Path, unique_id: str
) -> None:
    config = tmp_path / "link.toml"
    config.write_text(link_toml(link_db, mosquitto.url, unique_id))
    (tmp_path / "logs").mkdir()
    link = LinkProcess(config, tmp_path / "logs", unit_env(tmp_path))
    link.start()
    tables = {t: LinkTable(t, "127.0.0.1", mosquitto.port, unique_id) for t in TABLES}
    try:
        assert tables["ms-01"].until_acked({"kind": "heartbeat"}, within=60)["lease_ms"] == 0  # closed: no lease
        assert send(mosquitto, subscribe, unique_id, "open_link", command("open_link", {}))["accepted"]
        wait_for(lambda: (tables["ms-02"].ask({"kind": "heartbeat"}) or {}).get("lease_ms") == 2000, 20, "a lease")
        for tid, table in tables.items():
            body = {
                "kind": "contribute",
                "round_id": f"{tid}-r1",
                "contributions": [{"seat": s, "wager": "progressive", "cents": 500} for s in (1, 2, 3)],
            }
            assert table.until_acked(body)["new"] == 3
            assert table.until_acked(body)["duplicates"] == 3, "a resend changes nothing"
        # Bad input is answered with the reason (pydantic's message, not a docstring) and changes nothing.
        bad = tables["ms-01"].ask({"kind": "contribute", "round_id": "r", "contributions": [{"seat": 1, "cents": -5}]})
        assert bad is not None and not bad["ok"] and "contributions.0" in bad["error"]
        claim = {
            "kind": "claim",
            "round_id": "ms-03-r1",
            "claim": {"seat": 2, "level": "mega", "percent": 100, "rule": "655a.11(i)(1)(iv)"},
        }
        hit = tables["ms-03"].until_acked(claim)["hit"]
        assert hit["amount_cents"] == 5_000_000 + 9 * 500 * 11 // 100 and hit["asset_number"] == "A-03"
        assert tables["ms-03"].until_acked(claim)["hit"] == hit, "a resent claim is the same hit"
        stored = rows(link_db, "SELECT table_id, round_id, seat, cents FROM link_contribution ORDER BY 1, 3")
        assert stored == [(t, f"{t}-r1", s, 500) for t in TABLES for s in (1, 2, 3)]
        mega = rows(link_db, "SELECT meters FROM link_level WHERE level = 'mega'")[0][0]
        assert (mega["in_count"], mega["in_cents"], mega["hits"]) == (9, 4500, 1)
    finally:
        for t in tables.values():
            t.close()
        assert link.stop() == 0, link.log()
    assert "Traceback" not in link.log() and '"level": "error"' not in link.log()
    # The controller ran as the unit runs it: what it loaded was compiled at -OO (the test's cache, unit_env).
    assert list(cache(tmp_path).rglob("link/service.*.opt-2.pyc")), "the link did not run optimised"

    def said(args: list[str], optimised: bool) -> tuple[int, str, str]:
        # A child process: what is tested is the interpreter's flags (-OO), which this process does not run under.
        out = tablectl("link", "--config", config, *args, timeout=120, cwd=ROOT, env=env(tmp_path, optimised))
        return out.returncode, out.stdout, out.stderr

    report = said(["report", "--json"], True)
    assert report[0] == 0 and json.loads(report[1])["balanced"], report
    for args in (["report", "--json"], ["report"], ["check-config"], ["--help"]):
        plain = said(args, False)
        assert plain[0] == 0 and plain[1], plain
        assert said(args, True) == plain, args
