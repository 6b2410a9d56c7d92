"""A supervisor sees which devices a table has marked out of order now and what took over each (655a.13(g)): from
the `table.opened`'s `out_of_order`, each `device.out_of_order` and `device.back_in_service` (docs/events.md), and
after a console restart from the archive alone, though the marks were said more than the 200 lines a restart reads.
The round recall says the method its round was dealt by and the devices out of order then.

The table is tests/floor/marked_table.py's real one: its shuffler marked (the manual shoe takes over), then its shoe
(no method usable), then the shoe back in service. The browser test is the console on a loopback port, fed by the
floor's archive writer on a real PostgreSQL, restarted on that archive, with Debian's headless Chromium."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import psycopg
import pytest

from controller.engine.inputs import Confirm, MarkOutOfOrder
from drivers.interfaces import DeviceFault
from floor.console.loading import load_view
from floor.console.table_extra import LOG_LINES
from floor.console.views import FloorView
from floor.messages import Incoming
from floor.recall import recall_round, render_round
from tests.engine.chapter_faults import counting, table
from tests.engine.held_faults import NO_HIT
from tests.floor.archiving import events_published, msg
from tests.floor.chromium import chromium, page_errors
from tests.floor.marked_table import (
    NOW,
    TABLE,
    Archiver,
    Page,
    birth,
    first_console,
    played,
    restarted_console,
    tile_after,
)

pytestmark = [pytest.mark.floor]
SHUFFLER = "manual shuffle and cut, dealing by manual_shoe"
SHOE = "no other dealing method"


def test_the_tile_names_each_device_out_of_order_and_what_took_over() -> None:
    first, second, third = played()
    view = FloorView()
    assert tile_after(view, [birth(), *first[:4]])["out_of_order"] == {}  # the table.opened: none marked
    assert tile_after(view, first[4:])["out_of_order"] == {"shuffler": SHUFFLER}
    assert tile_after(view, second)["out_of_order"] == {"shuffler": SHUFFLER, "shoe": SHOE}
    assert tile_after(view, third)["out_of_order"] == {"shuffler": SHUFFLER}


def test_a_table_opened_says_every_device_still_marked() -> None:
    """A `table.opened` names them all: a mark the console never heard (said while it was down) shows, one it holds
    that the table no longer has goes."""
    first, _, _ = played()
    view = FloorView()
    tile_after(view, [birth(), *first])
    opened = first[3]
    content = {**opened.content, "seq": 500, "payload": {**opened.content["payload"], "out_of_order": {"shoe": "hand"}}}
    again = replace(opened, content=content)
    assert tile_after(view, [again])["out_of_order"] == {"shoe": "hand"}


def test_the_recall_says_the_method_and_the_devices_out_of_order(archiver: Archiver, floor_dsn: str) -> None:
    first, _, _ = played()
    archiver.write([birth(), *first])
    with psycopg.connect(floor_dsn) as conn:
        story = recall_round(conn, "t1-r000001")
    assert story is not None
    assert (story.dealing_method, story.out_of_order) == ("manual_shoe", {"shuffler": SHUFFLER})
    # The round is still in its betting: no deal.started yet, so the table's word by then, and the line says so.
    said = "as the table said it by the round's end: no deal.started on record"
    assert f"dealt by manual_shoe ({said}); out of order: shuffler out of order ({SHUFFLER} took over)" in render_round(
        story
    )


def test_a_restart_reads_every_mark_however_long_ago(archiver: Archiver, floor_dsn: str) -> None:
    """The shoe marked, then the shuffler, then more than 200 lines: the table's newest word on its method and on its
    shuffle are both the shuffler's mark, so the shoe's is found only by reading the marks since the opening."""
    t = table("655a", "hand", counting("655a", fallback_dealing_method="manual_shoe"))
    t.shoe, t.decks = list(NO_HIT), [list(NO_HIT) for _ in range(4)]
    said = list(t.events) + t.feed(MarkOutOfOrder("shoe"))
    said += t.feed(DeviceFault("shuffler", code="malfunction")) + t.feed(MarkOutOfOrder("shuffler"))
    for _ in range(LOG_LINES):
        said += t.feed(Confirm("dealer", "shuffled"))
    parsed = [m for m in map(msg, events_published(TABLE, said, date(2026, 11, 27))) if isinstance(m, Incoming)]
    archiver.write([birth(), *parsed])
    view = FloorView()
    with psycopg.connect(floor_dsn) as conn:
        load_view(view, archiver.live_at_start(floor_dsn), conn)
    assert view.tile(TABLE, NOW)["out_of_order"] == {"shoe": "hand", "shuffler": "manual shuffle and cut"}


@pytest.mark.browser
def test_the_page_shows_the_marks_also_after_a_restart(archiver: Archiver, floor_dsn: str) -> None:
    from selenium.webdriver.common.by import By

    first, second, third = played()
    tile = f'.tile[data-table="{TABLE}"]'
    with chromium("1400,1000", {"browser": "ALL"}) as browser:
        page = Page(browser)
        with first_console(page, archiver, floor_dsn, [birth(), *first]) as server:
            page.shows(f"{tile} .out-of-order", "shuffler out of order")
            page.fed(server, archiver, second)
            page.shows(f"{tile} .out-of-order", "shoe, shuffler out of order")
            browser.find_element(By.CSS_SELECTOR, tile).click()
            page.shows(
                '#tv-now dd[data-field="out of order"]',
                f"shoe ({SHOE} took over); shuffler ({SHUFFLER} took over)",
            )
            assert page_errors(browser) == []

        # A restart: the marks were said more than 200 lines ago, the last one the shoe's.
        with restarted_console(page, archiver, floor_dsn) as server:
            page.shows(f"{tile} .out-of-order", "shoe, shuffler out of order")
            page.fed(server, archiver, third)
            page.shows(f"{tile} .out-of-order", "shuffler out of order")
            browser.find_element(By.CSS_SELECTOR, tile).click()
            page.shows('#tv-now dd[data-field="out of order"]', f"shuffler ({SHUFFLER} took over)")
            assert page_errors(browser) == []
