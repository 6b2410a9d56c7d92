"""The card-reading shuffler's order over a real pseudo-terminal, into the round engine (603a.15(a)-(c), 679a.9(a)(1)):
the reference driver passes on what the shuffler read, a card twice included, and the table dealing from the hand
must not lay it: the deck is removed before betting opens."""

from __future__ import annotations

from controller.engine.commands import DeviceCommand, Shuffle
from controller.engine.inputs import Input, OpenTable
from controller.engine.round import RoundEngine
from controller.engine.state import Phase, TableState
from controller.games.registry import SPECS
from drivers.interfaces import DeviceOnline, ShuffleCompleted
from drivers.sim.shuffler import FRESH_DECK
from drivers.sim.table import SimulatedTable
from tests.drivers.conftest import DriverFactory
from tests.engine.chapter_faults import counting
from tests.engine.conftest import PureTable, example_rules


async def test_603a_15_a_card_read_twice_reaches_the_engine_and_the_deck_is_removed(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    deck = list(FRESH_DECK)
    deck[7] = deck[0]  # a card of another deck with the same back: read twice, 52 counted
    table.shuffler.script_decks([deck])
    shuffler, events = await start_driver("shuffler", "reference-shuffler", table.ports["shuffler"])
    await events.next(DeviceOnline)
    await shuffler.shuffle()
    read = await events.next(ShuffleCompleted)
    assert (read.card_count, list(read.order)) == (52, deck)

    engine = RoundEngine(SPECS["679a"], example_rules("679a"), "hand", counting("679a"))
    t = PureTable(engine, TableState("t1"))
    fallback = t.answer

    def shuffler_on_the_pty(c: DeviceCommand) -> list[Input]:
        return [] if isinstance(c, Shuffle) else fallback(c)  # its answer is the driver's event, fed below

    t.answer = shuffler_on_the_pty
    t.feed(OpenTable())
    assert t.state.phase is Phase.SHUFFLING
    out = t.feed(read)
    removed = [e for e in out if e.type == "deck.removed"]
    assert [e.rule for e in removed] == ["679a.9(d)"]
    assert f"duplicate card(s) {deck[0]}" in removed[0].payload["reason"]
    assert "betting.opened" not in t.types() and "deck_removed" in t.state.blocks
