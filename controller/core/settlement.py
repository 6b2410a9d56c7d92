"""What every chapter's settlement produces, and the shared pieces of a round record.

A chapter module settles a recorded round (cards, wagers, decisions, meter values, recorded random
draws) with a pure function `settle_round(rules, record) -> list[Settled]`; `tablectl settle` prints the
result for a dispute, and the round engine uses the same functions live.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from controller.core.cards import CardError, parse_card, require_distinct
from controller.core.money import Cents, Odds

Outcome = Literal["win", "push", "lose", "withdrawn"]


@dataclass(frozen=True, slots=True)
class Settled:
    """One wager settled.

    paid: what the table pays besides handing back the wager; returned: the wager handed back (a win,
    a push or a withdrawal); collected: the wager taken. Exactly one of returned and collected equals
    amount, the other is 0. For "N for 1" odds paid is the total less the wager, and the wager counts as
    returned, so paid + returned is always what the player receives.
    """

    seat: int
    wager: str
    amount: Cents
    outcome: Outcome
    paid: Cents
    returned: Cents
    collected: Cents
    rule: str  # the subsection that settles it, e.g. "643a.11(c)(2)"
    hand: str | None = None
    odds: str | None = None
    paytable: str | None = None  # citation of the table used, e.g. "655a.12(d) paytable A"
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def win(seat: int, wager: str, amount: Cents, odds: Odds, rule: str, **kw: Any) -> Settled:
    return Settled(seat, wager, amount, "win", odds.winnings(amount), amount, 0, rule, odds=str(odds), **kw)


def win_fixed(seat: int, wager: str, amount: Cents, payout: Cents, rule: str, **kw: Any) -> Settled:
    """A fixed-amount award (e.g. an envy bonus or a fixed bonus table), the wager returned."""
    return Settled(seat, wager, amount, "win", payout, amount, 0, rule, **kw)


def push(seat: int, wager: str, amount: Cents, rule: str, **kw: Any) -> Settled:
    return Settled(seat, wager, amount, "push", 0, amount, 0, rule, **kw)


def lose(seat: int, wager: str, amount: Cents, rule: str, **kw: Any) -> Settled:
    return Settled(seat, wager, amount, "lose", 0, 0, amount, rule, **kw)


def withdrawn(seat: int, wager: str, amount: Cents, rule: str, **kw: Any) -> Settled:
    return Settled(seat, wager, amount, "withdrawn", 0, amount, 0, rule, **kw)


def check_round_cards(groups: Iterable[Iterable[str]]) -> None:
    """Every card of a round comes from one deck: refuse duplicates and foreign cards, naming them."""
    cards = [c for g in groups for c in g]
    try:
        require_distinct(cards)
    except CardError as err:
        raise CardError(f"the round's cards are not from one deck: {err}") from None


class SettlementError(ValueError):
    """A round record that cannot be settled: the message names the field, the problem and the fix."""


class ChapterRules(BaseModel):
    """Base of each chapter's options (the [game] table of a config); `chapter` selects the chapter."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    chapter: str  # each chapter narrows it to its own code, the tag of the config's discriminated union
    seats: int


Card = str


def _cards(value: Any) -> Any:
    if isinstance(value, list):
        return [parse_card(c) if isinstance(c, str) else c for c in value]
    return value


class SeatRecord(BaseModel):
    """One betting position in a round record. `player` names who sits there, so boxes of one player
    can be told apart from other players' (envy bonuses never pay on the player's own hands)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    seat: int = Field(ge=1, le=7)
    player: str | None = None
    cards: list[Card] = Field(default_factory=list)
    wagers: dict[str, Cents] = Field(default_factory=dict)

    _parse_cards = field_validator("cards", mode="before")(_cards)

    @field_validator("wagers")
    @classmethod
    def _non_negative(cls, v: dict[str, Cents]) -> dict[str, Cents]:
        bad = {k: a for k, a in v.items() if a < 0}
        if bad:
            raise ValueError(f"wager amounts are cents and cannot be negative: {bad}")
        return v


class RoundRecord(BaseModel):
    """Base of each chapter's round record (the input of `tablectl settle`)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    round_id: str | None = None
    meters: dict[str, Cents] = Field(
        default_factory=dict, description="progressive meter values when settlement began, by level"
    )
    meters_at_turn: dict[str, Cents] | None = Field(
        None,
        description="by '<seat>:<level>': a linked meter as the link controller held it at that winner's turn (its "
        "claim's meter_before), which the link's other tables and this round's own contributions moved after the "
        "display the table last heard (655a.12(c)(4), 605a.8's stand-in); the award is taken from it, not from the "
        "running value; none (left out of the record): the table's own meters",
    )
    meters_after_turn: dict[str, Cents] | None = Field(
        None,
        description="by '<seat>:<level>': a linked meter after that winner's award and its reseed, as the link "
        "controller booked it (its claim's meter_after), so the settlement shows the meter the link holds, not an "
        "estimate of the reseed from this table's figures; none (left out): the table's own meters, or a link that "
        "did not say it (the estimate, as before)",
    )
    meter_carry_micro: dict[str, int] = Field(
        default_factory=dict,
        description="by level, in micro-cents: the reserve plus the display's fraction of a cent when settlement "
        "began, what a reseed after a 100 % award restarts from before the house tops it up to the reseed amount "
        '(docs/progressive.md, "Reseed"); none: the reseed amount alone',
    )


MICRO = 1_000_000  # micro-cents per cent, as the meter model counts (controller/progressive/model.py)


def reseeded(reseed_cents: Cents, carry_micro: int) -> tuple[Cents, int]:
    """The meter after a 100 % award: the reserve (and the fraction of a cent the award left) moves into the display and
    the house tops it up to the reseed amount if it falls short (655a.12(e)(4), 643a.12(f)(4): the reserve of the
    incrementation rate funds the next meter). Returns the display in cents and what is carried after it."""
    if carry_micro >= reseed_cents * MICRO:
        return carry_micro // MICRO, carry_micro % MICRO
    return reseed_cents, 0


def parse_cards_field(value: Any) -> Any:
    """Use as a `mode="before"` validator on card lists: '10d' and 'as' become 'Td' and 'As'."""
    return _cards(value)


def fail(where: str, problem: str) -> SettlementError:
    """A record error in the form every chapter uses: `seats[seat=3].wagers.play: problem and fix`."""
    return SettlementError(f"{where}: {problem}")


def parse_card_field(value: Any) -> Any:
    """Use as a `mode="before"` validator on a single optional card."""
    return parse_card(value) if isinstance(value, str) else value


def known_wagers(chapter: str, allowed: Iterable[str]) -> Callable[[dict[str, Cents]], dict[str, Cents]]:
    """A `wagers` validator refusing wager names the chapter does not have, listing the ones it has."""
    names = tuple(allowed)

    def check(v: dict[str, Cents]) -> dict[str, Cents]:
        unknown = sorted(set(v) - set(names))
        if unknown:
            raise ValueError(f"unknown wager(s) {unknown}: a {chapter} seat has {', '.join(names)}")
        return v

    return check


def require_distinct_seats(numbers: Iterable[int]) -> None:
    seats = list(numbers)
    if len(set(seats)) != len(seats):
        raise fail("seats", f"seats {seats} repeat a seat number: list each betting position once")
