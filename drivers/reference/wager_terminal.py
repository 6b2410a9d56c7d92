"""Reference-protocol electronic wagering terminal (one seat): Five Card Hand Bonus Wagers and credits."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field

from drivers.interfaces import (
    ACCOUNT_REQUESTS,
    MEDIA,
    TERMINAL_SPOTS,
    AccountRequested,
    CreditConfirmed,
    DealerConfirmed,
    DeviceFault,
    LockAcknowledged,
    WagerDetected,
    WagerRefused,
)
from drivers.reference.device import (
    BadMessage,
    ReferenceDevice,
    ReferenceSettings,
    Translator,
    require_count,
    require_str,
)

# A credit reference is how a terminal recognises a credit it has already made (after a reconnect the
# host may send it again), so it is kept short and free of characters a terminal might mangle.
REFERENCE = re.compile(r"[A-Za-z0-9._:-]{1,64}")
MESSAGE_MAX = 120  # characters of a `show` message (docs/protocol.md)


class ReferenceWagerTerminalSettings(ReferenceSettings):
    driver: Literal["reference-wager-terminal"] = "reference-wager-terminal"
    seat: int = Field(ge=1, description="Seat (betting position) of this terminal, 1 = dealer's far left")


def require_reference(message: Mapping[str, Any], key: str = "reference") -> str:
    value = message.get(key)
    if not isinstance(value, str) or not REFERENCE.fullmatch(value):
        raise BadMessage(f"{message.get('evt')}: {key!r} must be 1 to 64 of A-Z a-z 0-9 . _ : -, got {value!r}")
    return value


def _confirmed(message: Mapping[str, Any]) -> bool:
    value = message.get("confirmed", True)
    if not isinstance(value, bool):
        raise BadMessage(f"dealer_confirmed: 'confirmed' must be true or false, got {value!r}")
    return value


class ReferenceWagerTerminal(ReferenceDevice):
    Settings: ClassVar[type[ReferenceWagerTerminalSettings]] = ReferenceWagerTerminalSettings

    def __init__(self, device_id: str, settings: ReferenceWagerTerminalSettings) -> None:
        super().__init__(device_id, settings)
        self.seat = settings.seat

    def translators(self) -> Mapping[str, Translator]:
        # No debounce as on a wager station: a terminal reports a keyed-in wager once, not a sensor reading.
        return {
            "locked": lambda m: LockAcknowledged(self.device_id, self.seat, True),
            "unlocked": lambda m: LockAcknowledged(self.device_id, self.seat, False),
            "wager": lambda m: WagerDetected(
                self.device_id, self.seat, require_str(m, "spot", TERMINAL_SPOTS), require_count(m, "amount")
            ),
            "wager_refused": lambda m: WagerRefused(
                self.device_id,
                self.seat,
                require_str(m, "spot", TERMINAL_SPOTS),
                require_count(m, "amount"),
                str(m.get("reason", "")),
            ),
            "cancel": lambda m: WagerDetected(self.device_id, self.seat, require_str(m, "spot", TERMINAL_SPOTS), 0),
            "buy_in": lambda m: AccountRequested(
                self.device_id, self.seat, "buy_in", require_count(m, "amount"), require_str(m, "medium", MEDIA)
            ),
            "cash_out": lambda m: AccountRequested(
                self.device_id, self.seat, "cash_out", 0, require_str(m, "medium", MEDIA)
            ),
            "dealer_confirmed": lambda m: DealerConfirmed(
                self.device_id, self.seat, require_str(m, "request", ACCOUNT_REQUESTS), _confirmed(m)
            ),
            "credited": lambda m: CreditConfirmed(
                self.device_id, self.seat, require_count(m, "amount"), require_reference(m)
            ),
        }

    async def lock(self) -> None:
        await self.command({"cmd": "lock"})

    async def unlock(self) -> None:
        await self.command({"cmd": "unlock"})

    async def credit(self, amount_cents: int, reference: str) -> None:
        # Checked with the same rules as the device's answer; the helpers name a message by its "evt".
        request = {"evt": "credit", "amount": amount_cents, "reference": reference}
        try:
            require_count(request, "amount")
            require_reference(request)
        except BadMessage as exc:
            # Nothing is sent: money must not move on a request the host itself got wrong.
            self.emit(DeviceFault(self.device_id, "bad_request", str(exc)))
            return
        await self.command({"cmd": "credit", "amount": amount_cents, "reference": reference})

    async def show(self, balance_cents: int, message: str) -> None:
        request = {"evt": "show", "balance": balance_cents}
        try:
            require_count(request, "balance")
        except BadMessage as exc:
            self.emit(DeviceFault(self.device_id, "bad_request", str(exc)))
            return
        # A display line: kept short and printable so any terminal can show it whole.
        text = "".join(ch for ch in message if ch.isprintable())[:MESSAGE_MAX]
        await self.command({"cmd": "show", "balance": balance_cents, "message": text})
