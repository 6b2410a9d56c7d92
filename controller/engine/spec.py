"""What a chapter tells the round engine: the flow is common, a chapter states only what differs.

Card targets name where a card goes: `seat:3` (that seat's hand), `community#2` (the second community
card), or an area of the layout by name (`six_card_bonus`, `all_six_bonus`, `dealer`, `burn`). A target
without `#k` takes the next free place in its area.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol

from controller.games.settlement import Settled
from controller.money import Cents

DealingMethod = Literal["automated_shoe", "manual_shoe", "hand"]


@dataclass(frozen=True, slots=True)
class Offer:
    """A wager the table takes before "no more bets", with the rule that offers it and its limits."""

    spot: str
    rule: str
    min_cents: Cents
    max_cents: Cents


@dataclass(frozen=True, slots=True)
class Stack:
    """One stack an automated dealing shoe dispenses: a target per card, top card first."""

    targets: tuple[str, ...]
    rule: str


@dataclass(frozen=True, slots=True)
class DealPlan:
    """How the cards of a round reach the layout.

    Automated shoe: `stacks` are dispensed one at a time; then the dealer removes the stub and deals
    `from_stub` by hand, top card first (655a.10(c), 683a.10(c)). Manual shoe and hand: `cards` is the
    order in which single cards are dealt, one target per card.
    """

    rule: str
    stacks: tuple[Stack, ...] = ()
    from_stub: tuple[str, ...] = ()
    cards: tuple[str, ...] = ()

    @property
    def targets(self) -> tuple[str, ...]:
        """Every card's target, whatever the method (for counting what each area must receive)."""
        return self.cards or tuple(t for s in self.stacks for t in s.targets) + self.from_stub


DecisionKind = Literal["wager_or_fold", "ride_or_withdraw"]


@dataclass(frozen=True, slots=True)
class Decision:
    """One round of decisions, clockwise from the dealer's left, then (optionally) a reveal.

    wager_or_fold: the player puts `spot` out in one of the allowed amounts or folds (655a.11(b)).
    ride_or_withdraw: the player lets `spot` ride or takes it back (643a.11(b)); nobody leaves the round.
    """

    key: str
    name: str
    rule: str
    kind: DecisionKind
    spot: str
    reveal: str | None = None  # the target turned face up once everyone has decided, e.g. "community#1"
    reveal_rule: str | None = None


class ChapterSpec(Protocol):
    chapter: str
    name: str
    main_wagers: tuple[str, ...]  # settled together and reported as `hand.settled`
    # Where the chapter's sections differ from the common numbering, e.g. {"complete": "655a.11(j)",
    # "player": "655a.7(d)(1)"}; keys: open, shuffle, count, betting, player, seat, complete, 13(a)..13(g).
    citations: Mapping[str, str]
    # Cards turned up just before the first settlement of a wager: wager -> (event, rule, area).
    reveal_before: Mapping[str, tuple[str, str, str]]

    def seats(self, rules: Any) -> int: ...

    def offers(self, rules: Any) -> Sequence[Offer]: ...

    def player_problem(self, wagers: Mapping[str, Cents]) -> str | None:
        """Why these wagers do not make a player (e.g. the three Let It Ride Wagers unequal), or None."""

    def plan(
        self, rules: Any, method: DealingMethod, players: Sequence[int], wagers: Mapping[int, Mapping[str, Cents]]
    ) -> DealPlan: ...

    def decisions(self, rules: Any) -> Sequence[Decision]: ...

    def allowed(self, rules: Any, decision: Decision, wagers: Mapping[str, Cents]) -> Sequence[Cents]:
        """The amounts a wager_or_fold decision may put out."""

    def settle(self, rules: Any, table: RoundView) -> tuple[list[Settled], dict[str, Cents]]:
        """Settle the round through the chapter's settlement (the same `tablectl settle` uses)."""


@dataclass(frozen=True, slots=True)
class SeatView:
    seat: int
    cards: tuple[str, ...]
    wagers: Mapping[str, Cents]  # every wager placed, including those collected at a fold
    folded_on: str | None  # the decision key at which the player folded
    withdrawn: frozenset[str]  # wagers taken back (ride_or_withdraw)


@dataclass(frozen=True, slots=True)
class RoundView:
    """What the engine knows of a round at settlement, for the chapter to build its round record."""

    round_id: str
    seats: tuple[SeatView, ...]
    areas: Mapping[str, tuple[str, ...]]  # community, six_card_bonus, dealer, ... (not seats)
    meters: Mapping[str, Cents] = field(default_factory=dict)  # progressive meters shown as settlement begins


# -- Optional chapter attributes (read with getattr; a spec without them gets these defaults) ----------------
#
# counted_wagers: Mapping[str, str], wager spot -> the rule that has the dealer count its value chips against
#   the number the table game system accepted, after "no more bets" and before any card (655a.8(b),
#   643a.8(b)(1)-(2)); e.g. {"progressive": "655a.8(b)"}. A Sequence of spots is accepted too (the rule is
#   then the "no more bets" rule of the dealing method), and so is a method taking the rules and returning
#   either, for wagers counted only where the Rules Submission says so.
# progressive_wagers: Sequence[str], spots whose wagers contribute to a progressive meter; a void reverses
#   their contributions with an audited `progressive.contributions_reversed` event.
DEFAULT_COUNTED_WAGERS: Mapping[str, str] = {}
DEFAULT_PROGRESSIVE_WAGERS: tuple[str, ...] = ("progressive", "three_card_progressive", "five_card_progressive")

DeckMode = Literal["one_deck", "two_decks"]
AbandonedWagers = Literal["lose", "hold"]


@dataclass(frozen=True, slots=True)
class TableOptions:
    """The table's procedural options from its config (a chapter's rules model may carry any of these
    fields; the engine falls back to the defaults below for those it lacks)."""

    # .3(a) one deck and a cover card, or .3(b) two decks alternating every round (automated shuffler only).
    decks: DeckMode = "one_deck"
    # .4(e): decks arrive preinspected and reshuffled under 603a.16(u)/(v), so no opening inspection.
    cards_preinspected: bool = True
    # .5(b): the shuffler counts the cards after each shuffle; if not, the stub is counted (.8(f)).
    shuffler_counts: bool = True
    stub_count_every: int = 5  # rounds, at most 5 (.8(f), .9(d), .10(d))
    deck_change_hours: float | None = None  # None: 4 dealt by hand, 8 from a shoe (.3(c)); less is allowed
    idle_inspection_minutes: int | None = 30  # no gaming activity this long: re-inspect (.5(f)); None: off
    abandoned_wagers: AbandonedWagers = "lose"  # .7(b)
    # The dealing method once the shoe (or, dealing from the hand, the shuffler) is out of order (.13(g)).
    fallback_dealing_method: DealingMethod | None = "manual_shoe"

    @classmethod
    def from_rules(cls, rules: Any) -> TableOptions:
        defaults = cls()
        opts = cls(**{f.name: getattr(rules, f.name, getattr(defaults, f.name)) for f in fields(cls)})
        if not 1 <= opts.stub_count_every <= 5:
            raise ValueError(
                f"stub_count_every = {opts.stub_count_every}: the stub is counted at least every 5 "
                "rounds (.8(f)); use 1 to 5"
            )
        return opts
