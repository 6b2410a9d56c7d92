"""A table's last round as its tile shows it (pure): gathered from the round's events as the stream brings them, and
shown only once the round's `round.completed` (or `round.voided`) has come, so the hands it names are those of
settlement events (no card identity is published before them, DESIGN.md) and never a round still in play.

Money is the table's integer cents, shown in dollars by controller.core.money.fmt (floor.recall.money_text). A field
not of its shape (a table's payload is outside text) is left out of the sums, never read as a number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from floor.recall import cents_of, money_text

_SEAT = re.compile("[0-9]{1,6}")  # a seat as the tables number them; anything else sorts after, as given


@dataclass
class RoundTally:
    """The round in progress (what its events said so far) and the last one finished."""

    round_id: str | None = None
    wagered: int = 0
    hands: dict[str, str] = field(default_factory=dict)  # seat -> the hand its main settlement named
    last: dict[str, Any] | None = None

    def note(self, round_id: str | None, type_: str, p: dict[str, Any]) -> None:
        if round_id is None:
            return
        if round_id != self.round_id:  # a new round: what the last one gathered does not carry over
            self.round_id, self.wagered, self.hands = round_id, 0, {}
        if type_ == "no_more_bets":
            self.wagered += _wagers_total(p.get("wagers"))
        elif type_ == "street_wager.placed":
            self.wagered += cents_of(p.get("amount")) or 0
        elif type_.endswith(".settled") and isinstance(p.get("hand"), str) and "seat" in p:
            # The chapter's main settlement names the seat's hand; a bonus's hand only when there was none.
            if type_ == "hand.settled" or str(p["seat"]) not in self.hands:
                self.hands[str(p["seat"])] = p["hand"][:60]
        elif type_ in ("round.completed", "round.voided"):
            self.last = self._finished(round_id, type_, p)

    def _finished(self, round_id: str, type_: str, p: dict[str, Any]) -> dict[str, Any]:
        voided = type_ == "round.voided"
        paid, result = cents_of(p.get("paid")), cents_of(p.get("table_result"))
        round_no = p.get("round_no")
        number = f"round {round_no}" if isinstance(round_no, int) else round_id
        if voided:
            summary = f"{number} voided: {str(p.get('reason') or 'no reason given')[:120]}"
        else:
            summary = (
                f"{number}: wagered {money_text(self.wagered)}, paid out {money_text(paid if paid is not None else 0)}"
                + (f", table result {money_text(result)}" if result is not None else "")
            )
        return {
            "round_id": round_id,
            "round_no": round_no if isinstance(round_no, int) else None,
            "outcome": "voided" if voided else "completed",
            "wagered": self.wagered,
            "paid": paid,
            "table_result": result,
            "summary": summary,
            "hands": [f"seat {s}: {h}" for s, h in sorted(self.hands.items(), key=lambda kv: _seat_key(kv[0]))],
        }


def _wagers_total(wagers: object) -> int:
    """Every spot's cents of every seat in a `no_more_bets` (seat -> spot -> cents)."""
    if not isinstance(wagers, dict):
        return 0
    return sum(cents_of(v) or 0 for spots in wagers.values() if isinstance(spots, dict) for v in spots.values())


def _seat_key(seat: str) -> tuple[int, str]:
    return (int(seat), "") if _SEAT.fullmatch(seat) else (1 << 30, seat)
