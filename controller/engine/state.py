"""The table's state as the round engine sees it: plain data, cloned (never changed) on every step."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum


class Phase(StrEnum):
    CLOSED = "closed"
    SHUFFLING = "shuffling"
    BETTING = "betting"
    LOCKING = "locking"  # "no more bets" announced, waiting for every station to confirm its lock
    DEALING = "dealing"
    DEALT = "dealt"  # dealt from the hand: waiting for the dealer to confirm the deal is on the layout
    DECISION = "decision"
    BLOCKED = "blocked"  # no new round until a floorperson clears the reason


@dataclass
class SeatRound:
    seat: int
    wagers: dict[str, int] = field(default_factory=dict)  # spot -> cents, live on the layout
    collected: dict[str, int] = field(default_factory=dict)  # taken at a fold
    withdrawn: dict[str, int] = field(default_factory=dict)  # taken back by the player (643a.11(b), (d))
    cards: list[str] = field(default_factory=list)
    folded_on: str | None = None  # the decision at which the player folded

    def clone(self) -> SeatRound:
        return replace(self, wagers=dict(self.wagers), collected=dict(self.collected),
                       withdrawn=dict(self.withdrawn), cards=list(self.cards))

    @property
    def folded(self) -> bool:
        return self.folded_on is not None


@dataclass
class RoundState:
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

    def clone(self) -> RoundState:
        return replace(self, seats={n: st.clone() for n, st in self.seats.items()},
                       unlocks_pending=set(self.unlocks_pending), locks_pending=set(self.locks_pending),
                       players=list(self.players), dealt=list(self.dealt), discarded=list(self.discarded),
                       areas={k: list(v) for k, v in self.areas.items()}, revealed=list(self.revealed))

    def seat(self, n: int) -> SeatRound:
        return self.seats.setdefault(n, SeatRound(n))

    def in_play(self) -> list[int]:
        """Seats dealt in and not folded, clockwise from the dealer's left."""
        return [n for n in self.players if not self.seats[n].folded]


@dataclass
class TableState:
    table_id: str
    phase: Phase = Phase.CLOSED
    rounds_played: int = 0  # the last round number started; the next round is rounds_played + 1
    round: RoundState | None = None
    block_reason: str | None = None
    closing: bool = False  # close when the round in progress is complete
    deck_order: list[str] = field(default_factory=list)  # a card-reading shuffler's order, for hand dealing

    def clone(self) -> TableState:
        """A copy the engine may change; every mutable field is copied (tests check a step never changes
        the state it was given), which is far cheaper than copy.deepcopy on every input."""
        return replace(self, round=self.round.clone() if self.round else None, deck_order=list(self.deck_order))
