"""The contract between device drivers and the controller.

Drivers turn whatever their device says into these events and hand them to a sink; the controller
drives devices only through the methods of the Protocol classes below. Nothing here does I/O.

Seats are numbered 1..N from the dealer's far left (the first seat dealt to), so "clockwise from the
dealer's left" is ascending seat order and "counterclockwise from the dealer's right" is descending.
Cards are two-character strings: rank in "23456789TJQKA", suit in "cdhs" ("As", "Td").
Money is integer cents.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

# A wager station reports chips by spot name ("ante", "street_3", ...), whatever the names: which spots a table has,
# and which of them "no more bets" locks, is its game's (controller/games/); the controller refuses a spot its
# chapter does not offer.

# The Five Card Hand Bonus Wager is made on a seat's electronic wagering terminal (655a.7(d)(5), 643a.7(i)).
TERMINAL_SPOTS = ("five_card_hand_bonus",)

# Dealer panel buttons. "fold" folds, "let_it_ride"/"withdraw" answer the Let It Ride decision (643a.11(b)),
# of the seat whose decision is awaited; "dealt" confirms a deal from the hand is on the layout;
# "drawn_in_error"/"community_exposed" report irregularities only the dealer can see (643a.13(b), (d)).
# The dealer's own confirmations, named with the regulations' words: "inspected" (the cards were inspected,
# 655a.4(a) at opening, .5(f) after an idle table), "shuffled" (a manual shuffle and cut is done once the shuffler
# is marked out of order, .5(c)(2), (d), .13(g)), "misdeal"/"no_misdeal" (the dealer's determination after a stub
# count that does not make 52, .8(h)).
BUTTONS = (
    "no_more_bets",
    "fold",
    "let_it_ride",
    "withdraw",
    "dealt",
    "drawn_in_error",
    "community_exposed",
    "wrong_card_count",
    "inspected",
    "shuffled",
    "misdeal",
    "no_misdeal",
)
# "wrong_card_count" reports a player or the community area dealt an incorrect number of cards (643a.13(c)), which
# a manual shoe's reader or the dealer's hand cannot show the controller.
# The panel also binds boxes to one player (BoxesBound, a `bind` message with the seats).
# What the dealer keys as a number on the panel (CountKeyed): the value chips counted for the counted wagers
# (655a.8(b), 643a.8(b)(1)-(2)) or the cards of the stub counted face down (655a.8(f)).
COUNTS = ("chips", "stub")


@dataclass(frozen=True, slots=True)
class DeviceEvent:
    """Something a device said, or its driver found, handed to the controller's sink; each kind is a subclass."""

    device_id: str


@dataclass(frozen=True, slots=True)
class DeviceOnline(DeviceEvent):
    """The device answered `identify`: model, serial number, firmware version and hash."""

    identity: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeviceOffline(DeviceEvent):
    """The device is away (its port gone, no answer, or it did not start); `reason` says which."""

    reason: str = ""


@dataclass(frozen=True, slots=True)
class DeviceFault(DeviceEvent):
    """Any fault the device reports or the driver detects (jam, timeout, bad frame storm...)."""

    code: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class DeviceFaultCleared(DeviceEvent):
    """The device says the fault it reported as `code` is cleared (an attendant cleared the jam), without a restart."""

    code: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ShuffleCompleted(DeviceEvent):
    """A counting shuffler finished a shuffle; card_count is what it counted (52 when intact). A
    card-reading shuffler also gives the order, top card first (how cards dealt from the hand are known)."""

    card_count: int = 0
    order: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CardDrawn(DeviceEvent):
    """A manual dealing shoe's reader saw the dealer draw this card (643a.8(c))."""

    card: str = ""


@dataclass(frozen=True, slots=True)
class StackDispensed(DeviceEvent):
    """The automated dealing shoe dispensed one stack; cards as read by its card reader, top first."""

    cards: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FaceUpCard(DeviceEvent):
    """The dealing shoe found a card face up while dispensing and set it aside (it is not in any stack);
    the chapter's irregularity rule decides what follows (655a.13(a), 643a.13(a), 683a.13(a))."""

    card: str = ""


