"""The console measures ages on the floor's clock, not the browser's (docs/console.md, "Ages"): a supervisor whose
browser's clock is hours off the floor's sees a table "in phase" for as long as it has been, and an alert as old as
it is. The server sends its now with the floor, each update and each heartbeat; the page keeps how far its own clock
is from it.

Real parts: the console server (floor/console/server.py) on a loopback port against a real PostgreSQL (its keys and
audit), Debian's headless Chromium through chromium-driver, a log-in signed with an approved Ed25519 key. What cannot
be had here is a browser on a host whose clock is off: this machine has one clock, and Chromium has no switch to run
on another (CDP's Emulation.setTimezoneOverride moves the zone, not the instant). So the page's `Date` is shifted by a
script that runs before the page's own (CDP Page.addScriptToEvaluateOnNewDocument): the only fake.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from floor.console.server import ConsoleServer
from floor.console.views import stamp
from floor.live import TableLive
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.console_login import browser_logged_in, console_in_thread

pytestmark = [pytest.mark.floor, pytest.mark.browser]
IN_PHASE_S = 90  # how long the table has been in its phase, on the floor's clock
TILT_S = 600  # how old its tilt is

# The page's clock, shifted before any of its scripts run: Date.now() and new Date() read SHIFT_MS off the host's.
SHIFTED_DATE = """
(() => {
  const SHIFT_MS = %d;
  const RealDate = Date;
  class ShiftedDate extends RealDate {
    constructor(...args) { if (args.length === 0) super(RealDate.now() + SHIFT_MS); else super(...args); }
    static now() { return RealDate.now() + SHIFT_MS; }
  }
  globalThis.Date = ShiftedDate;
})();
"""


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium("1200,900", {"browser": "ALL"}) as driver:
        yield driver


@pytest.fixture
def console(floor_dsn: str) -> Iterator[tuple[ConsoleServer, str]]:
    """The console serving on loopback from a thread of its own (Selenium blocks this one)."""
    with console_in_thread(floor_dsn) as served:  # the host's clock stands for the floor's (the database's)
        yield served


def seconds(text: str) -> int:
    m = re.fullmatch(r"([0-9]+)(s|m|h)", text)
    assert m is not None, text
    return int(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)]


@pytest.mark.parametrize("shift", [timedelta(hours=3), timedelta(hours=-3)], ids=["browser-ahead", "browser-behind"])
def test_ages_are_the_floors_whatever_the_browsers_clock(
    browser: Any, console: tuple[ConsoleServer, str], floor_dsn: str, shift: timedelta
) -> None:
    from selenium.webdriver.common.by import By

    server, origin = console
    now = datetime.now(UTC)
    live = TableLive("t1", state="online", game="Mississippi Stud", chapter="655a", phase="betting")
    live.phase_since = stamp(now - timedelta(seconds=IN_PHASE_S))
    live.tilts = {"critical_state": stamp(now - timedelta(seconds=TILT_S))}
    server.view.live["t1"] = live

    browser.execute_cdp_cmd(
        "Page.addScriptToEvaluateOnNewDocument", {"source": SHIFTED_DATE % (shift.total_seconds() * 1000)}
    )
    browser_logged_in(browser, origin, floor_dsn)
    browser.get(origin + "/")
    page_now = browser.execute_script("return Date.now()") / 1000
    assert abs(page_now - (datetime.now(UTC) + shift).timestamp()) < 60, "the page's clock is not shifted"

    tile = '#floor .tile[data-table="t1"] .in-phase'
    wait = waiting(browser, 30)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, tile) and d.find_element(By.CSS_SELECTOR, tile).text)
    in_phase = seconds(browser.find_element(By.CSS_SELECTOR, tile).text)
    tilt = browser.find_element(By.CSS_SELECTOR, '#alerts .alert[data-table="t1"][data-kind="tilt"] .since').text
    elapsed = (datetime.now(UTC) - now).total_seconds()
    # On the floor's clock: 90 s and 10 min, and the few seconds the test took. On the browser's own, 3 h more
    # ("3h") or 0 (an age from the future, clamped).
    assert IN_PHASE_S <= in_phase <= IN_PHASE_S + elapsed + 2, (in_phase, elapsed)
    assert seconds(tilt) == TILT_S, tilt  # shown to the minute: "10m"
    assert page_errors(browser) == []
