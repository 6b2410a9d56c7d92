"""Simulated electronic wagering terminal for one seat's Five Card Hand Bonus Wager."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from drivers.interfaces import TERMINAL_SPOTS
from drivers.sim.base import SimDevice

# Events a fault Trigger may count on a terminal (besides identify and ping); it has only the immediate faults.
WAGER_TERMINAL_EVENTS = frozenset({"lock", "unlock", "credit", "place"})

_REFERENCE = re.compile(r"[A-Za-z0-9._:-]{1,64}")  # from docs/protocol.md, not shared with the driver


class WagerTerminalSim(SimDevice):
    model = "SIM-WAGER-TERMINAL"
    events: ClassVar[frozenset[str]] = WAGER_TERMINAL_EVENTS

    def __init__(self, device_id: str, seat: int, address: int = 1) -> None:
        super().__init__(device_id, address)
        self.seat = seat
        self._locked = False
        self._credits: list[tuple[int, str]] = []

    @property
    def locked(self) -> bool:
        return self._locked

    @property
    def credits(self) -> list[tuple[int, str]]:
        """Every credit made to the player's account, oldest first, as (amount in cents, reference)."""
        return list(self._credits)

    async def place(self, amount_cents: int) -> None:
        """The player keys in a Five Card Hand Bonus Wager; the terminal reports it or its refusal."""
        if self._note("place"):
            return  # unplugged or hung just as the wager was keyed in: nothing is reported
        spot = TERMINAL_SPOTS[0]
        if self._locked:
            await self.send({"evt": "wager_refused", "spot": spot, "amount": amount_cents, "reason": "locked"})
        else:
            await self.send({"evt": "wager", "spot": spot, "amount": amount_cents})

    def handle(self, command: str, message: Mapping[str, Any]) -> bool:
        if command in ("lock", "unlock"):
            self._locked = command == "lock"
            self.reply({"evt": "locked" if self._locked else "unlocked"})
            return True
        if command != "credit":
            return False
        amount, reference = message["amount"], message["reference"]
        if not isinstance(amount, int) or isinstance(amount, bool) or amount < 0:
            raise ValueError(f"amount {amount!r} must be a non-negative integer (cents)")
        if not isinstance(reference, str) or not _REFERENCE.fullmatch(reference):
            raise ValueError(f"reference {reference!r} must be 1 to 64 of A-Z a-z 0-9 . _ : -")
        earlier = next((a for a, r in self._credits if r == reference), None)
        if earlier is None:
            self._credits.append((amount, reference))
        elif earlier != amount:
            # Same reference, other amount: the host is confused about which win this is, so pay nothing.
            self.reply(
                {
                    "evt": "fault",
                    "code": "duplicate_reference",
                    "detail": f"{reference} was already credited {earlier}, not {amount}",
                }
            )
            return True
        # A repeated credit (the host resent it after a reconnect) is confirmed again but paid only once.
        self.reply({"evt": "credited", "amount": amount, "reference": reference})
        return True
