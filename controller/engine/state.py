"""The table's state as the round engine sees it: plain data, cloned (never changed) on every step."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, TypeVar

from controller.accounts.ledger import Ledger
from controller.progressive.link import LinkJackpot
from controller.progressive.model import Meters

_S = TypeVar("_S", "SeatRound", "RoundState", "TableState")


def _copied(obj: _S, **fields: object) -> _S:
    """A shallow copy with `fields` replaced: what dataclasses.replace gives for these plain dataclasses (no
    __post_init__, no init=False fields), without re-running __init__ over every field. The engine clones the state
    on every step, so this is on the hot path of every input (bench/footprint.py's profile)."""
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(fields)
    return new


class Phase(StrEnum):
    CLOSED = "closed"
    OPENING = "opening"  # the opening inspection of the cards (.4(a)) awaited before the first shuffle
    SHUFFLING = "shuffling"
    BETTING = "betting"
    LOCKING = "locking"  # "no more bets" announced, waiting for every station to confirm its lock
    RECONCILING = "reconciling"  # the dealer's chip count of the counted wagers awaited (.8(b)), no card yet
    DEALING = "dealing"
    DEALT = "dealt"  # dealt from the hand: waiting for the dealer to confirm the deal is on the layout
    STUB_COUNT = "stub_count"  # the dealer's count of the stub awaited (.8(f), .9(d), .10(d))
    DECISION = "decision"
    BLOCKED = "blocked"  # no new round until every reason in TableState.blocks is cleared
    CLAIMING = "claiming"  # a linked progressive's hit claimed from the link controller, its answer awaited
    JACKPOT = "jackpot"  # settled, but a progressive hit awaits a floorperson's validation (655a.11(i)(1)(iii))


@dataclass(frozen=True)
class LinkAward:
    """What the link controller recorded for a claim: the share of its meter at that player's turn, and the order
    of the hit across the link (the seq of its meter.hit, 5321.18)."""

    amount_cents: int
    order: int
    meter_before_cents: int
    meter_after_cents: int | None = None  # after the award and its reseed, as the link booked it (None: not said)


@dataclass(frozen=True)
class LinkContribution:
    """One seat's progressive wager in a round's `contribute` request: what the link's meters grow by."""

    seat: int
    wager: str
    cents: int


@dataclass(frozen=True)
class LinkRequest:
    """A request to the link controller kept in the engine state (so in the journal's transaction) until the link
    acknowledges it: the table's outbox. `key` is what the link keys it by, so a resend changes nothing."""

    key: str  # "contribute:<round_id>", "claim:<round_id>:<seat>:<level>" or "paid:<round_id>:<seat>:<level>"
    kind: str  # "contribute" | "claim" | "paid"
    round_id: str
    contributions: tuple[LinkContribution, ...] = ()
    seat: int = 0
    level: str = ""
    percent: int = 0
    rule: str = ""
    amount_cents: int = 0  # "paid": what the table paid (the link's award)
    by: str = ""  # "paid": the key_id that signed the validation here


@dataclass
class SeatRound:
    """A seat (betting position) in the round in progress: what is on its spots, what it was dealt, any fold."""

    seat: int
    wagers: dict[str, int] = field(default_factory=dict)  # spot -> cents, live on the layout
    collected: dict[str, int] = field(default_factory=dict)  # taken at a fold
    withdrawn: dict[str, int] = field(default_factory=dict)  # taken back by the player (643a.11(b), (d))
    cards: list[str] = field(default_factory=list)
    folded_on: str | None = None  # the decision at which the player folded

    def clone(self) -> SeatRound:
        return _copied(
            self,
            wagers=dict(self.wagers),
            collected=dict(self.collected),
            withdrawn=dict(self.withdrawn),
            cards=list(self.cards),
        )

    @property
    def folded(self) -> bool:
        return self.folded_on is not None


@dataclass
class RoundState:
    """The round in progress: its seats, every card out of the shoe or the deck, and what the round waits for."""

    number: int
    round_id: str
    seats: dict[int, SeatRound] = field(default_factory=dict)
    unlocks_pending: set[int] = field(default_factory=set)  # stations yet to confirm betting is open
    locks_pending: set[int] = field(default_factory=set)  # stations yet to confirm "no more bets"
    players: list[int] = field(default_factory=list)  # seats dealt in, clockwise from the dealer's left
    stacks_dispensed: int = 0  # automated shoe: stacks received so far
    cards_dealt: int = 0  # manual shoe and hand: single cards placed so far
    dealt: list[str] = field(default_factory=list)  # every card out of the shoe or the deck, in order
    discarded: list[str] = field(default_factory=list)  # face-up cards set aside (.13(a))
    areas: dict[str, list[str]] = field(default_factory=dict)  # community, six_card_bonus, dealer, burn ...
    revealed: list[str] = field(default_factory=list)  # targets turned face up (e.g. "community#1")
    decision: int = 0  # index into the chapter's decisions
    turn: int | None = None  # the seat whose decision is awaited
    deck: str = "A"  # the deck this round is dealt from (two decks alternate, .3(b)(3))
    left: dict[int, str] = field(default_factory=dict)  # seats whose player left (.7(b)) -> "lose" | "hold"
    chips_accepted: int = 0  # counted wagers accepted by the table game system (.8(b))
    chips_entered: list[int] = field(default_factory=list)  # the dealer's chip counts, in order
    stub_rule: str | None = None  # set while a stub count is awaited: the rule that asks for it
    stub_expected: int = 0  # cards the stub must hold for the deck to be whole
    stub_entered: int | None = None  # the dealer's count when it did not make 52
    completion: dict[str, Any] | None = None  # round.completed's payload, held while a jackpot awaits validation
    exposed: bool = False  # a community card was exposed before its reveal (.13(d)); the void waits for the deal
    terminal_locks_pending: set[int] = field(default_factory=set)  # terminals yet to confirm the lock-out
    # The table game system's random bonus draws (655a.12(e)(3), 643a.12(f)(3)): made once at the lock-out,
    # sealed in the journal until settlement (controller/engine/accounts.py).
    magic_card: str | None = None
    lucky_seat: int | None = None
    # A linked progressive (docs/linked-progressives.md): the link's answer to each claim, "<seat>:<level>" -> award.
    link_awards: dict[str, LinkAward] = field(default_factory=dict)
    # The dealing method the round was announced under at "no more bets", pinned when a device is marked out of order
    # (.13(g)) after it: the round's cards are still dealt by its own procedure, and only the next round turns to
    # another method (docs/rules.md). None: the round deals by the table's method in use. The values of
    # spec.DealingMethod, spelled here: plain data sits beside spec in the engine's layers, not above it.
    method: Literal["automated_shoe", "manual_shoe", "hand"] | None = None
    # Whether a counting shuffler in service shuffled and counted this round's deck (.5(b)), as betting opened: the
    # stub count (.8(f), .9(d), .10(d)) is owed "if an automated card shuffling device, which counts ..., is not being
    # used" for the round, so a cover after its shuffle does not make the dealer count a deck the shuffler counted,
    # and a shuffler back in service after a shuffle by hand does not spare one nobody counted. None: a round stored
    # before this field, which reads the devices in service (`StepContext.deck_counted`).
    deck_counted: bool | None = None

    def clone(self) -> RoundState:
        return _copied(
            self,
            seats={n: st.clone() for n, st in self.seats.items()},
            unlocks_pending=set(self.unlocks_pending),
            locks_pending=set(self.locks_pending),
            terminal_locks_pending=set(self.terminal_locks_pending),
            players=list(self.players),
            dealt=list(self.dealt),
            discarded=list(self.discarded),
            areas={k: list(v) for k, v in self.areas.items()},
            revealed=list(self.revealed),
            left=dict(self.left),
            chips_entered=list(self.chips_entered),
            completion=dict(self.completion) if self.completion is not None else None,
            link_awards=dict(self.link_awards),
        )

    def seat(self, n: int) -> SeatRound:
        return self.seats.setdefault(n, SeatRound(n))

    def in_play(self) -> list[int]:
        """Seats dealt in, not folded and still there, clockwise from the dealer's left."""
        return [n for n in self.players if not self.seats[n].folded and n not in self.left]


@dataclass(frozen=True)
class PendingHit:
    """A progressive award taken from the meter at the player's turn, awaiting a floorperson's validation
    (655a.11(i)(1)(iii), 643a.11(f)(3)(iii)(C) or (iv)(C)) before it is paid; `hit` is the id a validate_jackpot
    names."""

    hit: str
    seat: int
    level: str
    wager: str
    amount_cents: int  # what the player receives: the share of the meter at that turn
    percent: int
    rule: str
    documentation: bool  # not paid from the table inventory: the hand stays on the table (655a.11(i)(1)(iv))
    # A Five Card Hand Bonus payout of 500 for 1, verified by a floorperson and then credited to the game
    # account (655a.11(i)(3)(ii)-(iii), 643a.11(f)(3)(v)(B)-(C)); not a meter award.
    to_account: bool = False


@dataclass(frozen=True)
class AccountRequest:
    """A buy-in or cash-out asked for at a seat's terminal, awaiting the dealer's confirmation (605a.2(d)(1))."""

    request: str  # "buy_in" | "cash_out"
    amount_cents: int  # buy-in: the amount; cash-out: the balance when asked (everything left is paid)
    medium: str  # buy-in: cash or chips; cash-out: chips or ticket


@dataclass(frozen=True)
class HeldFault:
    """A fault that left a shuffler or shoe unusable (.13(g)): what the device said and when. Stored with the state
    so that a restart, to which the device identifies whatever its state, does not forget it (docs/recovery.md)."""

    code: str
    detail: str
    since: datetime | None  # the table's clock (its latest Tick) when the device reported it
    round_no: int  # the last round started by then
    # The table restarted since: the device's next identification is its start-up one, which clears nothing.
    restarted: bool = False
    # Every fault code it reported while held and has not said is cleared, in the order reported: the hold lifts when
    # the last is cleared (docs/engine.md). Empty in a state stored before devices could say so: `code` is then held.
    codes: tuple[str, ...] = ()

    @property
    def uncleared(self) -> tuple[str, ...]:
        return self.codes or (self.code,)


@dataclass(frozen=True)
class CoveredReport:
    """What a shuffler or shoe marked out of order (.13(g)) said last that leaves it unfit to be put back in service:
    nothing it says while covered holds the table (the cover is the record), but a signed back_in_service of a device
    that is not answering, or in fault, is refused until it reports healthy (controller/engine/covered_reports.py).
    Absent for a covered device that answered last with no fault outstanding (or has said nothing since covered)."""

    offline: str | None = None  # why it stopped answering ("offline (port gone)"); None: it answers
    offline_since: datetime | None = None  # the table's clock (its latest Tick) when it went offline
    fault: HeldFault | None = None  # the faults it reported and has not said are cleared


@dataclass(frozen=True)
class DeckLife:
    """One deck's life at the table (.3(c)): when it came into play (the first Tick time after it was
    verified), rounds dealt with it, and rounds since its stub was last counted (.8(f))."""

    since: datetime | None = None
    rounds: int = 0
    rounds_since_count: int = 0


@dataclass
class TableState:
    """The table as the round engine keeps it: the critical state journaled with every step and restored at start."""

    table_id: str
    phase: Phase = Phase.CLOSED
    rounds_played: int = 0  # the last round number started; the next round is rounds_played + 1
    round: RoundState | None = None
    block_reason: str | None = None  # every reason in `blocks`, joined, while the phase is BLOCKED
    closing: bool = False  # close when the round in progress is complete
    # Who asked that close (CloseTable's `by`), for its `table.closed`: kept across a restart. None: nobody named, or
    # a state stored before it was kept (controller/store/snapshot.py says so in the log).
    closing_by: str | None = None
    deck_order: list[str] = field(default_factory=list)  # a card-reading shuffler's order, for hand dealing
    # -- time, deck life, blocks, devices (docs/engine.md) --
    now: datetime | None = None  # the latest Tick
    last_activity: datetime | None = None  # Tick time of the last gaming activity (.5(f))
    blocks: dict[str, str] = field(default_factory=dict)  # key -> reason; no new round while any is set
    confirmed: set[str] = field(default_factory=set)  # who confirmed the inspection awaited ("dealer", ...)
    decks: dict[str, DeckLife] = field(default_factory=dict)  # "A" (and "B" with two decks)
    next_deck: str = "A"  # the deck the next round is dealt from
    devices_down: dict[str, str] = field(default_factory=dict)  # shuffler/shoe -> fault, not yet marked
    # The faults among devices_down (not a device merely offline): kept across a restart until the device identifies
    # again after its start-up identification, or is marked out of order. Absent from an older stored state.
    device_faults: dict[str, HeldFault] = field(default_factory=dict)
    # Shuffles failed in a row (.13(e)) since the shuffler last completed one or identified again: at the table's
    # failed_shuffles_limit the shuffler is held unusable (.13(g)). Absent from an older stored state: 0.
    failed_shuffles: int = 0
    stations_down: dict[int, str] = field(default_factory=dict)  # seat -> why its wager station is unreachable
    out_of_order: dict[str, str] = field(default_factory=dict)  # device marked out of order -> what took over
    # A covered device's latest report while it is not healthy (offline, a fault outstanding): a back_in_service waits
    # for it to answer. Absent from an older stored state: every covered device is taken as answering.
    covered_reports: dict[str, CoveredReport] = field(default_factory=dict)
    held_wagers: dict[int, dict[str, int]] = field(default_factory=dict)  # abandoned wagers held (.7(b))
    # -- players on several boxes (643a.7(k), 655a.7(e), 683a.7(e)): table-local player number -> its boxes --
    bound: dict[int, list[int]] = field(default_factory=dict)  # every player here holds two boxes or more
    next_player: int = 1  # the number the next binding gets: never reused, so the journal tells sessions apart
    # -- progressive meters (docs/progressive.md): immutable, so a step shares them until it changes them --
    meters: Meters | None = None  # None: the table offers no progressive, or its meters are not seeded yet
    pending_hits: list[PendingHit] = field(default_factory=list)  # awaiting validation, in the order paid
    progressive_lockout: dict[str, str] = field(default_factory=dict)  # why progressive wagers are refused
    # -- a linked progressive (docs/linked-progressives.md): the link controller keeps the meters --
    link_outbox: dict[str, LinkRequest] = field(default_factory=dict)  # sent until the link acknowledges each
    link_display: dict[str, int] = field(default_factory=dict)  # the link's meters, cents by level, as last heard
    link_jackpots: list[LinkJackpot] = field(default_factory=list)  # hits pending validation across the link
    link_lease: bool = False  # the table holds a fresh lease (the shell says when it lapses)
    # -- game accounts of the electronic wagering system (605a.2(d); docs/accounts.md) --
    accounts: Ledger = field(default_factory=Ledger)  # immutable: a step shares it until it changes it
    account_requests: dict[int, AccountRequest] = field(default_factory=dict)  # seat -> awaiting the dealer
    terminals_down: dict[int, str] = field(default_factory=dict)  # seat -> why its terminal is unreachable

    def clone(self) -> TableState:
        """A copy the engine may change; every mutable field is copied (tests check a step never changes
        the state it was given), which is far cheaper than copy.deepcopy on every input."""
        return _copied(
            self,
            round=self.round.clone() if self.round else None,
            deck_order=list(self.deck_order),
            blocks=dict(self.blocks),
            confirmed=set(self.confirmed),
            decks=dict(self.decks),
            devices_down=dict(self.devices_down),
            device_faults=dict(self.device_faults),
            out_of_order=dict(self.out_of_order),
            covered_reports=dict(self.covered_reports),
            stations_down=dict(self.stations_down),
            held_wagers={n: dict(w) for n, w in self.held_wagers.items()},
            bound={p: list(seats) for p, seats in self.bound.items()},
            pending_hits=list(self.pending_hits),
            progressive_lockout=dict(self.progressive_lockout),
            link_outbox=dict(self.link_outbox),
            link_display=dict(self.link_display),
            link_jackpots=list(self.link_jackpots),
            account_requests=dict(self.account_requests),
            terminals_down=dict(self.terminals_down),
        )
