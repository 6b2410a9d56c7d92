"""A table whose shuffler is marked out of order (655a.13(g)): shared by the engine's and the console's tests of what a
table says when it opens again (tests/engine/test_reopen_method.py, tests/floor/test_console_reopen_method.py)."""

from __future__ import annotations

from controller.engine.inputs import Confirm, MarkOutOfOrder
from drivers.interfaces import DeviceFault
from tests.engine.chapter_faults import counting, table
from tests.engine.conftest import PureTable
from tests.engine.held_faults import NO_HIT

MANUAL = "manual shuffle and cut, dealing by manual_shoe"


def hand_dealt() -> PureTable:
    """655a dealt from the hand, a manual shoe its fallback, the shuffler marked out of order: the manual shoe deals."""
    t = table("655a", "hand", counting("655a", fallback_dealing_method="manual_shoe"))
    t.shoe, t.decks = list(NO_HIT), [list(NO_HIT) for _ in range(4)]
    t.feed(DeviceFault("shuffler", code="malfunction"))
    t.feed(MarkOutOfOrder("shuffler"))
    t.shoe = list(NO_HIT)
    t.feed(Confirm("dealer", "shuffled"))
    return t
