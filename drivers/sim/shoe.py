"""Simulated automated dealing shoe with a card reader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from drivers.sim.base import SimDevice
from drivers.sim.faults import SHOE_BEHAVIOUR, SHOE_EVENTS, FaultKind


class ShoeSim(SimDevice):
    model = "SIM-SHOE"
    behaviours: ClassVar[Mapping[FaultKind, str]] = SHOE_BEHAVIOUR
    events: ClassVar[frozenset[str]] = SHOE_EVENTS

    def __init__(self, device_id: str, address: int = 1) -> None:
        super().__init__(device_id, address)
        self._cards: list[str] = []

    @property
    def cards(self) -> list[str]:
        """Cards still in the shoe, top first."""
        return list(self._cards)

    def load(self, cards: list[str]) -> None:
        self._cards = list(cards)
        self._note("load")
        fault = self._take("load")
        if fault is not None and len(self._cards) >= 2:
            # The second card is a copy of the first: the same card comes out twice in the first stack.
            self._cards[1] = self._cards[0]

    def handle(self, command: str, message: Mapping[str, Any]) -> bool:
        if command == "dispense":
            count = message["cards"]
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ValueError(f"cards must be a positive integer, got {count!r}")
            fault = self._take("dispense")
            if fault is not None and fault.kind is FaultKind.JAM:
                self.reply({"evt": "fault", "code": "jam", "detail": "card jam at the dispensing gate"})
                return True
            if fault is not None and fault.kind is FaultKind.FACE_UP and self._cards:
                # The reader saw the top card's face: it goes to the discard tray, the stack is the cards after it.
                self.reply({"evt": "face_up", "card": self._cards.pop(0)})
            foreign = fault is not None and fault.kind is FaultKind.FOREIGN
            needed = count - 1 if foreign else count
            if needed > len(self._cards):
                self.reply({"evt": "fault", "code": "empty",
                            "detail": f"asked for {count} cards, {len(self._cards)} left"})
                return True
            stack, self._cards = self._cards[:needed], self._cards[needed:]
            if foreign and fault is not None:
                stack.insert(0, fault.card)  # a card from outside the deck sat on top
            self.reply({"evt": "stack", "cards": stack})
            return True
        if command == "remove_stub":
            stub, self._cards = self._cards, []
            self.reply({"evt": "stub", "cards": stub})
            return True
        return False
