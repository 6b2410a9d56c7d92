"""While no dealing method is usable the console says so. A table whose shuffler and shoe are both marked out of order
(655a.13(g)) says `dealing_method: null` in its `device.out_of_order` and waits on the `no_method` block
(docs/events.md); the console read only a method's name, so its tile and table view kept the last one (`manual_shoe`)
as if the table could still deal by it, and after a restart the configured one from the birth (`hand`).

The events are a real table's: the pure engine's 655a table dealt by hand with a manual shoe as fallback
(tests/engine/test_fallback_shoe_covered.py), published as the table publishes them and parsed as the floor parses
them (floor/messages.py). The first test is the console's view model (pure); the second is the console itself on a
loopback port, fed by the floor's archive writer on a real PostgreSQL, restarted on that archive, with Debian's
headless Chromium logged in as a supervisor."""

from __future__ import annotations

import json

import psycopg
import pytest

from floor.console.table_extra import LOG_LINES
from floor.console.views import FloorView
from floor.live import TableLive
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


def test_the_tile_says_none_usable_while_no_method_stands_and_the_method_once_back() -> None:
    first, second, third = played()
    view = FloorView()
    t = tile_after(view, [birth(), *first])
    assert (t["dealing_method"], t["no_method"]) == ("manual_shoe", None)
    t = tile_after(view, second)
    said = [m.content["payload"]["dealing_method"] for m in second if m.content["type"] == "device.out_of_order"]
    assert said == [None] and len(second) > LOG_LINES
    assert (t["dealing_method"], t["no_method"]) == (None, "")  # said by the event; the block's words not yet said
    # The birth published again at a reconnect names the configured method: it does not bring it back.
    assert tile_after(view, [birth()])["dealing_method"] is None
    # Once the table says why it waits (table.blocked), the tile carries the block's words.
    blocked = {"reasons": {"no_method": "the shoe is out of order and neither hand nor its fallback can be used"}}
    live = view.live[TABLE]
    live.blocks = dict(blocked["reasons"])
    assert view.tile(TABLE, NOW)["no_method"] == blocked["reasons"]["no_method"]
    live.blocks = {}
    t = tile_after(view, third)
    assert (t["dealing_method"], t["no_method"]) == ("manual_shoe", None)


def test_a_restarted_console_shows_no_method_from_the_archive_alone() -> None:
    """The block standing in the live model is enough: its event may be older than the 200 lines read at start."""
    view = FloorView()
    view.table(TABLE).dealing_method = "hand"  # the birth's, all a restart read
    live = TableLive(TABLE, state="online")
    live.blocks = {"no_method": "no other dealing method is configured"}
    view.live[TABLE] = live
    t = view.tile(TABLE, NOW)
    assert (t["dealing_method"], t["no_method"]) == (None, "no other dealing method is configured")


@pytest.mark.browser
def test_the_page_says_none_usable_and_the_method_again_also_after_a_restart(
    archiver: Archiver, floor_dsn: str
) -> None:
    from selenium.webdriver.common.by import By

    first, second, third = played()
    tile = f'.tile[data-table="{TABLE}"]'
    with chromium("1400,1000", {"browser": "ALL"}) as browser:
        page = Page(browser)
        with first_console(page, archiver, floor_dsn, [birth(), *first]) as server:
            page.shows(f"{tile} .method", "manual_shoe, manual shuffle and cut, dealing by manual_shoe")
            page.fed(server, archiver, second)
            page.shows(f"{tile} .method", "none usable, manual shuffle and cut, dealing by manual_shoe")
            assert page.text(f'{tile} .no-method[data-block="no_method"]').startswith("no_method: ")
            browser.find_element(By.CSS_SELECTOR, tile).click()
            page.shows('#tv-now dd[data-field="dealing method"]', "none usable (no_method)")
            assert page_errors(browser) == []

        # A restart reads the archive (its births, each table's last events and its last word on the method, said more
        # than 200 lines ago): the table still cannot deal.
        with restarted_console(page, archiver, floor_dsn) as server:
            page.shows(f"{tile} .method", "none usable, manual shuffle and cut, dealing by manual_shoe")
            page.fed(server, archiver, third)
            page.shows(f"{tile} .method", "manual_shoe, manual shuffle and cut, dealing by manual_shoe")
            assert not browser.find_elements(By.CSS_SELECTOR, f"{tile} .no-method")
            with psycopg.connect(floor_dsn) as conn:
                types = [r[0] for r in conn.execute("SELECT type FROM events ORDER BY seq").fetchall()]
            assert types.count("device.out_of_order") == 2 and types[-2:] == [
                "device.back_in_service",
                "table.block_cleared",
            ], json.dumps(types)
            assert page_errors(browser) == []
