"""Reference-protocol dealer button panel: presses (`button`) and, on a panel with a keypad, counts (`count`).

A payload that does not fit (an unknown button or count, a count that is not a non-negative integer) becomes a
DeviceFault("bad_message") naming the field, and the panel keeps working (docs/protocol.md, "Dealer panel")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from drivers.interfaces import BUTTONS, COUNTS, ButtonPressed, CountKeyed
from drivers.reference.device import (
    ReferenceDevice,
    ReferenceSettings,
    Translator,
    require_count,
    require_str,
)


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
        }
