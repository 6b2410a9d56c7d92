"""A table PC replaced under the same table id (tests/floor/test_recall_journals.py, test_console_journal_lines.py):
its fresh journal counting seq and rounds from 1 again (no broker anchor to go on from, docs/recovery.md), next to
what the archive still holds of the old journal. The old journal's shoe was marked out of order; the new one's never
was. The events are the pure engine's (a 655a table dealing from the automated shoe, the hand its fallback); the new
journal is an older table's, without `deal.started`."""

from __future__ import annotations

from datetime import date

from controller.core.events import DomainEvent
from controller.engine.inputs import Confirm, MarkOutOfOrder
from floor.messages import Incoming
from tests.engine.chapter_faults import counting, table
from tests.engine.conftest import PureTable, decide_all
from tests.engine.held_faults import NO_HIT
from tests.floor.archiving import events_published, msg
from tests.floor.marked_table import TABLE

ROUND = "t1-r000001"
OLD_TO = 60  # the old journal's last seq


def opened() -> PureTable:
    t = table("655a", "automated_shoe", counting("655a", fallback_dealing_method="hand"))
    t.shoe, t.decks = list(NO_HIT), [list(NO_HIT) for _ in range(4)]
    return t


def taps(t: PureTable, until: int, said: list[DomainEvent]) -> list[DomainEvent]:
    """The dealer's taps the table ignores, until `said` reaches `until` events."""
    while len(said) < until:
        said += t.feed(Confirm("dealer", "shuffled"))
    return said


def old_journal(first: int) -> list[DomainEvent]:
    """Opened, its shoe marked out of order (the hand takes over), betting open on round 1: seqs `first` to OLD_TO."""
    t = opened()
    said = list(t.events) + t.feed(MarkOutOfOrder("shoe"))
    return taps(t, OLD_TO - first + 1, said)[: OLD_TO - first + 1]


def new_journal() -> list[DomainEvent]:
    """Opened with nothing marked, idle past the old journal's seqs, then round 1 dealt from the shoe and played."""
    t = opened()
    said = taps(t, OLD_TO + 5, list(t.events))
    said += t.press("no_more_bets")
    decide_all(t, said[-1:] + [e for e in said if e.type == "decision.requested"][-1:])
    said = list(t.events)
    assert "round.completed" in t.types() and not any(e.type.startswith("device.out") for e in said)
    return [e for e in said if e.type != "deal.started"]  # an older table's journal


def published(events: list[DomainEvent], day: date, first: int) -> list[Incoming]:
    return [m for m in map(msg, events_published(TABLE, events, day, first)) if isinstance(m, Incoming)]
