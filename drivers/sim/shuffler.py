"""Simulated counting batch shuffler."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from drivers.protocol import RANKS, SUITS
from drivers.sim.base import SimDevice

FRESH_DECK = tuple(rank + suit for suit in SUITS for rank in RANKS)


class ShufflerSim(SimDevice):
    model = "SIM-SHUFFLER"

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
        if self._scripted:
            deck = self._scripted.popleft()
        else:
            deck = list(FRESH_DECK)
            self._rng.shuffle(deck)
        # The shuffler feeds the shoe directly: the stack is in the shoe before completion is reported.
        self._on_shuffled(list(deck))
        self.reply({"evt": "shuffle_complete", "count": len(deck)})
        return True
