"""What a table's view offers, as the table would take it (a real browser).

- open_table only while the table is closed, close_table only while it is open and not closing already
  (controller/engine/shuffling.py ignores the other): before, both were offered whatever the table's phase.
- A resend asks for at most the floor's MAX_SEQS seqs (floor/gaps.py), served with the session: before, the page
  wrote its own 10,000 twice (a gap's button, "Resend every gap"), free to drift from what the floor's alerts ask.

Real parts: the console server on a loopback port against a real PostgreSQL (keys, audit), Debian's headless Chromium
through chromium-driver, a supervisor's log-in signed with an approved Ed25519 key. The table's live model is set in
the console as the floor's archive sets it; MAX_SEQS is lowered so that a short gap shows the cap."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from floor import gaps
from floor.live import TableLive
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.console_login import browser_logged_in, console_in_thread

pytestmark = [pytest.mark.floor, pytest.mark.browser]


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium("1400,1000", {"browser": "ALL"}) as driver:
        yield driver


def offered(browser: Any) -> list[str]:
    from selenium.webdriver.common.by import By

    return [b.get_attribute("data-verb") for b in browser.find_elements(By.CSS_SELECTOR, "#tv-actions button")]


def drawn_in(phase: str) -> Callable[[Any], bool]:
    """Whether the view is drawn from the tile of this phase (its actions with it), not the last one's left in it."""
    from selenium.webdriver.common.by import By

    def drawn(d: Any) -> bool:
        return bool(d.find_element(By.CSS_SELECTOR, '#tv-now dd[data-field="phase"]').text.startswith(phase))

    return drawn


def test_the_view_offers_open_or_close_as_the_phase_allows_and_resends_the_floors_cap(
    browser: Any, floor_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from selenium.webdriver.common.by import By

    monkeypatch.setattr(gaps, "MAX_SEQS", 50)
    with console_in_thread(floor_dsn) as (server, origin):
        live = TableLive("t1", state="online", game="Mississippi Stud", chapter="655a", phase="closed")
        live.gaps, live.gap_since = [[7, 300]], ["2026-11-27T12:00:00.000000Z"]
        server.view.live["t1"] = live
        browser_logged_in(browser, origin, floor_dsn)
        browser.get(origin + "/")
        wait = waiting(browser, 20)
        tile = '#floor .tile[data-table="t1"]'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, tile))

        # Every open gap at once: its first MAX_SEQS seqs, as the floor's own alert asks.
        wait.until(lambda d: d.find_element(By.ID, "resend-all").is_displayed())
        browser.find_element(By.ID, "resend-all").click()
        assert browser.find_element(By.ID, "confirm-args").text == "t1 7-56"
        browser.find_element(By.ID, "confirm-cancel").click()

        browser.find_element(By.CSS_SELECTOR, tile).click()
        wait.until(lambda d: "resend" in offered(d))
        verbs = offered(browser)
        assert "open_table" in verbs and "close_table" not in verbs, verbs
        browser.find_element(By.CSS_SELECTOR, '#tv-actions button[data-verb="resend"]').click()
        assert browser.find_element(By.ID, "confirm-args").text == 'with {"from_seq":7,"to_seq":56}'
        browser.find_element(By.ID, "confirm-cancel").click()
        browser.find_element(By.ID, "tv-close").click()

        for phase, shown in (("betting", "close_table"), ("closing", None), ("unknown", "both")):
            live.phase = phase
            browser.find_element(By.CSS_SELECTOR, tile).click()
            wait.until(drawn_in(f"{phase} for"))
            verbs = offered(browser)
            want = {"open_table", "close_table"} if shown == "both" else {shown} - {None}
            assert {"open_table", "close_table"} & set(verbs) == want, (phase, verbs)
            browser.find_element(By.ID, "tv-close").click()
        assert page_errors(browser) == []
