"""The recall's "dealt by" is the method the round's cards came by (its `deal.started`, docs/events.md), not the one
the table was left with at the round's end: a 655a table dealing from the automated shoe, the hand its fallback,
whose shoe is marked out of order (655a.13(g)) after the deal and before the round's decisions are all made. The
round was dealt by the shoe; the table deals its next rounds by hand. An archive of a table older than the event
reads as before, and says so.

The events are the pure engine's, archived by the floor's archive writer on a real PostgreSQL."""

from __future__ import annotations

from datetime import date

import psycopg
import pytest

from controller.core.events import DomainEvent
from floor.messages import Incoming
from floor.recall import recall_round, render_round
from tests.floor.archiving import events_published, msg
from tests.floor.marked_table import TABLE, Archiver, shoe_marked_after_the_deal

pytestmark = [pytest.mark.floor]
ROUND = "t1-r000001"


def archived(archiver: Archiver, events: list[DomainEvent]) -> None:
    said = events_published(TABLE, events, date(2026, 11, 27))
    archiver.write([m for m in map(msg, said) if isinstance(m, Incoming)])


def test_a_round_dealt_by_the_shoe_marked_out_of_order_after_the_deal_reads_dealt_by_the_shoe(
    archiver: Archiver, floor_dsn: str
) -> None:
    archived(archiver, shoe_marked_after_the_deal())
    with psycopg.connect(floor_dsn) as conn:
        story = recall_round(conn, ROUND)
    assert story is not None and story.outcome == "completed"
    assert (story.dealing_method, story.out_of_order) == ("automated_shoe", {})
    assert story.dealt_by_said == "deal"
    assert "  dealt by automated_shoe; out of order: none\n" in render_round(story)


def test_an_archive_without_the_deal_s_method_reads_the_round_s_end_and_says_so(
    archiver: Archiver, floor_dsn: str
) -> None:
    """A table older than `deal.started`: the method it had said by the round's end, as the recall read it before."""
    archived(archiver, [e for e in shoe_marked_after_the_deal() if e.type != "deal.started"])
    with psycopg.connect(floor_dsn) as conn:
        story = recall_round(conn, ROUND)
    assert story is not None
    assert (story.dealing_method, story.out_of_order, story.dealt_by_said) == ("hand", {"shoe": "hand"}, "round end")
    assert (
        "  dealt by hand (as the table said it by the round's end: no deal.started on record); "
        "out of order: shoe out of order (hand took over)\n"
    ) in render_round(story)
