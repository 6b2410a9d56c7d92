"""What the floor console shows of a table restarted in a round (docs/console.md):

- a close still pending (`table.recovered`'s `closing`) on the tile and the table page, "closing after round 1 (asked
  by supervisor super-bob)", until the table closes or a restart says the close no longer stands; before, the tile
  and page said nothing of it once the table restarted (the live log's `table.closing` line scrolled away);
- the stop and the restart, a void and "no more bets" refused, in words among the settlements of the page's recent
  rounds (floor/round_notes.py); before, the rounds showed their settlements only;
- what becomes of the round in play by a device marked in it (`this_round`) after the console's own restart,
  from the archive however many events ago the mark was; before, only a mark within its last 200 lines.

The events are the pure engine's (tests/floor/restarted_table.py), archived by the floor's writer in a real
PostgreSQL cluster; the browser test is the console on a loopback port in Debian's headless Chromium."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import Any

import psycopg
import pytest

from floor.console.loading import load_view
from floor.console.table_extra import LOG_LINES, closing_text
from floor.console.views import FloorView
from floor.messages import Incoming
from floor.recall import recall_round
from floor.round_notes import note_text
from tests.floor.chromium import chromium, page_errors
from tests.floor.marked_table import (
    NOW,
    TABLE,
    Archiver,
    Page,
    birth,
    first_console,
    restarted_console,
    tile_after,
)
from tests.floor.restarted_table import (
    BY,
    marked_in_an_old_journal,
    marked_long_ago,
    parsed_as,
    played_out,
    stopped_while_closing,
    voided,
)

pytestmark = [pytest.mark.floor]
CLOSING = f"closing after round 1 (asked by {BY})"
ASKED_AGAIN = "every card is recorded: the seat whose turn it was is asked again"
ROUND_1 = [
    '"no more bets" refused: no player has made the wagers that enter a round [655a.7(d)(1)]',
    f"stopped at once (SIGTERM) in decision; at the restart: {ASKED_AGAIN}",
    f"restarted after the stop at seq 15 (SIGTERM) in decision: {ASKED_AGAIN}; still closing after round 1 "
    f"(asked by {BY}) [655a.11(b)]",
]
VOIDED = "vo-1"
MARKED = "mk-1"
VOID = (
    "voided: the dealing shoe was marked out of order in locking: covered or has a sign indicating that it is out of "
    "order placed on the device; all wagers returned; the cards are removed from the shoe and reshuffled (no card was "
    "dealt) [655a.13(f)]"
)
DEALT_ON = "dealt by automated_shoe to its end (shoe marked out of order); the next round by hand"


def at(messages: list[Incoming], type_: str) -> int:
    return next(i for i, m in enumerate(messages) if m.content["type"] == type_)


def test_the_tile_says_a_close_pending_before_the_stop_and_after_the_restart() -> None:
    t, events = stopped_while_closing()
    said = parsed_as(TABLE, events)
    stop, closing = at(said, "table.stopped"), at(said, "table.closing")
    view = FloorView()
    assert tile_after(view, [birth(), *said[:closing]])["closing"] is None
    assert tile_after(view, said[closing:stop])["closing"] == CLOSING
    # A console that hears the table only from its restart on (its own start read nothing older) says it too.
    fresh = FloorView()
    assert tile_after(fresh, [birth(), *said[stop + 1 :]])["closing"] == CLOSING
    assert tile_after(fresh, parsed_as(TABLE, played_out(t), len(events) + 1))["closing"] is None


def test_a_restart_that_no_longer_carries_the_close_takes_it_off() -> None:
    _, events = stopped_while_closing()
    said = parsed_as(TABLE, events)
    view = FloorView()
    tile_after(view, [birth(), *said[: at(said, "table.stopped")]])
    recovered = said[at(said, "table.recovered")]
    payload = {k: v for k, v in recovered.content["payload"].items() if k != "closing"}
    withdrawn = replace(recovered, content={**recovered.content, "payload": payload})
    assert tile_after(view, [withdrawn])["closing"] is None


def test_a_close_stored_by_older_software_names_nobody() -> None:
    assert closing_text({"after_round": 3, "by": None}) == "closing after round 3 (who asked is not recorded)"
    assert (
        closing_text({"after_round": "3", "by": "interrupt"}) == "closing after the round in play (asked by interrupt)"
    )
    assert closing_text(None) is None


def test_the_notes_are_said_in_words() -> None:
    assert note_text("table.recovered", {"phase": "betting", "what": "betting goes on"}) == (
        "restarted with no stop on record (a crash or a power cut) in betting: betting goes on"
    )
    assert note_text("round.voided", {"reason": "13(c)"}) == "voided: 13(c)"


def test_the_round_recall_says_the_stop_the_restart_and_the_refusal_in_order(
    archiver: Archiver, floor_dsn: str
) -> None:
    t, events = stopped_while_closing()
    played = events + played_out(t)
    archiver.write([birth(), *parsed_as(TABLE, played)])
    archiver.write([birth(VOIDED), *parsed_as(VOIDED, voided())])
    with psycopg.connect(floor_dsn) as conn:
        story, void = recall_round(conn, f"{TABLE}-r000001"), recall_round(conn, f"{VOIDED}-r000001")
    assert story is not None and void is not None
    assert [n["text"] + f" [{n['rule']}]" * bool(n["rule"]) for n in story.notes] == ROUND_1
    assert [n["seq"] for n in story.notes] == [5, 15, 16]
    settled = [i for i, e in enumerate(played, 1) if e.type == "hand.settled"]
    assert [s["seq"] for s in story.settlements] == settled and settled[0] > len(events)  # after the restart
    assert [n["text"] + f" [{n['rule']}]" for n in void.notes] == [VOID]


def test_a_restarted_console_reads_the_close_and_the_round_in_play_however_long_ago(
    archiver: Archiver, floor_dsn: str
) -> None:
    _, events = stopped_while_closing()
    marked = parsed_as(MARKED, marked_long_ago())
    archiver.write([birth(), *parsed_as(TABLE, events), birth(MARKED), *marked])
    # Neither the close nor the mark is among the lines a restarted console reads back.
    assert at(marked, "device.out_of_order") < len(marked) - LOG_LINES
    assert at(parsed_as(TABLE, events), "table.recovered") < len(events) - LOG_LINES
    view = FloorView()
    with psycopg.connect(floor_dsn) as conn:
        load_view(view, archiver.live_at_start(floor_dsn), conn)
    assert view.tile(TABLE, NOW)["closing"] == CLOSING
    assert view.tile(MARKED, NOW)["this_round"] == {"round_id": f"{MARKED}-r000001", "text": DEALT_ON}
    assert view.tile(TABLE, NOW)["this_round"] is None


def round_lines(browser: Any, round_id: str) -> list[str]:
    from selenium.webdriver.common.by import By

    found = browser.find_elements(By.CSS_SELECTOR, f'#tv-rounds .round[data-round="{round_id}"] li')
    return [e.text for e in found]


@pytest.mark.browser
def test_the_page_shows_the_close_the_round_s_story_and_the_round_in_play_after_restarts(
    archiver: Archiver, floor_dsn: str
) -> None:
    from selenium.webdriver.common.by import By

    t, events = stopped_while_closing()
    said = parsed_as(TABLE, events)
    stop = at(said, "table.stopped")
    tile = f'.tile[data-table="{TABLE}"]'
    others = [birth(VOIDED), *parsed_as(VOIDED, voided()), birth(MARKED), *parsed_as(MARKED, marked_long_ago())]
    with chromium("1400,1000", {"browser": "ALL"}) as browser:
        page = Page(browser)
        with first_console(page, archiver, floor_dsn, [birth(), *said[: stop + 1], *others]):
            page.shows(f"{tile} .closing", CLOSING)  # before the table's restart
        archiver.write(said[stop + 1 :])  # the table restarted while no console ran
        with restarted_console(page, archiver, floor_dsn) as server:
            page.shows(f"{tile} .closing", CLOSING)
            browser.find_element(By.CSS_SELECTOR, tile).click()
            page.shows('#tv-now dd[data-field="closing"]', CLOSING)
            page.wait.until(lambda d: round_lines(d, f"{TABLE}-r000001") == ROUND_1)
            # Closing already: the table would ignore a second close, so none is offered (its phase is the round's).
            offered = page.text("#tv-actions")
            assert "mark out of order" in offered and "close table" not in offered, offered
            page.fed(server, archiver, parsed_as(TABLE, played_out(t), len(events) + 1))
            page.wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, f"{tile} .closing"))
            page.shows('#tv-now dd[data-field="closing"]', "-")
            page.wait.until(lambda d: "open table" in page.text("#tv-actions"))
            # The round recalled again once completed: its settlement after the restart, as played.
            page.wait.until(lambda d: len(round_lines(d, f"{TABLE}-r000001")) == 4)
            lines = round_lines(browser, f"{TABLE}-r000001")
            assert lines[:3] == ROUND_1 and lines[3].startswith("hand.settled seat 1: "), lines
            browser.find_element(By.ID, "tv-close").click()
            browser.find_element(By.CSS_SELECTOR, f'.tile[data-table="{VOIDED}"]').click()
            page.wait.until(lambda d: round_lines(d, f"{VOIDED}-r000001") == [VOID])
            browser.find_element(By.ID, "tv-close").click()
            browser.find_element(By.CSS_SELECTOR, f'.tile[data-table="{MARKED}"]').click()
            page.shows('#tv-now dd[data-field="round in play"]', f"{MARKED}-r000001: {DEALT_ON}")
            assert page_errors(browser) == []


def test_a_restarted_console_does_not_bring_back_a_close_done(archiver: Archiver, floor_dsn: str) -> None:
    """The round played out and the table closed as asked: the round in play's `table.recovered` still says the close,
    the `table.closed` after it says it is done."""
    t, events = stopped_while_closing()
    archiver.write([birth(), *parsed_as(TABLE, events + played_out(t))])
    view = FloorView()
    with psycopg.connect(floor_dsn) as conn:
        load_view(view, archiver.live_at_start(floor_dsn), conn)
    assert view.tile(TABLE, NOW)["closing"] is None and view.tile(TABLE, NOW)["round_id"] == f"{TABLE}-r000001"


def test_a_mark_in_an_old_journal_s_round_of_the_same_id_is_not_the_round_in_play(
    archiver: Archiver, floor_dsn: str
) -> None:
    """A replaced table PC's fresh journal counts its rounds from 1 again: the old journal's round 1 had its shoe
    marked, the new one's round 1 (in play) has not; the restarted console reads the journal now writing only."""
    old, new = marked_in_an_old_journal()
    archiver.write([birth(MARKED), *parsed_as(MARKED, old, day=date(2026, 11, 20))])
    fresh = parsed_as(MARKED, new)
    result = archiver.loop.run_until_complete(archiver.writer.write(fresh))
    assert {x.kind for x in result.alarms} == {"seq_reused"}  # the fresh journal's seqs the old one's keys hold
    with psycopg.connect(floor_dsn) as conn:
        marks = conn.execute(
            "SELECT count(*) FROM events WHERE round_id = %s AND payload ? 'this_round'", (f"{MARKED}-r000001",)
        ).fetchone()
        view = FloorView()
        load_view(view, archiver.live_at_start(floor_dsn), conn)
    assert marks == (1,)  # the old journal's mark is in the archive, under the round in play's id
    tile = view.tile(MARKED, NOW)
    assert tile["round_id"] == f"{MARKED}-r000001" and tile["phase"] == "decision"
    assert tile["this_round"] is None
