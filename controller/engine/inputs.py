"""What the engine consumes and what it asks of the shell, besides domain events.

Device events (drivers.interfaces) are inputs as they are; the controller adds its own below. The engine
reads no clock: time arrives as `Tick` (the shell sends one periodically, see docs/engine.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from controller.progressive.link import LinkJackpot
from drivers.interfaces import DeviceEvent


@dataclass(frozen=True, slots=True)
class OpenTable:
    """The table opens for gaming (655a.4): the opening inspection, then the first shuffle."""


@dataclass(frozen=True, slots=True)
class CloseTable:
    """Close the table: at once between rounds, else when the round in progress is complete. `by`: who asked (an
    interrupt, a supervisor's key), said by `table.closing` or the `table.closed` of a close at once."""

    by: str | None = None


@dataclass(frozen=True, slots=True)
class Tick:
    """The time now (timezone-aware, from the shell's clock). Deck life (.3(c)) and the idle-table
    inspection (.5(f)) are measured from Tick times only."""

    now: datetime


Who = Literal["dealer", "floorperson"]


@dataclass(frozen=True, slots=True)
class Confirm:
    """A person confirms something at the table (a dealer-panel key or a signed supervisor command).

    what:
      "cards_inspected"  the dealer inspected the cards (.4(a)); the floorperson verifies the inspection
                         with the same `what` (opening), the dealer alone after an idle table (.5(f)).
      "deck_verified"    (floorperson) a new deck is at the table and verified: clears a removed deck and a
                         deck change due (.3(c), .5(b), .8(h)). `deck` names which deck of two ("A"/"B");
                         None replaces every deck.
      "shuffled"         (dealer) a manual shuffle and cut is done (.5(c)(2), (d)); only once the shuffler
                         is marked out of order (.13(g)).
      "misdeal" / "no_misdeal"  (dealer) after a stub count that does not make 52: the cards were misdealt
                         and the layout and stub hold 52 (void, .8(h)), or they were not (void and the
                         deck leaves the table).
    """

    who: Who
    what: str
    deck: str | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class CountEntered:
    """The dealer's keypad: the value chips counted for the counted wagers ("chips", .8(b)) or the cards in
    the stub counted face down on the layout ("stub", .8(f))."""

    what: Literal["chips", "stub"]
    count: int


@dataclass(frozen=True, slots=True)
class FloorpersonDecision:
    """A floorperson's ruling that clears a block (from a signed supervisor command).

    about="chip_count": decision "proceed" (deal; the accepted count stands), "recount" (the dealer counts
    again) or "void" (the round is void, every wager returned).
    about="shuffle_order": decision "reshuffle" (try the shuffle again).
    """

    about: str
    decision: str
    floorperson: str = ""
    note: str = ""


@dataclass(frozen=True, slots=True)
class MarkOutOfOrder:
    """The shuffler or shoe is covered or has a sign indicating that it is out of order placed on it (out=True,
    .13(g), a signed mark_out_of_order); only then may another method of shuffling or dealing be used. out=False
    puts a working device back in use."""

    device: str  # "shuffler" or "shoe"
    out: bool = True


@dataclass(frozen=True, slots=True)
class PlayerLeft:
    """The player at this seat left the table (.7(b))."""

    seat: int


@dataclass(frozen=True, slots=True)
class ReleaseHeld:
    """The wagers held for the player who left this seat (.7(b), `abandoned_wagers = "hold"`) leave the hold: given
    back to the player who came back for them (`to = "player"`), or kept by the house as losing wagers (`"house"`)."""

    seat: int
    to: Literal["player", "house"]


@dataclass(frozen=True, slots=True)
class BindBoxes:
    """Boxes bound to one player for the session (a signed floorperson command; the dealer panel's BoxesBound):
    the player is a table-local number the engine gives, never a person's identity. A single box is released,
    a player of its own again (643a.7(k), 655a.7(e), 683a.7(e))."""

    seats: tuple[int, ...]
    by: Who = "floorperson"


@dataclass(frozen=True, slots=True)
class AcknowledgeTilt:
    """A supervisor saw the tilt (a block only a supervisor may clear, controller.engine.tilts.TILTS): the
    journal records who, the block stays."""

    tilt: str
    key_id: str
    role: str


@dataclass(frozen=True, slots=True)
class ClearTilt:
    """A supervisor clears the tilt: the block is removed and the table may go on."""

    tilt: str
    key_id: str
    role: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class ValidateJackpot:
    """A floorperson or above validates a progressive payout (655a.11(i)(1)(iii), 643a.11): `hit` names the
    jackpot hit awaiting validation at `seat` on meter `level`."""

    seat: int
    level: str
    hit: str
    key_id: str
    role: str


@dataclass(frozen=True, slots=True)
class ResetMeter:
    """A supervisor resets a progressive meter without a hit, saying why (605a.7(a)(5): "a key and keyed switch to
    reset the progressive meter or meters or other reset mechanism"): audited, only between rounds."""

    level: str
    reason: str
    key_id: str
    role: str


@dataclass(frozen=True, slots=True)
class CashOutAccount:
    """A floorperson or supervisor cashes out a seat's game account on their own authority, with the reason
    (605a.2(d)(1): "debit any remaining funds from the game account when a player cashes out"), for a player whose
    terminal cannot ask: the balance is paid by an attendant. Refused while the seat has a wager in the round."""

    seat: int
    reason: str
    key_id: str
    role: str


@dataclass(frozen=True, slots=True)
class Signed:
    """An input from a verified supervisor command: the engine journals `command.accepted` (who signed
    what) in the same step as the input's own events, so nothing comes between them in the journal."""

    inp: Input
    command_id: str
    verb: str
    key_id: str
    role: str


@dataclass(frozen=True, slots=True)
class StopRecord:
    """The journal's last event before this start said the table was stopped on purpose (`table.stopped`,
    `demo.stopped`): its seq, and who stopped it. A crash leaves none."""

    seq: int
    by: str


@dataclass(frozen=True, slots=True)
class Recover:
    """The shell restarted (kill -9, power loss) and restored the state stored with the last journaled step:
    re-issue what the phase needs, or void a round whose cards may have left a device unrecorded
    (controller/engine/recovery.py, docs/recovery.md). `after_stop`: the table had been stopped on purpose."""

    after_stop: StopRecord | None = None


@dataclass(frozen=True, slots=True)
class CriticalStateInvalid:
    """The stored critical state failed its checks at start: no round may start until a supervisor clears the
    `critical_state` tilt (never a silent reset)."""

    reason: str
    tilt: str = "critical_state"  # "tilt:meters": the progressive meters' record failed (progressive play stops)


@dataclass(frozen=True, slots=True)
class RaiseTilt:
    """The shell found the controller itself at fault while running (a task that keeps failing: docs/supervision.md):
    no new round until a supervisor clears the tilt `tilt` ("tilt:<what>")."""

    tilt: str
    reason: str
    remedy: str


@dataclass(frozen=True, slots=True)
class LinkLease:
    """The link controller's lease (docs/linked-progressives.md, "The lease"): `fresh` while the table holds one,
    False once it lapsed (`why`); progressive wagers are taken only while it is fresh. `levels`: the link's levels
    as its answer named them (checked against this table's)."""

    fresh: bool
    why: str = ""
    levels: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LinkAnswered:
    """The link controller answered a request of the outbox (`key`): ok, or refused with `error`. A claim's
    answer carries the hit the link recorded."""

    key: str
    ok: bool
    error: str = ""
    new: int = 0
    duplicates: int = 0
    amount_cents: int = 0
    order: int = 0
    meter_before_cents: int = 0
    meter_after_cents: int | None = None  # the link's meter after the award and its reseed; None: a link without it


@dataclass(frozen=True, slots=True)
class LinkBroadcast:
    """What the link shows every linked sign: its meters (cents by level) and the hits pending validation."""

    display: Mapping[str, int]
    jackpots: tuple[LinkJackpot, ...] | None = None  # None: the broadcast said nothing of them


Input = (
    DeviceEvent
    | OpenTable
    | CloseTable
    | Tick
    | Confirm
    | CountEntered
    | FloorpersonDecision
    | MarkOutOfOrder
    | PlayerLeft
    | ReleaseHeld
    | BindBoxes
    | AcknowledgeTilt
    | ClearTilt
    | ValidateJackpot
    | ResetMeter
    | CashOutAccount
    | Signed
    | Recover
    | CriticalStateInvalid
    | RaiseTilt
    | LinkLease
    | LinkAnswered
    | LinkBroadcast
)
