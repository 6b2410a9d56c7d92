"""Reference-protocol dealer button panel."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from drivers.interfaces import BUTTONS, ButtonPressed
from drivers.reference.base import ReferenceDevice, ReferenceSettings, Translator, require_str


class ReferenceDealerPanelSettings(ReferenceSettings):
    driver: Literal["reference-dealer-panel"] = "reference-dealer-panel"


class ReferenceDealerPanel(ReferenceDevice):
    Settings: ClassVar[type[ReferenceDealerPanelSettings]] = ReferenceDealerPanelSettings

    def __init__(self, device_id: str, settings: ReferenceDealerPanelSettings) -> None:
        super().__init__(device_id, settings)

    def translators(self) -> Mapping[str, Translator]:
        return {"button": lambda m: ButtonPressed(self.device_id, require_str(m, "button", BUTTONS))}
