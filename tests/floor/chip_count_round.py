"""A 643a round whose Five Card Bonus a table game system counts before any card (643a.8(b)(1)), from the pure engine:
shared by tests/floor/test_live_chip_count.py and test_console_this_round.py, so that neither imports the other."""

from __future__ import annotations

from controller.core.events import DomainEvent
from controller.engine.inputs import CountEntered
from tests.engine.held_faults import counted_643a


def counted_round() -> list[DomainEvent]:
    """A 643a table whose Five Card Bonus a table game system counts (tests/engine/held_faults.counted_643a: two
    bonuses wagered, the count awaited before any card), counted right."""
    t = counted_643a()
    assert "chip_count.requested" in t.types() and "cards.dealt" not in t.types()
    t.feed(CountEntered("chips", 2))
    assert "cards.dealt" in t.types()
    return list(t.events)
