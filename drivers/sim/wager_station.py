"""Simulated per-seat wager station with lock-out: "no more bets" locks every spot but those left open.

A station knows no game: which spots stay open after the lock (the wagers a chapter takes at its decisions, such as
655a's street wagers) is told it by whoever sets up the table (controller.people.floor, from the chapter's spec), as
a real station is configured for the layout it serves. Any spot name is sensed; the controller refuses a wager its
chapter does not offer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from drivers.sim.base import SimDevice
from drivers.sim.faults import CHATTER_READINGS, WAGER_STATION_BEHAVIOUR, WAGER_STATION_EVENTS, FaultKind


class WagerStationSim(SimDevice):
    model = "SIM-WAGER-STATION"
    behaviours: ClassVar[Mapping[FaultKind, str]] = WAGER_STATION_BEHAVIOUR
    events: ClassVar[frozenset[str]] = WAGER_STATION_EVENTS

    def __init__(self, device_id: str, seat: int, address: int = 1, open_spots: Iterable[str] = ()) -> None:
        super().__init__(device_id, address)
        self.seat = seat
        self._open_spots = frozenset(open_spots)
        self._locked = False
        self._light = False
        self._lit, self._dark = asyncio.Event(), asyncio.Event()
        self._dark.set()
        # Every state the light took, in order (False, True, False...): what a test asserts, beside `.light`.
        self.light_history: list[bool] = [False]
        # A lamp that burnt out: it stays dark whatever is asked, and the station reports so (section 6, "Seat light").
        self.lamp_failed = False

    @property
    def locked(self) -> bool:
        return self._locked

    @property
    def open_spots(self) -> frozenset[str]:
        """The spots that still take chips once the station is locked."""
        return self._open_spots

    def keep_open(self, spots: Iterable[str]) -> None:
        """Leave these spots open when "no more bets" locks the station (and lock all others)."""
        self._open_spots = frozenset(spots)

    @property
    def light(self) -> bool:
        """Whether the seat's light is lit now."""
        return self._light

    async def wait_light(self, on: bool) -> None:
        """Return once the light is `on` (at once if it is); wrap in asyncio.timeout, nothing here gives up."""
        await (self._lit if on else self._dark).wait()

    def _set_light(self, on: bool) -> None:
        if on == self._light:
            return
        self._light = on
        self.light_history.append(on)
        (self._lit if on else self._dark).set()
        (self._dark if on else self._lit).clear()

    # The station's own cable powers it too: pulled or re-plugged, it comes back dark and must be told again.
    # (Pulling a shared bus line's cable, WagerBusSim.unplug, leaves the stations powered and lit.)
    async def unplug(self) -> None:
        self._set_light(False)
        await super().unplug()

    async def replug(self) -> None:
        self._set_light(False)
        await super().replug()

    async def place(self, spot: str, amount_cents: int) -> None:
        """A player puts chips on `spot`; the station reports the wager or its refusal."""
        if not spot:
            raise ValueError("a spot has a name, e.g. ante")
        if self._note("place"):
            return  # unplugged or hung just as the chips went down: nothing is reported
        fault = self._take("place")
        if self._locked and spot not in self._open_spots:
            await self.send({"evt": "wager_refused", "spot": spot, "amount": amount_cents, "reason": "locked"})
        elif fault is not None:
            # The sensor bounces as the chips settle: full, empty, full... ending on the real amount.
            for reading in range(CHATTER_READINGS):
                await self.send({"evt": "wager", "spot": spot, "amount": 0 if reading % 2 else amount_cents})
        else:
            await self.send({"evt": "wager", "spot": spot, "amount": amount_cents})

    def handle(self, command: str, message: Mapping[str, Any]) -> bool:
        if command == "light":
            on = message.get("on")
            if not isinstance(on, bool):
                raise ValueError(f"'on' must be true or false, got {on!r}")
            self._set_light(on and not self.lamp_failed)
            self.reply({"evt": "light", "on": self._light})
            return True
        if command not in ("lock", "unlock"):
            return False
        self._locked = command == "lock"
        self.reply({"evt": "locked" if self._locked else "unlocked"})
        return True
