"""The table view's picture of a round (floor/console/static/table.js `roundItem`): its id and outcome, the table
result, what it was dealt by and the devices out of order then, and one line a settlement, as a supervisor reads them
in a real headless Chromium. The round is a known one: the pure engine's 655a table dealing from the automated shoe
(seeded deck), the hand its fallback, its shoe marked out of order after the deal; archived by the floor's archive
writer on a real PostgreSQL and served by the console on a loopback port. A second table's journal is an older
table's (no `deal.started`): its line says the method is the table's word by the round's end."""

from __future__ import annotations

from datetime import date

import pytest

from controller.core.events import DomainEvent
from floor.messages import Incoming
from tests.floor.archiving import events_published, msg
from tests.floor.chromium import chromium, page_errors
from tests.floor.marked_table import (
    TABLE,
    Archiver,
    Page,
    birth,
    first_console,
    shoe_marked_after_the_deal,
)

pytestmark = [pytest.mark.floor, pytest.mark.browser]
OLDER = "nm-2"  # a table older than deal.started
ROUND = "t1-r000001"
SHOE = "automated_shoe"  # both tables are configured to deal from the shoe
OLDER_ROUND = f"{OLDER}-r000001"  # round ids name their table (docs/events.md): the engine's are t1's


def published(table: str, events: list[DomainEvent]) -> list[Incoming]:
    said = events_published(table, events, date(2026, 11, 27))
    for e in said:
        e["round_id"] = e["round_id"] and e["round_id"].replace("t1-", f"{table}-") if table == OLDER else e["round_id"]
    return [m for m in map(msg, said) if isinstance(m, Incoming)]


# What the line shows for the known round: the settlements counterclockwise from the dealer's right (655a.11(h)),
# each with its cards, the hand, every wager and the rule; amounts in dollars. Seat 1 made a pair of jacks (each of
# its four $5 wagers paid even money), seat 2 a high card; each lost its three side wagers ($6.00 the table's result).
WAGERS = (
    "ante $5.00 {0} paid {1}; street_3 $5.00 {0} paid {1}; street_4 $5.00 {0} paid {1}; street_5 $5.00 {0} paid {1}"
)
SETTLED = [
    f"hand.settled seat 2: 2h 4c high_card {WAGERS.format('lose', '$0.00')} [655a.11(h)(1)]",
    "progressive.settled seat 2: 2h 4c high_card lose paid $0.00 [655a.11(i)(1)]",
    "three_card_bonus.settled seat 2: 2h 4c high_card lose paid $0.00 [655a.11(i)(2)(ii)]",
    "six_card_bonus.settled seat 2: 2h 4c high_card lose paid $0.00 [655a.11(i)(4)(ii)]",
    f"hand.settled seat 1: Kd Js pair_of_jacks_or_better {WAGERS.format('win', '$5.00')} [655a.11(h)(3)]",
    "progressive.settled seat 1: Kd Js pair lose paid $0.00 [655a.11(i)(1)]",
    "three_card_bonus.settled seat 1: Kd Js high_card lose paid $0.00 [655a.11(i)(2)(ii)]",
    "six_card_bonus.settled seat 1: Kd Js high_card lose paid $0.00 [655a.11(i)(4)(ii)]",
]
LINE = {
    TABLE: [f"{ROUND} completed table result $6.00", "dealt by automated_shoe; out of order: none", *SETTLED],
    OLDER: [
        f"{OLDER_ROUND} completed table result $6.00",
        "dealt by hand (as the table said it by the round's end: no deal.started on record); out of order: shoe "
        "(hand took over)",
        *SETTLED,
    ],
}


def test_the_round_s_line_shows_the_known_round(archiver: Archiver, floor_dsn: str) -> None:
    from selenium.webdriver.common.by import By

    events = shoe_marked_after_the_deal()
    older = [e for e in events if e.type != "deal.started"]
    batch = [birth(TABLE, SHOE), birth(OLDER, SHOE), *published(TABLE, events), *published(OLDER, older)]
    with chromium("1400,1000", {"browser": "ALL"}) as browser:
        page = Page(browser)
        with first_console(page, archiver, floor_dsn, batch):
            shown = {}
            for table, round_id in ((TABLE, ROUND), (OLDER, OLDER_ROUND)):
                page.open_table(table)
                shown[table] = page.text(f'#tv-rounds .round[data-round="{round_id}"]').split("\n")
                browser.find_element(By.CSS_SELECTOR, "#tv-close").click()
            assert page_errors(browser) == []
    assert shown == LINE
