"""Reference-protocol progressive meter sign: shows every level's amount and announces wins."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from drivers.interfaces import DeviceFault, MetersShown
from drivers.reference.base import BadMessage, ReferenceDevice, ReferenceSettings, Translator

LEVEL_NAME = re.compile(r"[a-z_]{1,32}")


class ReferenceProgressiveSignSettings(ReferenceSettings):
    driver: Literal["reference-progressive-sign"] = "reference-progressive-sign"


def level_problem(level: object) -> str | None:
    """Why `level` is not a level name, or None if it is one."""
    if isinstance(level, str) and LEVEL_NAME.fullmatch(level):
        return None
    return f"level name {level!r} must be 1 to 32 of a-z and _"


def amount_problem(amount: object) -> str | None:
    """Why `amount` is not an amount in cents, or None if it is one."""
    # bool is an int subclass; True cents is a bug upstream, not a meter value.
    if isinstance(amount, int) and not isinstance(amount, bool) and amount >= 0:
        return None
    return f"amount {amount!r} must be a non-negative integer (cents)"


def seat_problem(seat: object) -> str | None:
    if isinstance(seat, int) and not isinstance(seat, bool) and seat >= 1:
        return None
    return f"seat {seat!r} must be an integer >= 1"


def levels_problem(levels: object) -> str | None:
    """Why `levels` is not a non-empty mapping of level name to cents, or None if it is one."""
    if not isinstance(levels, Mapping) or not levels:
        return f"must be a non-empty object of level name to cents, got {levels!r}"
    for level, amount in levels.items():
        problem = level_problem(level) or amount_problem(amount)
        if problem is not None:
            return problem
    return None


class ReferenceProgressiveSign(ReferenceDevice):
    Settings: ClassVar[type[ReferenceProgressiveSignSettings]] = ReferenceProgressiveSignSettings

    def __init__(self, device_id: str, settings: ReferenceProgressiveSignSettings) -> None:
        super().__init__(device_id, settings)

    def translators(self) -> Mapping[str, Translator]:
        return {"levels_shown": self._levels_shown}

    def _levels_shown(self, message: Mapping[str, Any]) -> MetersShown:
        levels = message.get("levels")
        problem = levels_problem(levels)
        if problem is not None:
            raise BadMessage(f"levels_shown: 'levels': {problem}")
        assert isinstance(levels, Mapping)
        return MetersShown(self.device_id, dict(levels))

    def _refuse(self, command: str, field: str, problem: str) -> None:
        # Nothing is sent: a sign must never be asked to display a value the host itself cannot vouch for.
        self.emit(DeviceFault(self.device_id, "bad_request", f"{command}: {field!r}: {problem}"))

    async def show_levels(self, levels: Mapping[str, int]) -> None:
        problem = levels_problem(levels)
        if problem is not None:
            self._refuse("show_levels", "levels", problem)
            return
        await self.command({"cmd": "show_levels", "levels": dict(levels)})

    async def show_win(self, level: str, amount_cents: int, seat: int) -> None:
        for field, problem in (
            ("level", level_problem(level)),
            ("amount", amount_problem(amount_cents)),
            ("seat", seat_problem(seat)),
        ):
            if problem is not None:
                self._refuse("show_win", field, problem)
                return
        await self.command({"cmd": "show_win", "level": level, "amount": amount_cents, "seat": seat})
