"""What a simulator keeps across a restart, as the real device keeps it through a power cut: the dealing shoe's
undealt cards. Without it a restarted simulator started an empty shoe, so a round in betting at the restart asked it
for a stack, heard `empty` and was voided (.13(f)) where a real table deals the cards the shuffler reported.

One JSON file (`tablectl sim-devices --state-file`, `tablectl demo --sim-state`), written whole to a temporary file
and renamed over the old one at every change, so a process killed mid-write leaves the previous state, never half of
one. Not fsynced: it outlives the simulator's process (kill -9 included), which is what it stands in for; a simulated
power cut of the machine is not something the tests make.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

VERSION = 1


class SimStateError(ValueError):
    """The state file cannot be read as the simulators' state; the message names the file and the fix."""


class SimStateFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def shoe_cards(self) -> list[str]:
        """The cards the shoe held, top first; none when the file does not exist yet (a first start)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as err:
            raise SimStateError(f"simulator state {self.path}: cannot read it ({err.strerror}): {self._fix}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise SimStateError(
                f"simulator state {self.path}: not JSON ({err.msg}, line {err.lineno}): {self._fix}"
            ) from None
        shoe = data.get("shoe") if isinstance(data, dict) and data.get("version") == VERSION else None
        cards = shoe.get("cards") if isinstance(shoe, dict) else None
        if not isinstance(cards, list) or not all(isinstance(c, str) and 0 < len(c) <= 8 for c in cards):
            raise SimStateError(
                f'simulator state {self.path}: expected {{"version": {VERSION}, "shoe": {{"cards": ["Ah", ...]}}}}: '
                f"{self._fix}"
            )
        return cards

    def save_shoe(self, cards: list[str]) -> None:
        text = json.dumps({"version": VERSION, "shoe": {"cards": cards}}, separators=(",", ":")) + "\n"
        part = self.path.with_name(self.path.name + ".part")
        part.write_text(text, encoding="utf-8")
        os.replace(part, self.path)

    @property
    def _fix(self) -> str:
        return (
            "fix or delete it; deleted, the simulated shoe starts empty, as a real shoe whose cards were taken out, "
            "and a round in play at the restart is voided"
        )
