"""Reference-protocol dealing shoe with card reader: automated (stack-dispensing) or manual (`card` per draw)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from drivers.interfaces import CardDrawn, DeviceEvent, DeviceFault, FaceUpCard, StackDispensed, StubRemoved
from drivers.reference.device import BadMessage, ReferenceDevice, ReferenceSettings, Translator
from drivers.reference.framing import is_card, is_foreign_card


class ReferenceDealingShoeSettings(ReferenceSettings):
    driver: Literal["reference-shoe"] = "reference-shoe"


class ReferenceDealingShoe(ReferenceDevice):
    Settings: ClassVar[type[ReferenceDealingShoeSettings]] = ReferenceDealingShoeSettings

    def __init__(self, device_id: str, settings: ReferenceDealingShoeSettings) -> None:
        super().__init__(device_id, settings)

    def translators(self) -> Mapping[str, Translator]:
        return {
            "stack": lambda m: self._cards(m, StackDispensed),
            "stub": lambda m: self._cards(m, StubRemoved),
            "face_up": self._face_up,
            "card": self._drawn,
        }

    def _cards(self, message: Mapping[str, Any], kind: type[StackDispensed | StubRemoved]) -> DeviceEvent:
        cards = message.get("cards")
        if not isinstance(cards, list) or not all(is_card(c) or is_foreign_card(c) for c in cards):
            raise BadMessage(f"{message.get('evt')}: 'cards' must be a list of cards like \"As\", got {cards!r}")
        foreign = [(i, c) for i, c in enumerate(cards, 1) if not is_card(c)]
        if foreign:
            # Only the foreign readings are named: the real cards' identities must not leave the table PC
            # before settlement, and a fault's detail is published.
            named = ", ".join(f"{c!r} at position {i}" for i, c in foreign)
            return DeviceFault(
                self.device_id,
                "foreign_card",
                f"{message.get('evt')} of {len(cards)}: the reader saw {named}, not a card of a standard 52-card deck",
            )
        return kind(self.device_id, tuple(cards))

    def _face_up(self, message: Mapping[str, Any]) -> DeviceEvent:
        card = message.get("card")
        if is_foreign_card(card):
            return DeviceFault(
                self.device_id,
                "foreign_card",
                f"face_up: the reader saw {card!r}, not a card of a standard 52-card deck",
            )
        if not isinstance(card, str) or not is_card(card):
            raise BadMessage(f"face_up: 'card' must be a card like \"As\", got {card!r}")
        return FaceUpCard(self.device_id, card)

    def _drawn(self, message: Mapping[str, Any]) -> DeviceEvent:
        card = message.get("card")
        if is_foreign_card(card):
            return DeviceFault(
                self.device_id, "foreign_card", f"card: the reader saw {card!r}, not a card of a standard 52-card deck"
            )
        if not isinstance(card, str) or not is_card(card):
            raise BadMessage(f"card: 'card' must be a card like \"As\", got {card!r}")
        return CardDrawn(self.device_id, card)

    async def dispense_stack(self, cards: int) -> None:
        if cards < 1:
            self.emit(DeviceFault(self.device_id, "bad_request", f"cannot dispense {cards} cards"))
            return
        await self.command({"cmd": "dispense", "cards": cards})

    async def remove_stub(self) -> None:
        await self.command({"cmd": "remove_stub"})
