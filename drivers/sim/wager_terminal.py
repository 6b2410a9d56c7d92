"""Simulated electronic wagering terminal for one seat's Five Card Hand Bonus Wager."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from drivers.interfaces import TERMINAL_SPOTS
from drivers.sim.base import SimDevice

# Events a fault Trigger may count on a terminal (besides identify and ping); it has only the immediate faults.
WAGER_TERMINAL_EVENTS = frozenset({"lock", "unlock", "credit", "place", "show", "cancel", "buy_in", "cash_out"})

_REFERENCE = re.compile(r"[A-Za-z0-9._:-]{1,64}")  # from docs/protocol.md, not shared with the driver


class WagerTerminalSim(SimDevice):
    model = "SIM-WAGER-TERMINAL"
    events: ClassVar[frozenset[str]] = WAGER_TERMINAL_EVENTS

    def __init__(self, device_id: str, seat: int, address: int = 1) -> None:
        super().__init__(device_id, address)
        self.seat = seat
        self._locked = False
        self._credits: list[tuple[int, str]] = []
        self._shown: list[tuple[int, str]] = []  # every (balance, message) the host showed, oldest first

    @property
    def shown(self) -> list[tuple[int, str]]:
        """What the player saw: every `show` from the host, oldest first, as (balance in cents, message)."""
        return list(self._shown)

    @property
    def balance(self) -> int | None:
        """The balance the terminal displays now (None before the host showed one)."""
        return self._shown[-1][0] if self._shown else None

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

    async def cancel(self) -> None:
        """The player cancels the wager before the lock-out (a locked terminal refuses locally)."""
        if self._note("cancel") or self._locked:
            return
        await self.send({"evt": "cancel", "spot": TERMINAL_SPOTS[0]})

    async def buy_in(self, amount_cents: int, medium: str = "cash") -> None:
        """The player asks to buy in with `medium` (cash or chips handed to the dealer)."""
        if not self._note("buy_in"):
            await self.send({"evt": "buy_in", "amount": amount_cents, "medium": medium})

    async def cash_out(self, medium: str = "chips") -> None:
        """The player asks to cash out everything, paid in chips or by a ticket."""
        if not self._note("cash_out"):
            await self.send({"evt": "cash_out", "medium": medium})

    async def dealer_confirm(self, request: str, confirmed: bool = True) -> None:
        """The dealer's key at this terminal: the pending buy-in or cash-out is confirmed (or declined)."""
        await self.send({"evt": "dealer_confirmed", "request": request, "confirmed": confirmed})

    def handle(self, command: str, message: Mapping[str, Any]) -> bool:
        if command == "show":
            balance, text = message["balance"], message.get("message", "")
            if not isinstance(balance, int) or isinstance(balance, bool) or balance < 0:
                raise ValueError(f"balance {balance!r} must be a non-negative integer (cents)")
            if not isinstance(text, str):
                raise ValueError(f"message {text!r} must be a string")
            self._shown.append((balance, text))  # the link's ACK is the answer: a display has nothing to report
            return True
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
