"""Reference-protocol automated (stack-dispensing) dealing shoe with card reader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from drivers.interfaces import DeviceFault, StackDispensed, StubRemoved
from drivers.reference.base import ReferenceDevice, ReferenceSettings, Translator, require_cards


class ReferenceDealingShoeSettings(ReferenceSettings):
    driver: Literal["reference-shoe"] = "reference-shoe"


class ReferenceDealingShoe(ReferenceDevice):
    Settings: ClassVar[type[ReferenceDealingShoeSettings]] = ReferenceDealingShoeSettings

    def __init__(self, device_id: str, settings: ReferenceDealingShoeSettings) -> None:
        super().__init__(device_id, settings)

    def translators(self) -> Mapping[str, Translator]:
        return {
            "stack": lambda m: StackDispensed(self.device_id, require_cards(m)),
            "stub": lambda m: StubRemoved(self.device_id, require_cards(m)),
        }

    async def dispense_stack(self, cards: int) -> None:
        if cards < 1:
            self.emit(DeviceFault(self.device_id, "bad_request", f"cannot dispense {cards} cards"))
            return
        await self.command({"cmd": "dispense", "cards": cards})

    async def remove_stub(self) -> None:
        await self.command({"cmd": "remove_stub"})