@dataclass(frozen=True, slots=True)
class StubRemoved(DeviceEvent):
    """The dealer removed the remaining cards from the shoe; cards in order, top first."""

    cards: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LockAcknowledged(DeviceEvent):
    """A wager station confirmed its pre-deal spots are locked (locked=True) or released (False)."""

    seat: int = 0
    locked: bool = True


@dataclass(frozen=True, slots=True)
class SeatLight(DeviceEvent):
    """A wager station confirmed the state of its seat's light: on=True once lit, False once dark. The light is
    how the dealer verifies a progressive hit before the floorperson validates it (655a.11(i)(1)(ii),
    643a.11(f)(3)(iii)(B) and (iv)(B)); a station reports what the lamp actually shows, not what it was told."""

    seat: int = 0
    on: bool = False


@dataclass(frozen=True, slots=True)
class WagerDetected(DeviceEvent):
    """A wager station sensed the chips now on a spot (0: taken off), or a terminal took or cancelled a keyed wager."""

    seat: int = 0
    spot: str = ""
    amount_cents: int = 0


@dataclass(frozen=True, slots=True)
class WagerRefused(DeviceEvent):
    """The station's lock-out refused a wager (placed after "no more bets"); reported so it is recorded."""

    seat: int = 0
    spot: str = ""
    amount_cents: int = 0
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ButtonPressed(DeviceEvent):
    """The dealer pressed one of the dealer panel's BUTTONS."""

    button: str = ""


@dataclass(frozen=True, slots=True)
class BoxesBound(DeviceEvent):
    """The dealer bound these boxes (betting positions) to one player for the session, as the chapter allows one
    player to wager on adjacent boxes (643a.7(k), 655a.7(e), 683a.7(e)). The player is table-local: the panel says
    which boxes, never who. A single box is released from any player it was bound to, a player of its own again."""

    seats: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class CountKeyed(DeviceEvent):
    """The dealer keyed a number on the panel: `what` is one of COUNTS, `count` the number keyed. Drivers pass
    on what the panel sent; the engine refuses (input.refused, never a crash) a `what` outside COUNTS or a count
    that is not a whole non-negative number, so a driver that does not check still cannot corrupt a count."""

    what: str = ""
    count: int = 0


@dataclass(frozen=True, slots=True)
class MetersShown(DeviceEvent):
    """A progressive sign confirmed the meter values it now displays, in cents by level."""

    levels: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CreditConfirmed(DeviceEvent):
    """An electronic wagering terminal confirmed a credit to the player's game account (655a.11(i)(3)(iii))."""

    seat: int = 0
    amount_cents: int = 0
    reference: str = ""


# What a player asks for at an electronic wagering terminal, confirmed by the dealer at the same terminal
# (605a.2(d)(1), 605a.3): a buy-in credits the game account with the cash or chips the dealer took; a cash-out
# debits everything left, paid by the dealer in chips or by a ticket.
ACCOUNT_REQUESTS = ("buy_in", "cash_out")
MEDIA = ("cash", "chips", "ticket")


@dataclass(frozen=True, slots=True)
class AccountRequested(DeviceEvent):
    """A player asked at the seat's terminal to buy in (`amount_cents` of `medium`, cash or chips handed to the
    dealer) or to cash out (amount 0: everything in the account). Nothing moves until the dealer confirms."""

    seat: int = 0
    request: str = ""  # one of ACCOUNT_REQUESTS
    amount_cents: int = 0
    medium: str = ""  # buy-in: cash or chips; cash-out: chips or ticket


@dataclass(frozen=True, slots=True)
class DealerConfirmed(DeviceEvent):
    """The dealer confirmed the seat's pending request at its terminal (the dealer's key): the buy-in's cash or
    chips are taken, or the cash-out is paid. `confirmed` False: the dealer declined it."""

    seat: int = 0
    request: str = ""
    confirmed: bool = True


EventSink = Callable[[DeviceEvent], None]


@runtime_checkable
class Device(Protocol):
    device_id: str

    async def start(self, sink: EventSink) -> None:
        """Open the port, identify the device and start reading; events go to sink from then on."""

    async def stop(self) -> None:
        """Stop reading and close the port."""


@runtime_checkable
class Shuffler(Device, Protocol):
    async def shuffle(self) -> None:
        """Start a shuffle; ShuffleCompleted (or DeviceFault) follows."""


