"""Tables for the covers (.13(g)) landing after "no more bets": a round held in LOCKING (the stations acknowledge their
locks only when the test lets them), and a shuffler that reports its card order whatever the method configured (a
card-reading shuffler, which a table that may turn to dealing from the hand needs). Shared by
tests/engine/test_cover_while_locking.py and tests/engine/test_cover_matrix.py, so that neither imports the other."""

from __future__ import annotations

from controller.engine.commands import DeviceCommand, LockSeat, Shuffle
from controller.engine.inputs import Input, OpenTable
from controller.engine.round import RoundEngine
from controller.engine.spec import DealingMethod
from controller.engine.state import Phase, TableState
from controller.games.registry import SPECS
from drivers.interfaces import LockAcknowledged, ShuffleCompleted
from tests.engine.chapter_faults import counting
from tests.engine.conftest import PureTable, enter_player, example_rules
from tests.engine.held_faults import NO_HIT

HAND_AND_SHOE = ("643a", "655a", "683a")  # the chapters that deal from the hand and from an automated shoe


class HeldLocks:
    """The devices as perfect, but the stations' lock acknowledgements are kept back until `release`, so the round
    stays in LOCKING; the shuffler reports its order on every table (a card-reading shuffler)."""

    def __init__(self, t: PureTable) -> None:
        self.t = t
        self.perfect = t.answer
        self.waiting: list[LockSeat] = []
        self.holding = False

    def __call__(self, c: DeviceCommand) -> list[Input]:
        if self.holding and isinstance(c, LockSeat):
            self.waiting.append(c)
            return []
        if isinstance(c, Shuffle):
            self.t.shoe = self.t.decks.pop(0) if self.t.decks else list(NO_HIT)
            return [ShuffleCompleted("shuffler", card_count=52, order=tuple(self.t.shoe))]
        return self.perfect(c)

    def release(self) -> list[Input]:
        self.holding = False
        waiting, self.waiting = self.waiting, []
        return [LockAcknowledged(f"wager_station_{c.seat}", seat=c.seat, locked=True) for c in waiting]


def reading_table(chapter: str, method: DealingMethod, fallback: DealingMethod | None) -> tuple[PureTable, HeldLocks]:
    """Two players, a card-reading shuffler, the locks answered at once until `locks.holding` is set."""
    options = counting(chapter, fallback_dealing_method=fallback)
    t = PureTable(RoundEngine(SPECS[chapter], example_rules(chapter), method, options), TableState("t1"))
    t.decks = [list(NO_HIT) for _ in range(6)]  # no progressive is hit: no validation holds a round open
    locks = HeldLocks(t)
    t.answer = locks
    t.feed(OpenTable())
    enter_player(t, 1)
    enter_player(t, 2)
    return t, locks


def locking(chapter: str, method: DealingMethod, fallback: DealingMethod | None) -> tuple[PureTable, HeldLocks]:
    """A round past "no more bets", its wagers locked, the stations' acknowledgements awaited: no card out yet."""
    t, locks = reading_table(chapter, method, fallback)
    if t.state.phase is not Phase.BETTING:
        raise RuntimeError(f"expected betting, the table is {t.state.phase}")
    locks.holding = True
    t.press("no_more_bets")
    if t.state.phase.value != "locking" or not locks.waiting:
        raise RuntimeError(f"expected the locks awaited, the table is {t.state.phase}")
    return t, locks


def release(t: PureTable, locks: HeldLocks) -> None:
    for inp in locks.release():
        t.feed(inp)
