"""Simulated dealer button panel."""

from __future__ import annotations

from typing import ClassVar

from drivers.interfaces import BUTTONS
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
