"""The lost broker session's alert acknowledged in a real browser: a supervisor's page offers the button, the click
shows "acknowledged by" on the alert, a reload still shows it, and a gap opening after it offers the button again.
Before, the alert had no button: it stayed red until its gaps closed.

Real parts: the console server on a loopback port against a real PostgreSQL (keys, audit), Debian's headless Chromium
through chromium-driver, a log-in signed with an approved Ed25519 key. The loss and the tables' gaps are set in the
console as the floor service sets them (server.session_lost(), the live models after a batch); the loss itself over a
real broker is tests/floor/test_session_ack.py's."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from floor.console.views import stamp
from floor.live import TableLive
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.console_login import browser_logged_in, console_in_thread, in_console

pytestmark = [pytest.mark.floor, pytest.mark.browser]
ALERT = '.alert[data-kind="session"]'
BUTTON = f'{ALERT} button[data-verb="acknowledge_session"]'


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium("1400,1000", {"browser": "ALL"}) as driver:
        yield driver


def gapped(gaps: list[list[int]], since: list[str]) -> TableLive:
    t = TableLive("t1", state="online", game="Let It Ride Poker", chapter="643a", phase="betting")
    t.gaps, t.gap_since, t.last_seq = gaps, since, 9
    return t


def test_a_supervisor_acknowledges_the_lost_session_in_the_browser(browser: Any, floor_dsn: str) -> None:
    from selenium.webdriver.common.by import By

    with console_in_thread(floor_dsn) as (server, origin):
        in_console(server, server.session_lost)
        opened = stamp(datetime.now(UTC))
        in_console(server, lambda: server.view.live.update(t1=gapped([[4, 5]], [opened])))
        browser_logged_in(browser, origin, floor_dsn)
        browser.get(origin + "/")
        wait = waiting(browser, 30)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, BUTTON))
        assert "seq gaps since at t1" in browser.find_element(By.CSS_SELECTOR, ALERT).text
        browser.find_element(By.CSS_SELECTOR, BUTTON).click()
        wait.until(lambda d: "acknowledged by sup at" in d.find_element(By.CSS_SELECTOR, f"{ALERT} .ack").text)
        assert not browser.find_elements(By.CSS_SELECTOR, BUTTON)
        assert "acknowledged" in str(browser.find_element(By.CSS_SELECTOR, ALERT).get_attribute("class"))
        with psycopg.connect(floor_dsn) as conn:
            row = conn.execute(
                "SELECT key_id, outcome, reply->>'since' FROM console_audit WHERE action = 'acknowledge'"
            ).fetchall()
        assert row == [("sup", "acknowledged", server.view.session_lost)], row

        browser.get(origin + "/")  # a reload
        wait.until(lambda d: "acknowledged by sup at" in d.find_element(By.CSS_SELECTOR, f"{ALERT} .ack").text)

        later = stamp(datetime.now(UTC))
        in_console(server, lambda: server.view.live.update(t1=gapped([[4, 5], [7, 7]], [opened, later])))
        in_console(server, lambda: server.refresh({"t1"}))
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, BUTTON))
        assert not browser.find_elements(By.CSS_SELECTOR, f"{ALERT} .ack")
        assert page_errors(browser) == []
