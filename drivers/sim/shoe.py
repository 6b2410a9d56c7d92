"""Simulated dealing shoe with a card reader: automated (stack-dispensing) or manual (the dealer draws)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from drivers.sim.base import SimDevice
from drivers.sim.faults import SHOE_BEHAVIOUR, SHOE_EVENTS, FaultKind

# Manual shoe: a draw goes through the same gate and reader as a dispense, so the faults that act on the
# next dispense (jam, face_up, foreign) act on the next draw when the shoe is dealt from by hand.
DRAW_FAULTS_AS = "dispense"


class ShoeSim(SimDevice):
    model = "SIM-SHOE"
    behaviours: ClassVar[Mapping[FaultKind, str]] = SHOE_BEHAVIOUR
    # "draw" counts for triggers given through the Python API (inject(..., "draw 3")).
    events: ClassVar[frozenset[str]] = SHOE_EVENTS | {"draw"}

    def __init__(self, device_id: str, address: int = 1) -> None:
        super().__init__(device_id, address)
        self._cards: list[str] = []
        self._keep: Callable[[list[str]], None] | None = None

    @property
    def cards(self) -> list[str]:
        """Cards still in the shoe, top first."""
        return list(self._cards)

    def keep_in(self, cards: list[str], keep: Callable[[list[str]], None]) -> None:
        """Start with the cards a restart found in the shoe (drivers/sim/state.py) and hand every change to `keep`,
        as a real shoe holds its undealt cards through a restart of the computers around it."""
        self._cards = list(cards)
        self._keep = keep

    def _kept(self, before: list[str]) -> None:
        if self._keep is not None and self._cards != before:
            self._keep(list(self._cards))

    def load(self, cards: list[str]) -> None:
        before, self._cards = self._cards, list(cards)
        self._note("load")
        fault = self._take("load")
        if fault is not None and len(self._cards) >= 2:
            # The second card is a copy of the first: the same card comes out twice in the first stack.
            self._cards[1] = self._cards[0]
        self._kept(before)

    async def draw(self) -> None:
        """The dealer draws the top card from a manual shoe; the reader reports it (`card`)."""
        before = list(self._cards)
        try:
            await self._draw()
        finally:
            self._kept(before)

    async def _draw(self) -> None:
        if self._note("draw"):
            return  # unplugged or hung as the card came out: nothing is reported
        fault = self._take(DRAW_FAULTS_AS)
        if fault is not None and fault.kind is FaultKind.JAM:
            await self.send({"evt": "fault", "code": "jam", "detail": "card jam at the shoe's gate"})
            return
        if fault is not None and fault.kind is FaultKind.FOREIGN:
            await self.send({"evt": "card", "card": fault.card})
            return
        if fault is not None and fault.kind is FaultKind.FACE_UP and self._cards:
            # The dealer sets the face-up card aside and draws again, as the chapter's 13(a) has it.
            await self.send({"evt": "face_up", "card": self._cards.pop(0)})
        if not self._cards:
            await self.send({"evt": "fault", "code": "empty", "detail": "a card was drawn from an empty shoe"})
            return
        await self.send({"evt": "card", "card": self._cards.pop(0)})

    def handle(self, command: str, message: Mapping[str, Any]) -> bool:
        before = list(self._cards)
        try:
            return self._handle(command, message)
        finally:
            self._kept(before)

    def _handle(self, command: str, message: Mapping[str, Any]) -> bool:
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
                self.reply(
                    {"evt": "fault", "code": "empty", "detail": f"asked for {count} cards, {len(self._cards)} left"}
                )
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
