"""Reference-protocol per-seat wager station with lock-out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field

from drivers.interfaces import SPOTS, LockAcknowledged, WagerDetected, WagerRefused
from drivers.reference.base import ReferenceDevice, ReferenceSettings, Translator, require_count, require_str


class ReferenceWagerStationSettings(ReferenceSettings):
    driver: Literal["reference-wager-station"] = "reference-wager-station"
    seat: int = Field(ge=1, description="Seat (betting position) this station senses, 1 = dealer's far left")


class ReferenceWagerStation(ReferenceDevice):
    Settings: ClassVar[type[ReferenceWagerStationSettings]] = ReferenceWagerStationSettings

    def __init__(self, device_id: str, settings: ReferenceWagerStationSettings) -> None:
        super().__init__(device_id, settings)
        self.seat = settings.seat

    def translators(self) -> Mapping[str, Translator]:
        return {
            "locked": lambda m: LockAcknowledged(self.device_id, self.seat, True),
            "unlocked": lambda m: LockAcknowledged(self.device_id, self.seat, False),
            "wager": self._wager,
            "wager_refused": self._refused,
        }

    def _wager(self, message: Mapping[str, Any]) -> WagerDetected:
        return WagerDetected(
            self.device_id, self.seat, require_str(message, "spot", SPOTS), require_count(message, "amount")
        )

    def _refused(self, message: Mapping[str, Any]) -> WagerRefused:
        return WagerRefused(
            self.device_id,
            self.seat,
            require_str(message, "spot", SPOTS),
            require_count(message, "amount"),
            str(message.get("reason", "")),
        )

    async def lock(self) -> None:
        await self.command({"cmd": "lock"})

    async def unlock(self) -> None:
        await self.command({"cmd": "unlock"})
