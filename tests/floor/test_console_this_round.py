"""A device marked out of order in a round past "no more bets" (655a.13(g)): the supervisor sees what becomes of the
round in play (`device.out_of_order`'s `this_round`, docs/events.md): void, when its own automated shoe was covered
before its last card (.13(f)), or dealt to its end by its own method while the next round is dealt by the fallback.
The mark's line (the round recall's, `tablectl floor round`, and the console's live log) says it, and so does the
table view, beside the marks. Before, the line was the payload's first fields and the view said nothing of it.

The rounds are the pure engine's (tests/floor/marked_table.py, tests/engine/covers.py), archived by the floor's
archive writer on a real PostgreSQL; the browser test is the console on a loopback port with Debian's headless
Chromium. It also checks the tile of a table counting chips (tests/floor/test_live_chip_count.py)."""

from __future__ import annotations

from datetime import date

import psycopg
import pytest

from controller.core.events import DomainEvent
from controller.engine.inputs import MarkOutOfOrder
from floor.console.views import FloorView
from floor.messages import Incoming
from floor.recall import recall_round, render_round
from tests.engine.covers import locking
from tests.floor.archiving import events_published, msg
from tests.floor.chip_count_round import counted_round
from tests.floor.chromium import chromium, page_errors
from tests.floor.marked_table import (
    TABLE,
    Archiver,
    Page,
    birth,
    first_console,
    shoe_marked_after_the_deal,
    tile_after,
)

pytestmark = [pytest.mark.floor]
DEALT_ON = "dealt by automated_shoe to its end (shoe marked out of order); the next round by hand"
COVERED = "covered or has a sign indicating that it is out of order placed on the device"
STEPS = ("chip_count.requested", "deal.started")
VOID = "void: the shoe was marked out of order before its last card (.13(f)), every wager returned"


def shoe_marked_while_locking() -> list[DomainEvent]:
    """A 655a table dealing from the automated shoe, the hand its fallback: the shoe marked with the wagers locked
    and no card out, so the round is void (.13(f))."""
    t, _locks = locking("655a", "automated_shoe", "hand")
    marked = t.feed(MarkOutOfOrder("shoe"))
    assert "round.voided" in t.types(marked)
    return list(t.events)


def parsed(events: list[DomainEvent]) -> list[Incoming]:
    return parsed_as(TABLE, events)


def parsed_as(table: str, events: list[DomainEvent]) -> list[Incoming]:
    said = [msg(e) for e in events_published(table, events, date(2026, 11, 27))]
    return [m for m in said if isinstance(m, Incoming)]


@pytest.mark.parametrize(
    ("played", "fate"), [(shoe_marked_after_the_deal, DEALT_ON), (shoe_marked_while_locking, VOID)], ids=["on", "void"]
)
def test_the_marks_line_says_what_becomes_of_the_round(
    archiver: Archiver, floor_dsn: str, played: object, fate: str
) -> None:
    assert callable(played)
    archiver.write([birth(), *parsed(played())])
    with psycopg.connect(floor_dsn) as conn:
        story = recall_round(conn, "t1-r000001")
    assert story is not None
    (line,) = [ln.text for ln in story.lines if ln.type == "device.out_of_order"]
    assert line == f"shoe out of order ({COVERED}), hand takes over; the table deals by hand; the round in play: {fate}"
    assert f"device.out_of_order [655a.13(g)] {line}" in render_round(story)


def test_the_table_view_keeps_it_until_another_round() -> None:
    view = FloorView()
    said = parsed(shoe_marked_after_the_deal())
    marked = next(i for i, m in enumerate(said) if m.content["type"] == "device.out_of_order")
    assert tile_after(view, [birth(), *said[:marked]])["this_round"] is None
    assert tile_after(view, said[marked:])["this_round"] == {"round_id": "t1-r000001", "text": DEALT_ON}
    other = {**said[-1].content, "seq": 10_000, "round_id": "t1-r000002", "type": "betting.opened", "payload": {}}
    later = msg(other)
    assert isinstance(later, Incoming)
    assert tile_after(view, [later])["this_round"] is None


@pytest.mark.browser
def test_the_page_shows_the_round_in_play_and_a_count_awaited(archiver: Archiver, floor_dsn: str) -> None:
    from selenium.webdriver.common.by import By

    tile = f'.tile[data-table="{TABLE}"]'
    counting = parsed_as("cc-1", counted_round())
    asked, dealt = (next(i for i, m in enumerate(counting) if m.content["type"] == t) for t in STEPS)
    with chromium("1400,1000", {"browser": "ALL"}) as browser:
        page = Page(browser)
        with first_console(page, archiver, floor_dsn, [birth(), *parsed(shoe_marked_after_the_deal())]) as server:
            page.fed(server, archiver, counting[: asked + 1])
            page.shows('.tile[data-table="cc-1"] .phase', "counting chips")
            page.fed(server, archiver, counting[asked + 1 : dealt + 1])
            page.shows('.tile[data-table="cc-1"] .phase', "dealing")
            browser.find_element(By.CSS_SELECTOR, tile).click()
            page.shows('#tv-now dd[data-field="round in play"]', f"t1-r000001: {DEALT_ON}")
            assert page_errors(browser) == []
