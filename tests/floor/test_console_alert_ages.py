"""An alert's age goes on counting on the page while nothing new arrives (docs/console.md, "Ages"): a jackpot held for
validation publishes nothing more, so an age drawn once and left there said "9s" for as long as the hit waited, beside
a tile counting the same hold past a minute. The table view's time in its phase counts on too.

Real parts: the console server on a loopback port against a real PostgreSQL (keys, audit), Debian's headless Chromium
through chromium-driver, a log-in signed with an approved Ed25519 key. The table's live model is set in the console
(as the floor's archive sets it) rather than played by a table: the ages are the page's, whatever set them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from floor.console.views import stamp
from floor.live import TableLive
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.console_login import browser_logged_in, console_in_thread

pytestmark = [pytest.mark.floor, pytest.mark.browser]
AGE_S = 40  # the tilt's age when the page draws it: under two minutes, so the page shows it to the second


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium("1200,900", {"browser": "ALL"}) as driver:
        yield driver


def seconds(text: str) -> int:
    m = re.fullmatch(r"([0-9]+)s", text)
    assert m is not None, text
    return int(m.group(1))


def test_an_alerts_age_counts_on_with_no_update(browser: Any, floor_dsn: str) -> None:
    from selenium.webdriver.common.by import By

    with console_in_thread(floor_dsn) as (server, origin):
        live = TableLive("t1", state="online", game="Mississippi Stud", chapter="655a", phase="betting")
        live.phase_since = stamp(datetime.now(UTC) - timedelta(seconds=AGE_S))
        live.tilts = {"critical_state": stamp(datetime.now(UTC) - timedelta(seconds=AGE_S))}
        server.view.live["t1"] = live
        browser_logged_in(browser, origin, floor_dsn)
        browser.get(origin + "/")
        age = '#alerts .alert[data-table="t1"][data-kind="tilt"] .since'
        wait = waiting(browser, 20)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, age) and d.find_element(By.CSS_SELECTOR, age).text)
        first = seconds(browser.find_element(By.CSS_SELECTOR, age).text)
        assert AGE_S <= first < AGE_S + 20, first
        # No update is sent meanwhile (nothing is archived): only the page's own clock can move the age on.
        wait.until(lambda d: seconds(d.find_element(By.CSS_SELECTOR, age).text) >= first + 3)
        # The table's own view: "betting for 40s" counts on as the tile does.
        browser.find_element(By.CSS_SELECTOR, '#floor .tile[data-table="t1"]').click()
        phase = '#tv-now dd[data-field="phase"]'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, phase) and d.find_element(By.CSS_SELECTOR, phase).text)
        shown = browser.find_element(By.CSS_SELECTOR, phase).text
        assert shown.startswith("betting for "), shown
        wait.until(
            lambda d: seconds(d.find_element(By.CSS_SELECTOR, phase).text.split()[-1]) >= seconds(shown.split()[-1]) + 3
        )
        assert page_errors(browser) == []
