"""A table's view on a tablet held upright (800 px wide): every part of it within the screen. Its two columns (what
the table does now, its actions and devices; its live log and recent rounds) were kept side by side at any width, the
first as wide as its widest action row, so the live log and the recent rounds ran off the right edge.

Real parts: the console server on a loopback port against a real PostgreSQL (keys, audit), Debian's headless Chromium
through chromium-driver at a tablet's size, a supervisor's log-in (every action offered) signed with an approved
Ed25519 key. The table's live model is set in the console as the floor's archive sets it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from floor.live import TableLive
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.console_login import browser_logged_in, console_in_thread

pytestmark = [pytest.mark.floor, pytest.mark.browser]


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium("800,1280", {"browser": "ALL"}) as driver:
        yield driver


def test_a_tables_view_fits_a_tablet(browser: Any, floor_dsn: str) -> None:
    from selenium.webdriver.common.by import By

    with console_in_thread(floor_dsn) as (server, origin):
        live = TableLive("t1", state="online", game="Let It Ride Poker", chapter="643a")
        names = ["dealer_panel", "progressive_sign", "shoe", "shuffler", *(f"wager_station_{n}" for n in range(1, 8))]
        live.devices = {n: {"state": "online"} for n in names}
        server.view.live["t1"] = live
        # A log line holding one long word (a digest, as a journal anchor's line has): the log's widest content.
        line = {"seq": 42, "ts": "2026-11-27T15:48:34.000000Z", "type": "journal.anchored", "rule": "605a.4(c)"}
        server.view.table("t1").lines.append({**line, "table_id": "t1", "text": f"head={'ab' * 32}"})
        # The devices as the table's birth names them (the demo's simulators): the view's widest table.
        server.view.table("t1").birth = {
            # A digest is one word of 64 characters: it widened the first column to its length.
            "software": {"version": "0.1.0", "code_sha256": "7d72" * 16, "code_files": 394},
            "devices": [
                {"device_id": n, "identity": {"model": f"SIM-{n.upper()}", "serial": n, "firmware": "1.0.0-sim"}}
                for n in names
            ],
        }
        browser_logged_in(browser, origin, floor_dsn)
        browser.get(origin + "/")
        wait = waiting(browser, 20)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#floor .tile[data-table="t1"]'))
        browser.find_element(By.CSS_SELECTOR, '#floor .tile[data-table="t1"]').click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#tv-actions button[data-verb='reset_meter']"))
        width = browser.execute_script("return document.documentElement.clientWidth")
        for part in ("tv-now", "tv-actions", "tv-devices", "tv-log", "tv-rounds"):
            right = browser.execute_script(f"return document.getElementById('{part}').getBoundingClientRect().right")
            assert right <= width, f"#{part} ends at {right} px, past the screen's {width} px"
        assert browser.execute_script("return document.documentElement.scrollWidth") <= width
        assert page_errors(browser) == []
