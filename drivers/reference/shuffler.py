"""Reference-protocol counting batch shuffler, optionally card-reading (`order` in shuffle_complete)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from drivers.interfaces import ShuffleCompleted
from drivers.reference.device import ReferenceDevice, ReferenceSettings, Translator, require_cards, require_count


class ReferenceShufflerSettings(ReferenceSettings):
    driver: Literal["reference-shuffler"] = "reference-shuffler"


class ReferenceShuffler(ReferenceDevice):
    Settings: ClassVar[type[ReferenceShufflerSettings]] = ReferenceShufflerSettings

    def __init__(self, device_id: str, settings: ReferenceShufflerSettings) -> None:
        super().__init__(device_id, settings)

    def translators(self) -> Mapping[str, Translator]:
        return {"shuffle_complete": self._shuffle_complete}

    def _shuffle_complete(self, message: Mapping[str, Any]) -> ShuffleCompleted:
        # Only a card-reading shuffler sends the order; without it the table cannot deal from the hand,
        # which the engine reports, so its absence is not a malformed message.
        order = require_cards(message, "order") if "order" in message else ()
        return ShuffleCompleted(self.device_id, require_count(message, "count"), order)

    async def shuffle(self) -> None:
        await self.command({"cmd": "shuffle"})
