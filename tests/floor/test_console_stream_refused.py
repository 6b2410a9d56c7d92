"""A refused live stream says why in the page (docs/console.md, "Limits"): past [console] streams_per_session (or
max_streams) the server answers /api/stream with a 429, its reason and Retry-After; the browser's EventSource closes
for good on any answer but 200 and its error event carries neither, so before, the page read "reconnecting" for ever,
without the reason, and never tried again.

Real parts: the console server on a loopback port against a real PostgreSQL (its keys and audit), Debian's headless
Chromium through chromium-driver holding two tabs of one session, a log-in signed with an approved Ed25519 key.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from floor.console.server import ConsoleServer
from floor.live import TableLive
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.console_login import browser_logged_in, console_in_thread

pytestmark = [pytest.mark.floor, pytest.mark.browser]


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium("1200,900", {"browser": "ALL"}) as driver:
        yield driver


@pytest.fixture
def console(floor_dsn: str) -> Iterator[tuple[ConsoleServer, str]]:
    """The console allowing one stream a session, serving from a thread of its own (Selenium blocks this one)."""
    with console_in_thread(floor_dsn, "streams_per_session = 1\n") as (server, url):
        server.view.live["t1"] = TableLive(
            "t1", state="online", game="Mississippi Stud", chapter="655a", phase="betting"
        )
        yield server, url


def test_a_refused_stream_shows_the_servers_reason_and_retry_and_goes_live_when_it_may(
    browser: Any, console: tuple[ConsoleServer, str], floor_dsn: str
) -> None:
    from selenium.webdriver.common.by import By

    server, origin = console
    token = browser_logged_in(browser, origin, floor_dsn)
    wait = waiting(browser, 60)

    def conn() -> tuple[str, str]:
        why = browser.find_element(By.ID, "conn-why")
        return browser.find_element(By.ID, "conn").text, why.text if why.is_displayed() else ""

    browser.get(origin + "/")
    first = browser.current_window_handle
    wait.until(lambda d: conn()[0] == "live")
    assert server.stream_limits.open == {token: 1}

    browser.switch_to.new_window("tab")  # the same session's second tab: one stream a session here
    browser.get(origin + "/")
    wait.until(lambda d: conn()[1] != "")
    status, why = conn()
    assert status.startswith("not live: trying again in ") and status.endswith(" s"), status
    assert 1 <= int(status.removeprefix("not live: trying again in ").removesuffix(" s")) <= 15, status
    assert why.startswith("The live stream was refused: this session already has 1 live streams open"), why
    assert "streams_per_session" in why and "close the console in a tab you do not use" in why, why
    assert why.endswith("(HTTP 429)"), why
    assert browser.find_elements(By.CSS_SELECTOR, '#floor .tile[data-table="t1"]') == []  # no floor without a stream

    second = browser.current_window_handle
    browser.switch_to.window(first)
    browser.close()  # the first tab closed: its stream's place is free
    browser.switch_to.window(second)
    # Retry-After is 15 s: the page tries again then, by itself, and goes live.
    wait.until(lambda d: conn() == ("live", ""))
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#floor .tile[data-table="t1"]'))
    assert server.stream_limits.open == {token: 1}
    with psycopg.connect(floor_dsn) as c:
        assert c.execute("SELECT count(*) FROM console_audit WHERE action = 'login'").fetchone() == (1,)
    assert page_errors(browser) == []
