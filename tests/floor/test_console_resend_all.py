"""One "Resend every gap" on the console fills every table's gap: a supervisor confirms once, the browser signs a resend
for each table with an open gap (its key, non-extractable, in IndexedDB: the floor holds none, DESIGN.md "The floor")
and each table judges its own. Before, a person pressed resend table by table (after a broker restart, at every
table).

Real parts: Debian's headless Chromium driven by Selenium, `tablectl floor` with its console on a loopback port, a
real PostgreSQL, the suite's mosquitto and two real tables (`tablectl demo` on simulated devices over ptys, each on its
own journal). Each table's first boot plays a round before any floor subscribed, so those events reach no one; its
second boot, whose config lists the browser's key, is heard from its first event on: a gap at each table."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.broker import Mosquitto, fresh_id
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.conftest import ROOT, TableProcess, console_floor, count, table_config, wait_for
from tests.tablectl_runs import TABLECTL, tablectl

pytestmark = [pytest.mark.floor, pytest.mark.e2e, pytest.mark.browser]
OPEN_GAPS = "SELECT count(*) FROM seq_gaps WHERE filled_at IS NULL"


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium("1400,1000", {"browser": "ALL"}) as driver:
        yield driver


def enrol_and_log_in(browser: Any, url: str, floor_config: Path) -> str:
    """The key made in this browser, approved as an administrator does, logged in: its [[supervisors]] entry."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    wait = waiting(browser, 60)
    browser.get(url)
    wait.until(ec.visibility_of_element_located((By.ID, "enrol-key-id"))).send_keys("rae.sup")
    browser.find_element(By.ID, "enrol-role").send_keys("supervisor")
    browser.find_element(By.ID, "enrol-button").click()
    entry = str(wait.until(ec.visibility_of_element_located((By.ID, "entry"))).text)
    approve = tablectl("floor", "--config", floor_config, "console", "approve", "rae.sup")
    assert approve.returncode == 0, approve.stderr
    browser.find_element(By.ID, "login-button").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "whoami"), "rae.sup (supervisor)"))
    return entry


def test_resend_every_gap_signed_once_fills_each_tables_gap(
    browser: Any, mosquitto: Mosquitto, pg_cluster: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    prefix = fresh_id("resendall")
    dsn = pg_cluster.create_database(fresh_id("resend_all"))
    logs = tmp_path / "tables"
    logs.mkdir()
    tables = [
        TableProcess(
            t, table_config(t, "demo.toml", prefix, tmp_path), tmp_path / f"{t}.sqlite", logs, mosquitto.url, 1
        )
        for t in (fresh_id("ra"), fresh_id("rb"))
    ]
    for i, t in enumerate(tables, 1):  # heard by no floor: the broker acknowledges and drops them
        t.start(i)
    for t in tables:
        assert t.proc is not None and t.proc.wait(timeout=120) == 0, (logs / f"{t.table_id}-1.log").read_text()
    floor, port = console_floor(tmp_path, dsn, mosquitto.url, prefix)
    second: list[subprocess.Popen[bytes]] = []
    try:
        wait_for(lambda: "subscribed to the tables" in floor.log(), 30, "the floor's subscription")
        entry = enrol_and_log_in(browser, f"http://127.0.0.1:{port}/", floor.config)
        for t in tables:  # the administrator's step: the key in each table's config; then its second boot
            t.config.write_text(t.config.read_text() + "\n" + entry)
            argv = ["demo", "--config", str(t.config), "--journal", str(t.journal), "--broker", mosquitto.url]
            argv += ["--pace", "0.3", "--human-floor", "--quiet", "--seed", "7"]
            log = (logs / f"{t.table_id}-2.log").open("wb")
            second.append(subprocess.Popen([*TABLECTL, *argv], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT))
        wait_for(lambda: count(dsn, OPEN_GAPS) == 2, 60, f"a gap at each table; floor log:\n{floor.log()}")

        # The alerts are drawn anew on each update: an alert found can be replaced before its attribute is read.
        wait = waiting(browser, 60)
        wait.until(
            lambda d: (
                {t.table_id for t in tables}
                <= {e.get_attribute("data-table") for e in d.find_elements(By.CSS_SELECTOR, '.alert[data-kind="gap"]')}
            )
        )
        wait.until(lambda d: d.find_element(By.ID, "resend-all").is_displayed())
        browser.find_element(By.ID, "resend-all").click()
        confirm = browser.find_element(By.ID, "confirm-text").text
        assert "every open seq gap, 2 gap(s) at 2 table(s)" in confirm, confirm
        asked = browser.find_element(By.ID, "confirm-args").text
        assert all(f"{t.table_id} 1-" in asked for t in tables), asked
        browser.find_element(By.ID, "confirm-ok").click()  # the one confirmation: both envelopes are signed after it
        wait.until(lambda d: d.find_element(By.ID, "reply").get_attribute("data-outcome") == "applied")
        reply = browser.find_element(By.ID, "reply").text
        assert all(f"at {t.table_id}: applied" in reply for t in tables), reply

        wait_for(lambda: count(dsn, OPEN_GAPS) == 0, 60, f"the gaps filled; floor log:\n{floor.log()}")
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, '.alert[data-kind="gap"]'))
        wait.until(lambda d: not d.find_element(By.ID, "resend-all").is_displayed())
        assert count(dsn, "SELECT count(*) FROM integrity_alarms") == 0
        assert page_errors(browser) == []
    finally:
        for p in second:
            p.kill()
            p.wait()
        floor.stop()
