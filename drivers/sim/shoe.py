"""Simulated automated dealing shoe with a card reader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drivers.sim.base import SimDevice


class ShoeSim(SimDevice):
    model = "SIM-SHOE"

    def __init__(self, device_id: str, address: int = 1) -> None:
        super().__init__(device_id, address)
        self._cards: list[str] = []

    @property
    def cards(self) -> list[str]:
        """Cards still in the shoe, top first."""
        return list(self._cards)

    def load(self, cards: list[str]) -> None:
        self._cards = list(cards)

    def handle(self, command: str, message: Mapping[str, Any]) -> bool:
        if command == "dispense":
            count = message["cards"]
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ValueError(f"cards must be a positive integer, got {count!r}")
            if count > len(self._cards):
                self.reply({"evt": "fault", "code": "empty",
                            "detail": f"asked for {count} cards, {len(self._cards)} left"})
                return True
            stack, self._cards = self._cards[:count], self._cards[count:]
            self.reply({"evt": "stack", "cards": stack})
            return True
        if command == "remove_stub":
            stub, self._cards = self._cards, []
            self.reply({"evt": "stub", "cards": stub})
            return True
        return False
