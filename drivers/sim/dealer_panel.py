"""Simulated dealer button panel with a keypad: presses buttons and keys the dealer's counts."""

from __future__ import annotations

from typing import ClassVar

from drivers.interfaces import BUTTONS, COUNTS
from drivers.sim.base import SimDevice
from drivers.sim.faults import DEALER_PANEL_EVENTS


class DealerPanelSim(SimDevice):
    model = "SIM-DEALER-PANEL"
    events: ClassVar[frozenset[str]] = DEALER_PANEL_EVENTS

    async def press(self, button: str) -> None:
        if button not in BUTTONS:
            raise ValueError(f"unknown button {button!r}; buttons are {', '.join(BUTTONS)}")
        if self._note("press"):
            return  # unplugged or hung as the button went down
        await self.send({"evt": "button", "button": button})

    async def bind(self, seats: list[int]) -> None:
        """The dealer binds these boxes to one player (a single box: released). To send a malformed list, use send()."""
        if self._note("press"):
            return
        await self.send({"evt": "bind", "seats": list(seats)})

    async def key_count(self, what: str, count: int) -> None:
        """The dealer keys a count (chips or stub) and enters it. To send a malformed count, use send()."""
        if what not in COUNTS:
            raise ValueError(f"unknown count {what!r}; counts are {', '.join(COUNTS)}")
        if self._note("key"):
            return
        await self.send({"evt": "count", "what": what, "count": count})
