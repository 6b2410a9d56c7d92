"""A real table whose devices are marked out of order (655a.13(g)) and the floor's archive writer, shared by the
console's tests of it (tests/floor/test_console_no_method.py, test_console_out_of_order.py): the events are the pure
engine's 655a table dealt by hand with a manual shoe as fallback (tests/engine/test_fallback_shoe_covered.py),
published as the table publishes them and parsed as the floor parses them (floor/messages.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from typing import Any

import psycopg

from controller.core.events import DomainEvent
from controller.engine.inputs import Confirm, MarkOutOfOrder
from controller.mqtt.contract import TableEvent
from drivers.interfaces import DeviceFault
from floor.archive import load_state
from floor.config import DatabaseSection
from floor.console.plumbing import COOKIE
from floor.console.server import ConsoleServer
from floor.console.table_extra import LOG_LINES
from floor.console.views import FloorView
from floor.db import async_connect
from floor.live import TableLive
from floor.messages import Incoming
from tests.engine.chapter_faults import counting, table
from tests.engine.conftest import decide_all
from tests.engine.held_faults import NO_HIT
from tests.floor.archiving import PREFIX, events_published, msg, writer
from tests.floor.chromium import waiting
from tests.floor.console_login import browser_logged_in, console_in_thread, in_console, log_in

TABLE = "nm-1"
NOW = datetime(2026, 11, 27, 12, 5, tzinfo=UTC)


def birth(table: str = TABLE, method: str = "hand") -> Incoming:
    """The table's birth as it publishes it at every connect: its configured method (by default the hand)."""
    game = {"chapter": "655a", "name": "Mississippi Stud", "seats": 6, "dealing_method": method, "rules": {}}
    software = {"version": "0", "code_sha256": "0" * 64, "code_files": 1}
    body = {"table_id": table, "boot_id": "b1", "ts": "2026-11-27T11:59:00.000000Z", "software": software,
            "game": game, "paytables": [], "devices": []}  # fmt: skip
    parsed = msg(body, f"{PREFIX}/{table}/birth")
    assert isinstance(parsed, Incoming)
    return parsed


def played() -> tuple[list[Incoming], list[Incoming], list[Incoming]]:
    """The table's events in three parts: open, the shuffler out of order (the manual shoe takes over); the shoe out
    of order too (no method usable); the shoe back in service (the manual shoe deals again)."""
    t = table("655a", "hand", counting("655a", fallback_dealing_method="manual_shoe"))
    t.shoe, t.decks = list(NO_HIT), [list(NO_HIT) for _ in range(4)]
    first = list(t.events)
    first += t.feed(DeviceFault("shuffler", code="malfunction")) + t.feed(MarkOutOfOrder("shuffler"))
    t.shoe = list(NO_HIT)
    first += t.feed(Confirm("dealer", "shuffled"))
    second = t.feed(MarkOutOfOrder("shoe"))
    # More said after it than a restart reads of a table's last lines (200): the dealer's taps the table ignores.
    for _ in range(LOG_LINES):
        second += t.feed(Confirm("dealer", "shuffled"))
    third = t.feed(MarkOutOfOrder("shoe", out=False))
    said = events_published(TABLE, [*first, *second, *third], date(2026, 11, 27))
    parsed = [m for m in map(msg, said) if isinstance(m, Incoming)]
    assert len(parsed) == len(said)
    a, b = len(first), len(first) + len(second)
    return parsed[:a], parsed[a:b], parsed[b:]


def shoe_marked_after_the_deal() -> list[DomainEvent]:
    """A 655a table dealing from the automated shoe, the hand its fallback (test_recall_dealt_by.py,
    test_console_round_line.py): its round dealt from the shoe, the shoe marked out of order in its decisions, the
    round played out."""
    t = table("655a", "automated_shoe", counting("655a", fallback_dealing_method="hand"))
    t.shoe, t.decks = list(NO_HIT), [list(NO_HIT) for _ in range(4)]
    dealt = t.press("no_more_bets")
    assert "cards.dealt" in t.types(dealt) and t.state.phase.value == "decision"
    marked = t.feed(MarkOutOfOrder("shoe"))
    assert [e.payload["dealing_method"] for e in marked if e.type == "device.out_of_order"] == ["hand"]
    decide_all(t, dealt)
    assert "round.completed" in t.types()
    return list(t.events)


