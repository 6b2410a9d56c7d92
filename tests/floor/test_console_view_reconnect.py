"""A table view left open while the page's stream reconnects is loaded again: the rounds (and log lines) the floor
archived while the page was away are in it. Before, the reconnect drew only the table's tile from the whole floor;
a round finished meanwhile never reached the view's recent rounds until it was opened again.

Real parts: the console on a loopback port in a thread of its own (tests/floor/console_login.py), a real PostgreSQL
archive written by the floor's writer, Debian's headless Chromium. The console ends the page's stream as it ends a
browser that fell behind (`bye`); while the page is away (its read of its session held by the test), a round is archived
and the console's update goes to no page; then the page reconnects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from floor.console.server import ConsoleServer
from floor.live import TableLive
from tests.floor.archiving import msg, writer
from tests.floor.chromium import chromium, page_errors, waiting
from tests.floor.console_login import browser_logged_in, console_in_thread, in_console

pytestmark = [pytest.mark.floor, pytest.mark.browser]
TABLE = "rc-1"
# Holds the page's next read of its session (the first thing it does on `bye`) until the test lets it go
# (window.__release()): the page is away, not yet reconnected, for as long as the test needs.
HOLD = """
window.__held = [];
const fetched = window.fetch.bind(window);
window.fetch = (url, opts) => fetched(url, opts).then((r) => String(url).startsWith('/api/session')
  ? new Promise((resolve) => { window.__held.push(r); window.__release = () => resolve(r); }) : r);
"""


def round_events(no: int) -> list[dict[str, Any]]:
    """A round's settlement and completion as the table publishes them, seqs 2n-1 and 2n."""
    base = {"boot_id": "b", "table_id": TABLE, "round_id": f"{TABLE}-r{no}"}
    settled = {"seat": 1, "cards": [], "hand": "pair of aces", "wagers": [], "paid": 0}
    done = {"round_no": no, "players": 1, "paid": 0, "collected": 500, "table_result": 500}
    return [
        base | {"event_id": f"e{no}a", "seq": 2 * no - 1, "ts": f"2026-11-27T12:0{no}:00.000000Z",
                "type": "hand.settled", "rule": "655a.11(h)(1)", "payload": settled},
        base | {"event_id": f"e{no}b", "seq": 2 * no, "ts": f"2026-11-27T12:0{no}:01.000000Z",
                "type": "round.completed", "rule": "655a.11(j)", "payload": done},
    ]  # fmt: skip


class Archiver:
    """The floor's archive writer on a loop of the test's own (the console's is in its thread)."""

    def __init__(self, dsn: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.writer = self.loop.run_until_complete(writer(dsn))  # migrates the database first

    def write(self, no: int) -> list[Any]:
        batch = [msg(e) for e in round_events(no)]
        assert self.loop.run_until_complete(self.writer.write(batch)).events_new == 2
        return batch


@pytest.fixture
def archiver(floor_dsn: str) -> Iterator[Archiver]:
    a = Archiver(floor_dsn)
    yield a
    a.loop.run_until_complete(a.writer.conn.close())
    a.loop.close()


@pytest.fixture
def console(archiver: Archiver, floor_dsn: str) -> Iterator[tuple[ConsoleServer, str]]:
    with console_in_thread(floor_dsn) as (server, url):
        yield server, url


def test_an_open_view_reloads_on_reconnect_with_the_rounds_missed_meanwhile(
    console: tuple[ConsoleServer, str], archiver: Archiver, floor_dsn: str
) -> None:
    from selenium.webdriver.common.by import By

    server, url = console
    live = {TABLE: TableLive(TABLE, state="online", game="Mississippi Stud", chapter="655a")}
    first = archiver.write(1)
    in_console(server, lambda: server.archived(first, live))
    with chromium("1400,1000", {"browser": "ALL"}) as browser:
        browser_logged_in(browser, url, floor_dsn)
        wait = waiting(browser, 60)

        def rounds() -> list[str]:
            found = browser.find_elements(By.CSS_SELECTOR, "#tv-rounds .round")
            return [str(e.get_attribute("data-round")) for e in found]

        browser.get(url + "/")
        wait.until(lambda d: d.find_element(By.ID, "conn").text == "live")
        browser.find_element(By.CSS_SELECTOR, f'.tile[data-table="{TABLE}"]').click()
        wait.until(lambda d: rounds() == [f"{TABLE}-r1"])

        browser.execute_script(HOLD)

        def bye() -> None:
            for q in list(server.streams):
                q.put_nowait(None)  # as for a browser that fell behind: the page is told to go, and reconnects

        in_console(server, bye)
        wait.until(lambda d: d.execute_script("return window.__held.length") == 1)  # away, its session being read
        second = archiver.write(2)
        in_console(server, lambda: server.archived(second, live))  # its update goes to no page
        browser.execute_script("window.__release();")
        wait.until(lambda d: rounds() == [f"{TABLE}-r2", f"{TABLE}-r1"])
        seqs = [e.get_attribute("data-seq") for e in browser.find_elements(By.CSS_SELECTOR, "#tv-log li")]
        assert seqs == ["1", "2", "3", "4"], seqs  # the log lines missed are there too, once each
        assert browser.find_element(By.ID, "conn").text == "live"
        assert page_errors(browser) == []
