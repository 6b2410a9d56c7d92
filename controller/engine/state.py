"""The table's state as the engine sees it: plain data, copied on every step."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum


class Phase(StrEnum):
    CLOSED = "closed"
    SHUFFLING = "shuffling"
    BETTING = "betting"
    LOCKING = "locking"  # "no more bets" announced, waiting for every station to confirm its lock
    DEALING = "dealing"
    DECISION = "decision"
    BLOCKED = "blocked"  # no new round until a floorperson clears the reason


@dataclass
class SeatRound:
    seat: int
    wagers: dict[str, int] = field(default_factory=dict)  # spot -> cents, live on the layout
    collected: dict[str, int] = field(default_factory=dict)  # taken at a fold, 655a.11(b)
    cards: list[str] = field(default_factory=list)
    folded: bool = False
    folded_on: str | None = None  # the Street Wager spot at which the player folded

    def clone(self) -> SeatRound:
        return replace(self, wagers=dict(self.wagers), collected=dict(self.collected), cards=list(self.cards))

    @property
    def ante(self) -> int:
        return self.wagers.get("ante", 0) or self.collected.get("ante", 0)


@dataclass
class RoundState:
    number: int
    round_id: str
    seats: dict[int, SeatRound] = field(default_factory=dict)
    unlocks_pending: set[int] = field(default_factory=set)  # stations yet to confirm betting is open
    locks_pending: set[int] = field(default_factory=set)  # stations yet to confirm "no more bets"
    deal_queue: list[int] = field(default_factory=list)  # seats still owed a stack, in dealing order
    dealt: list[str] = field(default_factory=list)  # every card out of the shoe, in order
    discarded: list[str] = field(default_factory=list)  # face-up cards set aside (655a.13(a))
    six_card_cards: list[str] = field(default_factory=list)
    community: list[str] = field(default_factory=list)
    revealed: int = 0
    street: int = 0  # index into the chapter's STREETS
    turn: int | None = None  # the seat whose decision is awaited

    def clone(self) -> RoundState:
        return replace(self, seats={n: st.clone() for n, st in self.seats.items()},
                       unlocks_pending=set(self.unlocks_pending), locks_pending=set(self.locks_pending),
                       deal_queue=list(self.deal_queue), dealt=list(self.dealt), discarded=list(self.discarded),
                       six_card_cards=list(self.six_card_cards), community=list(self.community))

    def seat(self, n: int) -> SeatRound:
        return self.seats.setdefault(n, SeatRound(n))

    def in_play(self) -> list[int]:
        """Seats dealt in and not folded, clockwise from the dealer's left."""
        return sorted(n for n, s in self.seats.items() if s.cards and not s.folded)


@dataclass
class TableState:
    table_id: str
    phase: Phase = Phase.CLOSED
    rounds_played: int = 0  # the last round number started; the next round is rounds_played + 1
    round: RoundState | None = None
    block_reason: str | None = None
    closing: bool = False  # close when the round in progress is complete

    def clone(self) -> TableState:
        """A copy the engine may change; every mutable field is copied (tests check a step never changes
        the state it was given), which is far cheaper than copy.deepcopy on every input."""
        return replace(self, round=self.round.clone() if self.round else None)
