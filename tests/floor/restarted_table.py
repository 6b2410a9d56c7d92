"""Tables restarted in a round, for the console's tests of what it shows after a restart
(tests/floor/test_console_after_restart.py): the pure engine's events (tests/engine), published as the table publishes
them and parsed as the floor parses them. Each table's round ids carry its own table id (the engine's are `t1-...`),
as a real table's do: the round recall reads a round by its id alone."""

from __future__ import annotations

from datetime import date

from controller.core.events import DomainEvent
from controller.engine.inputs import CloseTable, Confirm, MarkOutOfOrder, Recover, StopRecord
from controller.engine.recovery import stopped
from controller.store import snapshot
from floor.messages import Incoming
from tests.engine.chapter_faults import counting, table
from tests.engine.conftest import PureTable
from tests.engine.covers import locking
from tests.engine.held_faults import NO_HIT
from tests.engine.mississippi_table import make
from tests.floor.archiving import events_published, msg

BY = "supervisor super-bob"
MANY = 210  # more lines than a restarted console reads back of a table (floor/console/table_extra.py LOG_LINES)


def parsed_as(
    table_id: str, events: list[DomainEvent], first: int = 1, day: date = date(2026, 11, 27)
) -> list[Incoming]:
    said = events_published(table_id, events, day, first)
    for m in said:
        if m["round_id"] is not None:
            m["round_id"] = m["round_id"].replace("t1-", f"{table_id}-", 1)
    parsed = [m for m in map(msg, said) if isinstance(m, Incoming)]
    if len(parsed) != len(said):
        raise RuntimeError("an event the floor does not parse")
    return parsed


def taps(t: PureTable, n: int = MANY) -> list[DomainEvent]:
    """The dealer's taps the table ignores in a round: lines of the round in play, none saying anything new."""
    out: list[DomainEvent] = []
    for _ in range(n):
        out += t.feed(Confirm("dealer", "shuffled"))
    return out


def stopped_while_closing() -> tuple[PureTable, list[DomainEvent]]:
    """A 655a table's round 1: "no more bets" refused (no Ante yet), an Ante, the deal, a close asked by a supervisor,
    the table stopped at once (SIGTERM) and restarted on its stored state, the close still standing; then more of the
    round's lines than a restarted console reads back. The table as it is (to play the round out) and its events."""
    t = make()
    t.press("no_more_bets")
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    t.feed(CloseTable(by=BY))
    stop = stopped(t.state, "SIGTERM")
    t.events.append(stop)
    t.state = snapshot.decode(snapshot.encode(t.state))
    t.feed(Recover(after_stop=StopRecord(len(t.events), "SIGTERM")))
    taps(t)
    return t, list(t.events)


def played_out(t: PureTable) -> list[DomainEvent]:
    """The round played out: it completes, and the table closes as asked."""
    out: list[DomainEvent] = []
    for street in ("street_3", "street_4", "street_5"):
        out += t.wager(1, street, 500)
    if [e.type for e in out[-2:]] != ["round.completed", "table.closed"]:
        raise RuntimeError(f"expected the round completed and the table closed, got {[e.type for e in out[-3:]]}")
    return out


def voided() -> list[DomainEvent]:
    """A 655a table dealing from the automated shoe, the hand its fallback: the shoe marked with the wagers locked
    and no card out, so the round is void (.13(f))."""
    t, _locks = locking("655a", "automated_shoe", "hand")
    t.feed(MarkOutOfOrder("shoe"))
    return list(t.events)


def marked_long_ago() -> list[DomainEvent]:
    """A round dealt from the automated shoe, the shoe marked in its decisions (dealt on to its end, the next round
    by hand), then more of the round's lines than a restarted console reads back."""
    t = table("655a", "automated_shoe", counting("655a", fallback_dealing_method="hand"))
    t.shoe, t.decks = list(NO_HIT), [list(NO_HIT) for _ in range(4)]
    t.press("no_more_bets")
    t.feed(MarkOutOfOrder("shoe"))
    taps(t)
    return list(t.events)


def marked_in_an_old_journal() -> tuple[list[DomainEvent], list[DomainEvent]]:
    """A table PC replaced under the same table id (docs/recovery.md): the old journal's round 1 had its shoe marked in
    its decisions (`this_round`); the new journal counts seq and rounds from 1 again, idle past the old one's seqs,
    then deals its own round 1, in play, nothing marked."""
    old = table("655a", "automated_shoe", counting("655a", fallback_dealing_method="hand"))
    old.shoe, old.decks = list(NO_HIT), [list(NO_HIT) for _ in range(4)]
    old.press("no_more_bets")
    old.feed(MarkOutOfOrder("shoe"))
    new = table("655a", "automated_shoe", counting("655a", fallback_dealing_method="hand"))
    new.shoe, new.decks = list(NO_HIT), [list(NO_HIT) for _ in range(4)]
    taps(new, len(old.events) + 5)
    new.press("no_more_bets")
    return list(old.events), list(new.events)
