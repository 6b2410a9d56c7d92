"""Reference-protocol electronic wagering terminal (one seat): Five Card Hand Bonus Wagers and credits."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field

from drivers.interfaces import (
    TERMINAL_SPOTS,
    CreditConfirmed,
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


class ReferenceWagerTerminalSettings(ReferenceSettings):
    driver: Literal["reference-wager-terminal"] = "reference-wager-terminal"
    seat: int = Field(ge=1, description="Seat (betting position) of this terminal, 1 = dealer's far left")


def require_reference(message: Mapping[str, Any], key: str = "reference") -> str:
    value = message.get(key)
    if not isinstance(value, str) or not REFERENCE.fullmatch(value):
        raise BadMessage(f"{message.get('evt')}: {key!r} must be 1 to 64 of A-Z a-z 0-9 . _ : -, got {value!r}")
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
