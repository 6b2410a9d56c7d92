"""Simulated counting, card-reading batch shuffler."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from drivers.reference.framing import RANKS, SUITS
from drivers.sim.base import SimDevice
from drivers.sim.faults import SHUFFLER_BEHAVIOUR, SHUFFLER_EVENTS, FaultKind

FRESH_DECK = tuple(rank + suit for suit in SUITS for rank in RANKS)

_FAILURES = {
    FaultKind.JAM: "card jam at the elevator",
    FaultKind.STOPPED: "stopped mid-shuffle",
    FaultKind.INCOMPLETE: "shuffle incomplete: cards left in the input tray",
}


class ShufflerSim(SimDevice):
    model = "SIM-SHUFFLER"
    behaviours: ClassVar[Mapping[FaultKind, str]] = SHUFFLER_BEHAVIOUR
    events: ClassVar[frozenset[str]] = SHUFFLER_EVENTS

    def __init__(
        self,
        device_id: str,
        rng: random.Random,
        on_shuffled: Callable[[list[str]], None],
        address: int = 1,
    ) -> None:
        super().__init__(device_id, address)
        self._rng = rng
        self._on_shuffled = on_shuffled
        self._scripted: deque[list[str]] = deque()

    def script_decks(self, decks: Iterable[Sequence[str]]) -> None:
        """Queue deck orders for the next shuffles, used verbatim (even if not a valid deck)."""
        self._scripted.extend(list(deck) for deck in decks)

    def handle(self, command: str, message: Mapping[str, Any]) -> bool:
        if command != "shuffle":
            return False
        fault = self._take("shuffle")
        if fault is not None and fault.kind in _FAILURES:
            # The shuffle never finished, so the scripted deck waits for the reshuffle that follows.
            self.reply({"evt": "fault", "code": fault.kind.value, "detail": _FAILURES[fault.kind]})
            return True
        if self._scripted:
            deck = self._scripted.popleft()
        else:
            deck = list(FRESH_DECK)
            self._rng.shuffle(deck)
        if fault is not None and fault.kind is FaultKind.COUNT_51:
            deck = deck[:-1]  # a card went missing (stuck in the machine, on the floor)
        elif fault is not None and fault.kind is FaultKind.COUNT_53:
            deck = [*deck, deck[0]]  # a card of another deck got mixed in, so one is there twice
        # The shuffler feeds the shoe directly: the stack is in the shoe before completion is reported.
        self._on_shuffled(list(deck))
        # A card-reading shuffler: the order lets the dealer deal from the hand with every card known.
        self.reply({"evt": "shuffle_complete", "count": len(deck), "order": list(deck)})
        return True
