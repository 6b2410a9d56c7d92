"""Simulated progressive meter sign."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from drivers.sim.base import SimDevice
from drivers.sim.faults import SIGN_BEHAVIOUR, FaultKind

# Events a fault Trigger may count on a sign (besides identify and ping); it has only the immediate faults.
SIGN_EVENTS = frozenset({"show_levels", "show_win", "show_link"})

# Checked here independently of the driver's own checks, as a manufacturer's sign would from the spec.
_LEVEL = re.compile(r"[a-z_]{1,32}")


def _is_amount(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_level(level: object, amount: object) -> None:
    if not isinstance(level, str) or not _LEVEL.fullmatch(level):
        raise ValueError(f"level {level!r} must be 1 to 32 of a-z and _")
    if not _is_amount(amount):
        raise ValueError(f"amount {amount!r} for {level} must be a non-negative integer (cents)")


# What a sign's scripted fault reports (`{"evt":"fault","code":...,"detail":...}`): the code is the fault's name.
SIGN_FAULT_DETAIL = {FaultKind.LAMP_FAILURE: "a row of lamps is dark"}


class ProgressiveSignSim(SimDevice):
    model = "SIM-PROGRESSIVE-SIGN"
    events: ClassVar[frozenset[str]] = SIGN_EVENTS
    behaviours: ClassVar[Mapping[FaultKind, str]] = SIGN_BEHAVIOUR

    def __init__(self, device_id: str, address: int = 1) -> None:
        super().__init__(device_id, address)
        self._levels: dict[str, int] = {}
        self._wins: list[tuple[str, int, int]] = []
        self.link_up: bool | None = None  # None: never told (not on a linked progressive)
        self.link_message = ""
        self.link_pending: list[dict[str, Any]] = []

    @property
    def levels(self) -> dict[str, int]:
        """What the sign displays now, cents by level."""
        return dict(self._levels)

    @property
    def wins(self) -> list[tuple[str, int, int]]:
        """Every win announced, oldest first, as (level, amount in cents, seat)."""
        return list(self._wins)

    def handle(self, command: str, message: Mapping[str, Any]) -> bool:
        if command == "show_levels":
            levels = message["levels"]
            if not isinstance(levels, dict) or not levels:
                raise ValueError(f"levels must be a non-empty object, got {levels!r}")
            for level, amount in levels.items():
                _check_level(level, amount)
            self._levels = dict(levels)  # the display shows exactly the levels sent, no merging with old ones
            self.reply({"evt": "levels_shown", "levels": self.levels})
            fault = self._take("show_levels")
            if fault is not None:
                self.reply({"evt": "fault", "code": fault.kind.value, "detail": SIGN_FAULT_DETAIL[fault.kind]})
            return True
        if command == "show_win":
            level, amount, seat = message["level"], message["amount"], message["seat"]
            _check_level(level, amount)
            if not isinstance(seat, int) or isinstance(seat, bool) or seat < 1:
                raise ValueError(f"seat {seat!r} must be an integer >= 1")
            self._wins.append((level, amount, seat))
            return True
        if command == "show_link":
            up, text, pending = message["up"], message["message"], message["pending"]
            if not isinstance(up, bool) or not isinstance(text, str) or not isinstance(pending, list):
                raise ValueError("show_link needs up (bool), message (text) and pending (a list)")
            for p in pending:
                if not isinstance(p, dict) or not isinstance(p.get("asset"), str):
                    raise ValueError(f"a pending jackpot needs an asset number, got {p!r}")
                _check_level(p.get("level"), p.get("amount"))
            self.link_up, self.link_message, self.link_pending = up, text, list(pending)
            return True
        return False
