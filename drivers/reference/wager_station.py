"""Reference-protocol per-seat wager station with lock-out, and a debounce for its chip sensors."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field

from drivers.interfaces import DeviceEvent, LockAcknowledged, SeatLight, WagerDetected, WagerRefused
from drivers.reference.device import (
    BadMessage,
    ReferenceDevice,
    ReferenceSettings,
    Translator,
    require_count,
    require_str,
)

# A spot is named by the table's game (controller/games/), so any name is carried; what is not a name is garbage.
SPOT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def require_spot(message: Mapping[str, Any]) -> str:
    spot = require_str(message, "spot")
    if not SPOT_NAME.fullmatch(spot):
        raise BadMessage(f"{message.get('evt')}: spot={spot!r} is not a spot name (a-z, 0-9 and _, at most 32)")
    return spot


class ReferenceWagerStationSettings(ReferenceSettings):
    driver: Literal["reference-wager-station"] = "reference-wager-station"
    seat: int = Field(ge=1, description="Seat (betting position) this station senses, 1 = dealer's far left")
    debounce_ms: int = Field(
        default=30,
        ge=0,
        le=1000,
        description="Readings for one spot within this many ms of its first reading coalesce into one wager "
        "(the last reading); 0 reports every reading",
    )


class ReferenceWagerStation(ReferenceDevice):
    Settings: ClassVar[type[ReferenceWagerStationSettings]] = ReferenceWagerStationSettings

    def __init__(self, device_id: str, settings: ReferenceWagerStationSettings) -> None:
        super().__init__(device_id, settings)
        self.seat = settings.seat
        self._debounce = settings.debounce_ms / 1000
        # spot -> (latest reading, timer that reports it). The window opens at a spot's first reading and is
        # not extended by later ones, so a wager is never held longer than debounce_ms however long it bounces.
        self._held: dict[str, tuple[WagerDetected, asyncio.TimerHandle]] = {}

    def translators(self) -> Mapping[str, Translator]:
        return {
            "locked": lambda m: LockAcknowledged(self.device_id, self.seat, True),
            "unlocked": lambda m: LockAcknowledged(self.device_id, self.seat, False),
            "wager": self._wager,
            "wager_refused": self._refused,
            "light": self._light,
        }

    def _light(self, message: Mapping[str, Any]) -> SeatLight:
        on = message.get("on")
        if not isinstance(on, bool):
            raise BadMessage(f"light: 'on' must be true or false, got {on!r}")
        return SeatLight(self.device_id, self.seat, on)

    def _wager(self, message: Mapping[str, Any]) -> WagerDetected | None:
        reading = WagerDetected(self.device_id, self.seat, require_spot(message), require_count(message, "amount"))
        if not self._debounce:
            return reading
        held = self._held.get(reading.spot)
        if held is not None:
            self._held[reading.spot] = (reading, held[1])
        else:
            timer = asyncio.get_running_loop().call_later(self._debounce, self._release, reading.spot)
            self._held[reading.spot] = (reading, timer)
        return None

    def _release(self, spot: str) -> None:
        held = self._held.pop(spot, None)
        if held is not None:
            held[1].cancel()
            super().emit(held[0])

    def emit(self, event: DeviceEvent) -> None:
        # Anything else this station reports happened after the readings held back, so those go first: a
        # wager sensed before "no more bets" must reach the controller before the lock's acknowledgement.
        for spot in list(self._held):
            self._release(spot)
        super().emit(event)

    async def stop(self) -> None:
        await super().stop()
        for _reading, timer in self._held.values():
            timer.cancel()
        self._held.clear()

    def _refused(self, message: Mapping[str, Any]) -> WagerRefused:
        return WagerRefused(
            self.device_id,
            self.seat,
            require_spot(message),
            require_count(message, "amount"),
            str(message.get("reason", "")),
        )

    async def lock(self) -> None:
        await self.command({"cmd": "lock"})

    async def unlock(self) -> None:
        await self.command({"cmd": "unlock"})

    async def light_on(self) -> None:
        await self.command({"cmd": "light", "on": True})

    async def light_off(self) -> None:
        await self.command({"cmd": "light", "on": False})
