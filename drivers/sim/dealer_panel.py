"""Simulated dealer button panel."""

from __future__ import annotations

from drivers.interfaces import BUTTONS
from drivers.sim.base import SimDevice


class DealerPanelSim(SimDevice):
    model = "SIM-DEALER-PANEL"

    async def press(self, button: str) -> None:
        if button not in BUTTONS:
            raise ValueError(f"unknown button {button!r}; buttons are {', '.join(BUTTONS)}")
        await self.send({"evt": "button", "button": button})
