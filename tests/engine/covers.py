"""Tables for the covers (.13(g)) landing in each phase of a round: the devices as perfect, but the answers to one
kind of command kept back until the test lets them go (the stations' lock acknowledgements, so the round stays in
LOCKING; the shuffle; the automated shoe's next stack), and a shuffler that reports its card order whatever the method
configured (a card-reading shuffler, which a table that may turn to dealing from the hand needs). Shared by
tests/engine/test_cover_while_locking.py and tests/engine/test_cover_matrix.py, so that neither imports the other;
and the automated-shoe table falling back to the hand whose shoe is covered in betting (tests/engine/
test_cover_in_betting.py, tests/floor/test_console_log_words.py)."""

from __future__ import annotations

from controller.core.settlement import ChapterRules
from controller.engine.commands import DeviceCommand, DispenseStack, LockSeat, Shuffle
from controller.engine.inputs import Confirm, CountEntered, Input, OpenTable
from controller.engine.round import RoundEngine
from controller.engine.spec import DealingMethod, TableOptions
from controller.engine.state import Phase, TableState
from controller.games.registry import SPECS
from drivers.interfaces import ShuffleCompleted
from tests.engine.chapter_faults import counting
from tests.engine.conftest import PureTable, decide_all, enter_player, example_rules
from tests.engine.held_faults import NO_HIT

HAND_AND_SHOE = ("643a", "655a", "683a")  # the chapters that deal from the hand and from an automated shoe
KEPT = {"locks": LockSeat, "shuffle": Shuffle, "stack": DispenseStack}


class Paused:
    """The devices as perfect, but the answers to the commands of `kind` (KEPT) are kept back, after the first `skip`
    of them, until `release`; the shuffler reports its order on every table."""

    def __init__(self, t: PureTable) -> None:
        self.t = t
        self.perfect = t.answer
        self.kind: str | None = None
        self.skip = 0
        self.kept: list[DeviceCommand] = []

    def __call__(self, c: DeviceCommand) -> list[Input]:
        if self.kind is not None and isinstance(c, KEPT[self.kind]):
            if self.skip == 0:
                self.kept.append(c)
                return []
            self.skip -= 1
        if isinstance(c, Shuffle):
            self.t.shoe = self.t.decks.pop(0) if self.t.decks else list(NO_HIT)
            return [ShuffleCompleted("shuffler", card_count=len(self.t.shoe), order=tuple(self.t.shoe))]
        return self.perfect(c)

    def release(self) -> list[Input]:
        self.kind = None
        kept, self.kept = self.kept, []
        return [inp for c in kept for inp in self(c)]


def reading_table(
    chapter: str,
    method: DealingMethod,
    fallback: DealingMethod | None,
    kind: str | None = None,
    rules: ChapterRules | None = None,
    options: TableOptions | None = None,
) -> tuple[PureTable, Paused]:
    """Opened with two players (unless the answers of `kind` are kept from the start), a card-reading shuffler."""
    options = options or counting(chapter, fallback_dealing_method=fallback)
    engine = RoundEngine(SPECS[chapter], rules or example_rules(chapter), method, options)
    t = PureTable(engine, TableState("t1"))
    t.decks = [list(NO_HIT) for _ in range(8)]  # no progressive is hit: no validation holds a round open
    paused = Paused(t)
    paused.kind = kind
    t.answer = paused
    t.feed(OpenTable())
    if t.state.phase.value == "betting":
        enter_player(t, 1)
        enter_player(t, 2)
    return t, paused


def locking(chapter: str, method: DealingMethod, fallback: DealingMethod | None) -> tuple[PureTable, Paused]:
    """A round past "no more bets", its wagers locked, the stations' acknowledgements awaited: no card out yet."""
    t, paused = reading_table(chapter, method, fallback)
    paused.kind = "locks"
    t.press("no_more_bets")
    if t.state.phase.value != "locking" or not paused.kept:
        raise RuntimeError(f"expected the locks awaited, the table is {t.state.phase}")
    return t, paused


def release(t: PureTable, paused: Paused) -> None:
    for inp in paused.release():
        t.feed(inp)


def play_on(t: PureTable, paused: Paused, since: int) -> None:
    """Let the table go on from where a test paused it: the kept answers, the opening inspection, a manual shuffle,
    two players and "no more bets", the chip count, the deal from the hand, the stub count and every decision, until a
    round ends (completed or voided) after the event `since`."""
    for _ in range(30):
        if {"round.completed", "round.voided"} & set(t.types(t.events[since:])):
            return
        phase, r = t.state.phase.value, t.state.round
        if paused.kept:
            release(t, paused)
        elif phase == "opening":
            t.feed(Confirm("dealer", "cards_inspected"))
            t.feed(Confirm("floorperson", "cards_inspected"))
        elif phase == "shuffling":  # by hand: the shuffler's is answered, or kept
            t.shoe = list(NO_HIT)
            t.feed(Confirm("dealer", "shuffled"))
        elif phase == "betting":
            if r is None or not any(st.wagers for st in r.seats.values()):
                enter_player(t, 1)
                enter_player(t, 2)
            t.press("no_more_bets")
        elif phase == "reconciling" and r is not None:
            t.feed(CountEntered("chips", r.chips_accepted))
        elif phase == "dealt":
            decide_all(t, t.press("dealt"))
        elif phase == "decision":
            decide_all(t, [next(e for e in reversed(t.events) if e.type == "decision.requested")])
        elif phase == "stub_count" and r is not None:
            t.feed(CountEntered("stub", r.stub_expected))
        else:
            raise AssertionError(f"the table stopped in {phase}: {t.state.blocks}")
    raise AssertionError("no round ended")


def shoe_table(chapter: str, players: int = 2) -> PureTable:
    """An automated-shoe table falling back to the hand, in betting; its shuffler counts but reads no order, and no
    progressive is hit (no validation holds a round open)."""
    options = counting(chapter, fallback_dealing_method="hand")
    t = PureTable(RoundEngine(SPECS[chapter], example_rules(chapter), "automated_shoe", options), TableState("t1"))
    t.decks = [list(NO_HIT) for _ in range(4)]
    t.feed(OpenTable())
    for seat in range(1, players + 1):
        enter_player(t, seat)
    assert t.state.phase is Phase.BETTING and t.state.deck_order == []
    return t


def on_layout(t: PureTable) -> dict[int, dict[str, int]]:
    r = t.state.round
    return {} if r is None else {n: dict(st.wagers) for n, st in r.seats.items() if st.wagers}
