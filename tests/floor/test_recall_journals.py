"""The round recall keeps to the round's own journal: a table PC replaced under the same table id, its fresh journal
counting seq and rounds from 1 again (no broker anchor to go on from, docs/recovery.md), next to what the archive
still holds of the old journal (its first days retired, docs/floor.md "Retention"). The old journal's shoe was marked
out of order; the new one's never was. Its seqs the old one's archived keys still hold are refused (integrity alarms,
`seq_reused`); the rest is archived, its round under the old one's round id.

Read by seq alone, the new round's "last opening" was the old journal's (a higher seq than the new one's opening),
its marks the old shoe's, and its events mixed with the old round of the same id. A journal starts at its seq 1
(archived, or refused and kept in the alarm): the recall reads the round's journal from its latest start on.

The events are the pure engine's (a 655a table dealing from the automated shoe, the hand its fallback), archived
by the floor's archive writer on a real PostgreSQL; the new journal is an older table's, without `deal.started`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import psycopg
import pytest

from floor.messages import Incoming
from floor.recall import last_rounds, recall_round
from tests.floor.archiving import events_published, msg
from tests.floor.journal_replaced import OLD_TO, ROUND, new_journal, old_journal, published
from tests.floor.marked_table import TABLE, Archiver, archiving

pytestmark = [pytest.mark.floor]


@pytest.fixture(params=[40, 1], ids=["old-journal-partly-retired", "old-journal-whole"])
def old_from(request: pytest.FixtureRequest) -> int:
    """The old journal's first seq the archive holds: 40 (its earlier days retired: the new journal's seq 1, its
    opening, archived), or 1 (the new journal's seq 1 and opening refused, kept in their alarms)."""
    return int(request.param)


@pytest.fixture
def archiver(floor_dsn: str, old_from: int) -> Iterator[Archiver]:
    with archiving(floor_dsn) as a:
        a.write(published(old_journal(old_from), date(2026, 11, 20), old_from))
        new = published(new_journal(), date(2026, 11, 27), 1)
        result = a.loop.run_until_complete(a.writer.write(new))
        assert {x.kind for x in result.alarms} == {"seq_reused"}
        assert sorted(x.seq for x in result.alarms) == list(range(old_from, OLD_TO + 1))
        yield a


def test_the_new_journal_s_round_reads_its_own_journal(archiver: Archiver, floor_dsn: str, old_from: int) -> None:
    with psycopg.connect(floor_dsn) as conn:
        story = recall_round(conn, ROUND)
    assert story is not None
    assert story.started.startswith("2026-11-27") and story.outcome == "completed"
    assert all(line.ts.startswith("2026-11-27") for line in story.lines), [x.ts for x in story.lines[:3]]
    # Its opening archived, the method it said; refused, none on record (not the old journal's, by hand).
    said: tuple[str | None, dict[str, str | None], str | None] = (
        ("automated_shoe", {}, "round end") if old_from > 1 else (None, {}, None)
    )
    assert (story.dealing_method, story.out_of_order, story.dealt_by_said) == said
    assert story.earlier_journal == len([e for e in old_journal(old_from) if e.round_id == ROUND])


def test_the_table_s_last_rounds_are_its_new_journal_s(archiver: Archiver, floor_dsn: str) -> None:
    with psycopg.connect(floor_dsn) as conn:
        rounds = last_rounds(conn, TABLE, 5)
    assert [(s.round_id, s.outcome) for s in rounds] == [("t1-r000002", "in progress"), (ROUND, "completed")]
    assert all(line.ts.startswith("2026-11-27") for s in rounds for line in s.lines)


def test_one_journal_whose_clock_went_back_is_recalled_whole(floor_dsn: str) -> None:
    """A table with one journal (no other start, no seq reused) whose clock was ahead at its first event and then set
    back: nothing tells of another journal, so time does not split it; every event of the round is recalled."""
    said = events_published(TABLE, new_journal(), date(2026, 11, 27))
    ours = [e for e in said if e["round_id"] == ROUND]
    said[0]["ts"] = ours[len(ours) // 2]["ts"]  # seq 1 stamped as late as the middle of the round
    with archiving(floor_dsn) as a:
        a.write([m for m in map(msg, said) if isinstance(m, Incoming)])
        with psycopg.connect(floor_dsn) as conn:
            story = recall_round(conn, ROUND)
    assert story is not None and story.earlier_journal == 0
    assert len(story.lines) == len(ours)
    assert (story.dealing_method, story.dealt_by_said) == ("automated_shoe", "round end")
