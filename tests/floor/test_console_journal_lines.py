"""The console's start reads each table's last lines of the journal in use alone (floor/console/loading.py
LAST_LINES): a table PC replaced under the same table id counts seq from 1 again (tests/floor/journal_replaced.py),
and read by seq alone the old journal's events, above the new one's archived seqs or among them, came into the live
log and into the tile's last round (the old journal's round 1, in betting, under the new round's id); and the old
journal's shoe, marked out of order, was still marked on the tile when the new journal's opening had been refused.

Real parts: the floor's archive writer on a real PostgreSQL, the pure engine's events, the live models as a restarted
floor reads them (floor/archive.py load_state), and the console's own start (load_view)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import psycopg
import pytest

from floor.console.loading import load_view
from floor.console.table_extra import LOG_LINES
from floor.console.views import FloorView
from tests.floor.journal_replaced import OLD_TO, ROUND, new_journal, old_journal, published
from tests.floor.marked_table import TABLE, archiving

pytestmark = [pytest.mark.floor]


@pytest.mark.parametrize("old_from", [40, 1], ids=["old-journal-partly-retired", "old-journal-whole"])
def test_the_live_log_and_last_round_are_the_new_journal_s(floor_dsn: str, old_from: int) -> None:
    old = published(old_journal(old_from), date(2026, 11, 20), old_from)
    new = published(new_journal(), date(2026, 11, 27), 1)
    with archiving(floor_dsn) as a:
        a.write(old)
        a.write(new)
        live = a.live_at_start(floor_dsn)
    view = FloorView()
    with psycopg.connect(floor_dsn) as conn:
        load_view(view, live, conn)
    x = view.table(TABLE)
    # The new journal's events the archive holds: those whose seq no old key still held (the rest were refused).
    kept = [m.content for m in new if not old_from <= int(m.content["seq"]) <= OLD_TO]
    assert [(line["seq"], line["ts"]) for line in x.lines] == [(e["seq"], e["ts"]) for e in kept][-LOG_LINES:]
    assert all(str(line["ts"]).startswith("2026-11-27") for line in x.lines)
    shown = view.tile(TABLE, datetime(2026, 11, 27, 23, tzinfo=UTC))["last_round"]
    assert shown is not None
    assert (shown["round_no"], shown["outcome"]) == (1, "completed"), shown
    assert x.out_of_order == {}  # the old journal's shoe marked; the new journal's, never
    assert live[TABLE].round_id != ROUND  # the new journal's round 2 is in play, its round 1 finished
