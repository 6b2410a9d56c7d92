"""An offline (or lost) table's tile says what the floor knows of it: offline since when, the phase it was last heard
in, and that its devices are not heard. It read "betting 6s" (counting the phase it stopped in as if it played on)
and "devices ok" with a green dot, whatever the devices did once the table stopped reporting.

Real parts: the console server on a loopback port against a real PostgreSQL (keys, audit), Debian's headless Chromium
through chromium-driver, a log-in signed with an approved Ed25519 key. The table's live model is set in the console as
the floor's archive sets it from the status topic (offline, by the broker's last will or the table's own word)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from floor.console.views import stamp
from floor.live import TableLive
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.console_login import browser_logged_in, console_in_thread

pytestmark = [pytest.mark.floor, pytest.mark.browser]


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium("800,1280", {"browser": "ALL"}) as driver:  # a tablet held upright
        yield driver


@pytest.mark.parametrize("state", ["offline", "lost"])
def test_an_offline_tables_tile_says_it_is_not_heard(browser: Any, floor_dsn: str, state: str) -> None:
    from selenium.webdriver.common.by import By

    now = datetime.now(UTC)
    with console_in_thread(floor_dsn) as (server, origin):
        gone = TableLive("t1", state=state, game="Let It Ride Poker", chapter="643a", phase="betting")
        gone.phase_since = stamp(now - timedelta(minutes=30))
        gone.state_since = stamp(now - timedelta(seconds=50))
        server.view.live["t1"] = gone
        playing = TableLive("t2", state="online", game="Let It Ride Poker", chapter="643a", phase="betting")
        playing.phase_since = stamp(now - timedelta(seconds=5))
        playing.rounds_completed = 1
        server.view.live["t2"] = playing
        browser_logged_in(browser, origin, floor_dsn)
        browser.get(origin + "/")
        tile = '#floor .tile[data-table="{}"]'
        waiting(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, tile.format("t2")))

        def part(table: str, css: str) -> str:
            return str(browser.find_element(By.CSS_SELECTOR, f"{tile.format(table)} {css}").text)

        assert part("t1", ".phase") == "last heard in betting"
        assert part("t1", ".in-phase").startswith(f"{state} "), part("t1", ".in-phase")  # "offline 50s"
        assert 50 <= int(part("t1", ".in-phase").split()[1].removesuffix("s")) < 80
        assert part("t1", ".devices") == f"devices not heard: table {state}"
        dot = browser.find_element(By.CSS_SELECTOR, f"{tile.format('t1')} .devices .dot").get_attribute("class")
        assert "unknown" in str(dot).split(), dot
        # A table that plays is shown as before.
        assert part("t2", ".phase") == "betting"
        assert part("t2", ".devices") == "devices ok"
        assert (part("t2", ".rounds"), part("t1", ".rounds")) == ("1 round", "0 rounds")  # not "1 rounds"
        assert page_errors(browser) == []
