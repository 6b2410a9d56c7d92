"""What the engine asks of the table's devices: one frozen value per device command.

A step returns these beside its domain events; the shell journals the events first, then carries the commands
out (controller/shell/service.py matches each class and calls the device protocol of drivers/interfaces.py).
A command carries everything the device needs, so the shell never reads the engine's state to carry one out.
Commands are effects, never state: the journal and the stored snapshot hold none of them (a restart re-issues
what the phase needs, controller/engine/recovery.py).

`verb` names the device call a command makes, for the shell's log lines and the `command_failed` fault's detail.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Final

SHUFFLER: Final = "shuffler"
SHOE: Final = "shoe"
SIGN: Final = "progressive_sign"


@dataclass(frozen=True, slots=True)
class LockSeat:
    """Lock the pre-deal spots of the seat's wager station ("no more bets", .7(c)); LockAcknowledged follows."""

    verb: ClassVar[str] = "lock"
    seat: int


@dataclass(frozen=True, slots=True)
class UnlockSeat:
    """Open the seat's wager station for the next round's wagers; LockAcknowledged(locked=False) follows."""

    verb: ClassVar[str] = "unlock"
    seat: int


@dataclass(frozen=True, slots=True)
class LightSeat:
    """Light (on) or put out the seat's light, the winner's seat of a progressive hit awaiting validation
    (655a.11(i)(1)(ii), 643a.11(f)(3)(iii)(B)); SeatLight follows where the station has a light."""

    seat: int
    on: bool

    @property
    def verb(self) -> str:
        return "light_on" if self.on else "light_off"


@dataclass(frozen=True, slots=True)
class Shuffle:
    """Start a shuffle of the deck in the shuffler; ShuffleCompleted (or a DeviceFault) follows."""

    verb: ClassVar[str] = "shuffle"


@dataclass(frozen=True, slots=True)
class DispenseStack:
    """The automated shoe dispenses one stack of `cards` cards; StackDispensed follows."""

    verb: ClassVar[str] = "dispense_stack"
    cards: int


@dataclass(frozen=True, slots=True)
class RemoveStub:
    """The automated shoe releases the stub to the dealer; StubRemoved follows."""

    verb: ClassVar[str] = "remove_stub"


@dataclass(frozen=True, slots=True)
class ShowLevels:
    """The progressive sign shows these meter values (cents by level), as the engine holds them (605a.7)."""

    verb: ClassVar[str] = "show_levels"
    levels: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class ShowWin:
    """The progressive sign announces a hit: `amount_cents` from meter `level` at `seat`."""

    verb: ClassVar[str] = "show_win"
    level: str
    amount_cents: int
    seat: int


@dataclass(frozen=True, slots=True)
class LockTerminal:
    """Lock the seat's electronic wagering terminal: no Five Card Hand Bonus Wager once dealing begins (655a.2(d),
    643a.2(e)); LockAcknowledged follows from the terminal."""

    verb: ClassVar[str] = "lock"
    seat: int


@dataclass(frozen=True, slots=True)
class UnlockTerminal:
    """Open the seat's terminal for the next round's Five Card Hand Bonus Wager."""

    verb: ClassVar[str] = "unlock"
    seat: int


@dataclass(frozen=True, slots=True)
class ShowAccount:
    """The seat's terminal shows its game account's balance and what just happened ("wager accepted", 655a.7(d)(5):
    the player verifies the wager was accepted). The ledger is the controller's; the terminal displays it."""

    verb: ClassVar[str] = "show"
    seat: int
    balance_cents: int
    message: str


@dataclass(frozen=True, slots=True)
class ShowLink:
    """The progressive sign shows the link's state: `up` (the table holds a lease) or why not, and every hit pending
    validation across the link (asset number, level, amount in cents), as 5321.18 has every linked sign show it."""

    verb: ClassVar[str] = "show_link"
    up: bool
    message: str
    pending: tuple[tuple[str, str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class SendLink:
    """The outbox holds requests for the link controller: the shell's link client sends what it holds (the state,
    journaled, is the queue; this only wakes the client)."""

    verb: ClassVar[str] = "send_link"


TerminalCommand = LockTerminal | UnlockTerminal | ShowAccount
SeatCommand = LockSeat | UnlockSeat | LightSeat
DeviceCommand = (
    LockSeat
    | UnlockSeat
    | LightSeat
    | Shuffle
    | DispenseStack
    | RemoveStub
    | ShowLevels
    | ShowWin
    | LockTerminal
    | UnlockTerminal
    | ShowAccount
    | ShowLink
    | SendLink
)
