"""What the simulated players of `demo` and `simulate` decide, as the dealer (floor.py) asks them: the wagers before
"no more bets", the answer to each `decision.requested`, a wager tried after the lock-out, the dealer's stub count.
Each policy (scripted scenarios, the optimal strategy, the demo's players) implements Policy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from controller.config.table import TableConfig

# What a player answers to a decision: an amount (one of the allowed ones) to wager, "fold", or for a
# ride-or-withdraw decision "ride" / "withdraw". None folds too (how the first scripted rounds said it).
Answer = int | str | None


@dataclass(frozen=True, slots=True)
class DecisionRequest:
    """A `decision.requested` event as the player sees it."""

    decision: str  # the chapter's decision key, e.g. "street_3"
    spot: str  # the wager spot the decision is about
    kind: str  # "wager_or_fold" or "ride_or_withdraw"
    allowed: tuple[int, ...] = ()  # wager_or_fold: the amounts that may be put out
    # What the seat's player sees when asked: their own cards, then the community cards face up, in the order dealt
    # and revealed; and their wagers live on the layout (a strategy decides on both: controller.people.optimal).
    cards: tuple[str, ...] = ()
    wagers: tuple[tuple[str, int], ...] = ()


class Policy(Protocol):
    """What the simulated players do."""

    def wagers(self, round_no: int, config: TableConfig) -> dict[int, dict[str, int]]:
        """Seat -> {spot: cents} placed before "no more bets"."""

    def decide(self, round_no: int, seat: int, request: DecisionRequest) -> Answer:
        """The seat's answer to the decision (see Answer)."""

    def late_wager(self, round_no: int, config: TableConfig) -> tuple[int, str, int] | None:
        """A wager someone tries after "no more bets" (seat, spot, cents), to show the lock-out."""

    def stub_count(self, round_no: int) -> StubCount | None:
        """The dealer's stub count and misdeal ruling this round, or None: the right count."""


@dataclass(frozen=True, slots=True)
class StubCount:
    """What the dealer enters when asked to count the stub (.8(f), .9(d), .10(d)), and, when that count does
    not make 52 cards, whether the dealer rules the cards misdealt (void) or not (void, the deck removed)."""

    count: int
    misdeal: bool = False