@runtime_checkable
class DealingShoe(Device, Protocol):
    async def dispense_stack(self, cards: int) -> None:
        """Dispense one stack of `cards` cards; StackDispensed follows."""

    async def remove_stub(self) -> None:
        """Release the remaining cards to the dealer; StubRemoved follows."""


@runtime_checkable
class WagerStation(Device, Protocol):
    seat: int

    async def lock(self) -> None:
        """Lock the pre-deal spots ("no more bets"); LockAcknowledged(locked=True) follows."""

    async def unlock(self) -> None:
        """Open the pre-deal spots for the next round; LockAcknowledged(locked=False) follows."""


@runtime_checkable
class SeatLights(Protocol):
    """The seat light of a wager station (an optional part: a WagerStation without these methods still works,
    and the controller logs once that its seat has no light). The controller lights the winner's seat when a
    progressive hit is taken from the meter and puts it out once the hit is validated and paid; it lights it
    again whenever the station comes back (a station that lost power comes back dark) and after a restart.

    Both calls are idempotent (lighting a lit seat changes nothing) and each is confirmed by SeatLight."""

    async def light_on(self) -> None:
        """Light the seat's light; SeatLight(on=True) follows."""

    async def light_off(self) -> None:
        """Put the seat's light out; SeatLight(on=False) follows."""


@runtime_checkable
class DealerPanel(Device, Protocol):
    """Every press arrives as ButtonPressed (a name in BUTTONS); a panel with a keypad also sends the dealer's
    counts as CountKeyed (a panel without one leaves counts to another way of entering them)."""


@runtime_checkable
class ProgressiveSign(Device, Protocol):
    """The progressive meter display (605a.7): every level's amount, and a win announced on it."""

    async def show_levels(self, levels: Mapping[str, int]) -> None:
        """Display these meter values (cents by level); MetersShown follows."""

    async def show_win(self, level: str, amount_cents: int, seat: int) -> None:
        """Announce a progressive win on the sign."""


@runtime_checkable
class LinkedSign(Protocol):
    """A progressive sign that can show a linked progressive's state (docs/linked-progressives.md): whether the link
    is up (progressive wagers taken) and every hit pending validation across the link (asset number, level, cents).
    A sign without it shows the meters only; the table's events still say the link is down."""

    async def show_link(self, up: bool, message: str, pending: Sequence[tuple[str, str, int]]) -> None:
        """Show the link's state: `message` (e.g. PROGRESSIVE CLOSED: LINK DOWN) and the pending jackpots."""


@runtime_checkable
class ElectronicWagerTerminal(Device, Protocol):
    """A seat's electronic wagering system for the Five Card Hand Bonus (605a.2): wagers arrive as
    WagerDetected with a TERMINAL_SPOTS spot (amount 0: the player cancelled it), buy-in and cash-out requests as
    AccountRequested and the dealer's confirmation as DealerConfirmed; it locks when dealing begins (655a.2(d),
    643a.2(e)), each lock confirmed by LockAcknowledged."""

    seat: int

    async def lock(self) -> None:
        """Refuse further Five Card Hand Bonus Wagers; LockAcknowledged(locked=True) follows."""

    async def unlock(self) -> None:
        """Take Five Card Hand Bonus Wagers again; LockAcknowledged(locked=False) follows."""

    async def credit(self, amount_cents: int, reference: str) -> None:
        """Credit a win to the player's game account; CreditConfirmed follows."""

    async def show(self, balance_cents: int, message: str) -> None:
        """Show the player the game account's balance and what just happened ("wager accepted", a refusal, a
        buy-in awaiting the dealer): 655a.7(d)(5), the player verifies the wager was accepted. The controller's
        ledger is the account of record; the terminal displays it."""


# The device id of a table's multi-drop line of wager stations: its key in a config's [devices] and in the `ports` a
# simulated table hands the runner. Here because drivers never import the controller, and the controller, the
# simulators and the tools all name the line.
WAGER_BUS_ID = "wager_bus"


@runtime_checkable
class WagerBus(Protocol):
    """A driver that puts several seats' wager stations on one line: the controller uses `stations` (seat ->
    that seat's station, each started, stopped and driven as a WagerStation of its own)."""

    device_id: str

    @property
    def stations(self) -> Mapping[int, WagerStation]: ...