class Archiver:
    """The floor's archive writer on a loop of the test's own (the console's is in its thread)."""

    def __init__(self, dsn: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.writer = self.loop.run_until_complete(writer(dsn))

    def write(self, batch: list[Incoming]) -> dict[str, TableLive]:
        self.loop.run_until_complete(self.writer.write(batch))
        return self.writer.state.live

    def live_at_start(self, dsn: str) -> dict[str, TableLive]:
        """The live models as a restarted floor reads them (floor/archive.py load_state)."""

        async def read() -> dict[str, TableLive]:
            conn = await async_connect(DatabaseSection(dsn=dsn))
            try:
                return (await load_state(conn)).live
            finally:
                await conn.close()

        return self.loop.run_until_complete(read())


@contextmanager
def archiving(dsn: str) -> Iterator[Archiver]:
    """An Archiver closed after the test, its connection and its loop."""
    a = Archiver(dsn)
    try:
        yield a
    finally:
        a.loop.run_until_complete(a.writer.conn.close())
        a.loop.close()


def tile_after(view: FloorView, messages: list[Incoming]) -> dict[str, Any]:
    """The table's tile once the console's view model has heard `messages` as the floor hears them."""
    live = view.live.get(TABLE) or TableLive(TABLE, state="online")
    for m in messages:
        if m.kind == "event":
            live.apply_event(TableEvent.model_validate(m.content))
        view.observe(m, live)
    return view.tile(TABLE, NOW)


class Page:
    """The browser's view of the console: an element's text, read again until it says what is wanted (the console
    redraws on every update)."""

    def __init__(self, browser: Any) -> None:
        self.browser = browser
        self.wait = waiting(browser, 60)

    def text(self, css: str) -> str:
        from selenium.webdriver.common.by import By

        return str(self.wait.until(lambda d: d.find_element(By.CSS_SELECTOR, css).text))

    def shows(self, css: str, want: str) -> None:
        self.wait.until(lambda d: self.text(css) == want)

    def open_table(self, table: str) -> None:
        """The table's view, opened from its tile once the page has drawn it (drawn once the page has the floor)."""
        from selenium.webdriver.common.by import By

        self.text(f'.tile[data-table="{table}"]')
        self.browser.find_element(By.CSS_SELECTOR, f'.tile[data-table="{table}"]').click()

    def fed(self, server: ConsoleServer, archiver: Archiver, batch: list[Incoming]) -> None:
        """The archive writer writes `batch` and the console hears it, as the floor's intake does both."""
        live = archiver.write(batch)
        in_console(server, lambda: server.archived(batch, live))


@contextmanager
def first_console(page: Page, archiver: Archiver, dsn: str, batch: list[Incoming]) -> Iterator[ConsoleServer]:
    """A console fed `batch` (the archive writer's and the console's, as the floor's intake), the page loaded in it by
    a supervisor logged in."""
    with console_in_thread(dsn) as (server, url):
        page.fed(server, archiver, batch)
        browser_logged_in(page.browser, url, dsn)
        page.browser.get(url + "/")
        yield server


@contextmanager
def restarted_console(page: Page, archiver: Archiver, dsn: str) -> Iterator[ConsoleServer]:
    """A console started again on the archive alone (its births, each table's last events), the page loaded in it by
    a second supervisor: sessions end with their console."""
    with console_in_thread(dsn) as (server, url):
        with psycopg.connect(dsn) as conn:
            load = archiver.live_at_start(dsn)
            in_console(server, lambda: server.load(load, conn))
        token = log_in(url, dsn, "sup2")
        page.browser.execute_cdp_cmd("Network.setCookie", {"name": COOKIE, "value": token, "url": url + "/"})
        page.browser.get(url + "/")
        yield server
