"""Reference-protocol dealer button panel: presses (`button`) and, on a panel with a keypad, counts (`count`).

A payload that does not fit (an unknown button or count, a count that is not a non-negative integer) becomes a
DeviceFault("bad_message") naming the field, and the panel keeps working (docs/protocol.md, "Dealer panel")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from drivers.interfaces import BUTTONS, COUNTS, BoxesBound, ButtonPressed, CountKeyed, FaceUpCard
from drivers.reference.device import (
    BadMessage,
    ReferenceDevice,
    ReferenceSettings,
    Translator,
    require_count,
    require_str,
)
from drivers.reference.framing import is_card

MAX_BOXES = 7  # the most betting positions any chapter allows (643a.2(a))


class ReferenceDealerPanelSettings(ReferenceSettings):
    driver: Literal["reference-dealer-panel"] = "reference-dealer-panel"


class ReferenceDealerPanel(ReferenceDevice):
    Settings: ClassVar[type[ReferenceDealerPanelSettings]] = ReferenceDealerPanelSettings

    def __init__(self, device_id: str, settings: ReferenceDealerPanelSettings) -> None:
        super().__init__(device_id, settings)

    def translators(self) -> Mapping[str, Translator]:
        return {
            "button": lambda m: ButtonPressed(self.device_id, require_str(m, "button", BUTTONS)),
            "count": lambda m: CountKeyed(self.device_id, require_str(m, "what", COUNTS), require_count(m, "count")),
            "bind": lambda m: BoxesBound(self.device_id, require_seats(m, "seats")),
            # Dealing from the hand no reader sees the deck: the dealer keys a card found face up in it (.13(a)).
            "face_up": lambda m: FaceUpCard(self.device_id, require_card(m, "card")),
        }


def require_card(message: Mapping[str, Any], key: str) -> str:
    """A card of a standard 52-card deck, written like "As" or "Td"."""
    card = message.get(key)
    if not isinstance(card, str) or not is_card(card):
        raise BadMessage(f'{message.get("evt")}: {key!r} must be a card like "As" or "Td", got {card!r}')
    return card


def require_seats(message: Mapping[str, Any], key: str) -> tuple[int, ...]:
    """A list of distinct seat numbers, 1 or more of them (the engine checks them against the table)."""
    value = message.get(key)
    seats = value if isinstance(value, list) else None
    if (
        not seats
        or len(seats) > MAX_BOXES
        or any(not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_BOXES for n in seats)
        or len(set(seats)) != len(seats)
    ):
        raise BadMessage(
            f"{message.get('evt')}: {key!r} must list 1 to {MAX_BOXES} distinct seat numbers from 1 to {MAX_BOXES}, "
            f"got {value!r}"
        )
    return tuple(seats)
