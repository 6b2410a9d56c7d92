"""What a chapter tells the round engine: the flow is common, a chapter states only what differs.

Card targets name where a card goes: `seat:3` (that seat's hand), `community#2` (the second community
card), or an area of the layout by name (`six_card_bonus`, `all_six_bonus`, `dealer`, `burn`). A target
without `#k` takes the next free place in its area.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from controller.core.money import Cents
from controller.core.settlement import ChapterRules, RoundRecord, Settled
from controller.progressive.parameters import TableProgressives

DealingMethod = Literal["automated_shoe", "manual_shoe", "hand"]
DEALING_METHODS: tuple[DealingMethod, ...] = ("automated_shoe", "manual_shoe", "hand")


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


Rules = TypeVar("Rules", bound=ChapterRules)
# An engine or registry entry of any chapter stands as one of ChapterRules (RoundEngine[ChapterRules]): covariant.
RulesCo = TypeVar("RulesCo", bound=ChapterRules, covariant=True)


class ChapterSpec(ABC, Generic[Rules]):
    """What a chapter tells the round engine, for its own rules model `Rules` (the config's [game]).

    The abstract methods are what every chapter states; the others have the defaults a chapter without that
    feature needs, so the engine reads every member directly.
    """

    chapter: str
    name: str
    main_wagers: tuple[str, ...]  # settled together and reported as `hand.settled`
    # Where the chapter's sections differ from the common numbering, e.g. {"complete": "655a.11(j)",
    # "player": "655a.7(d)(1)"}; keys: open, shuffle, count, betting, player, seat, boxes, complete, 13(a)..13(g).
    citations: Mapping[str, str] = {}
    # Cards turned up just before the first settlement of a wager: wager -> (event, rule, area).
    reveal_before: Mapping[str, tuple[str, str, str]] = {}
    # The dealing methods whose procedures the chapter's text gives; the first is the default when the config
    # names none. A chapter never falls back (.13(g)) to a method it lacks.
    supported_methods: tuple[DealingMethod, ...] = DEALING_METHODS
    # Spots whose wagers contribute to a progressive meter; a void reverses their contributions with an audited
    # `progressive.contributions_reversed` event.
    progressive_wagers: tuple[str, ...] = ()
    # The area of the community cards whose early exposure is the chapter's .13(d) (None: the chapter deals none).
    community_area: str | None = "community"
    # The wagers a chapter still settles when a community card is exposed early (683a.13(d): the optional wagers,
    # settle_on_exposure); an exposure while the cards are being dealt then waits for the deal to be complete.
    exposure_settles: tuple[str, ...] = ()

    def rule(self, section: str) -> str:
        """The citation of a step in the common numbering (".13(d)"), as this chapter numbers it."""
        return self.citations.get(section) or f"{self.chapter}.{section}"

    @abstractmethod
    def seats(self, rules: Rules) -> int: ...

    @abstractmethod
    def offers(self, rules: Rules) -> Sequence[Offer]: ...

    @abstractmethod
    def player_problem(self, wagers: Mapping[str, Cents]) -> str | None:
        """Why these wagers do not make a player (e.g. the three Let It Ride Wagers unequal), or None."""

    @abstractmethod
    def plan(
        self, rules: Rules, method: DealingMethod, players: Sequence[int], wagers: Mapping[int, Mapping[str, Cents]]
    ) -> DealPlan: ...

    @abstractmethod
    def decisions(self, rules: Rules) -> Sequence[Decision]: ...

    @abstractmethod
    def allowed(self, rules: Rules, decision: Decision, wagers: Mapping[str, Cents]) -> Sequence[Cents]:
        """The amounts a wager_or_fold decision may put out."""

    @abstractmethod
    def settle(self, rules: Rules, table: RoundView) -> tuple[list[Settled], dict[str, Cents]]:
        """Settle the round through the chapter's settlement (the same `tablectl settle` uses)."""

    def record(self, rules: Rules, table: RoundView) -> RoundRecord | None:
        """The round as `tablectl settle` reads it (docs/settle.md), journaled as `round.recorded` when it is settled
        so a dispute recomputes it from the journal; None for a chapter without a round record."""
        return None

    def dealing_method(self, rules: Rules) -> DealingMethod:
        """The configured dealing method; a chapter whose rules name none deals by its first supported one."""
        return self.supported_methods[0]

    def require_method(self, method: DealingMethod) -> None:
        """Refuse (ValueError, saying what to set) a dealing method the chapter's text gives no procedure for."""
        if method not in self.supported_methods:
            raise ValueError(
                f"chapter {self.chapter} cannot be dealt by {method.replace('_', ' ')}: its text gives procedures "
                f"for {', '.join(m.replace('_', ' ') for m in self.supported_methods)} only"
            )

    def live_problem(self, rules: Rules) -> str | None:
        """Why the live table cannot run these rules yet (they may still be settled by `tablectl settle`), or None."""
        return None

    def options(self, rules: Rules) -> TableOptions:
        """The table's procedural options (deck handling, stub counts, fallback method) from the rules."""
        return TableOptions()

    def counted_wagers(self, rules: Rules) -> Mapping[str, str | None]:
        """Wager spot -> the rule that has the dealer count its value chips against the number the table game
        system accepted, after "no more bets" and before any card (655a.8(b), 643a.8(b)(1)-(2)); None: the
        "no more bets" rule of the dealing method."""
        return {}

    def progressives(self, rules: Rules) -> TableProgressives:
        """The progressive meters these rules offer (docs/progressive.md); ParameterError for figures the chapter
        does not allow."""
        return TableProgressives(progressives=())

    def wager_sizes(self, rules: Rules, spot: str) -> tuple[Cents, ...] | None:
        """The only amounts a wager at `spot` may be, where the rules fix them (None: any within the limits)."""
        return None

    def settle_on_exposure(self, rules: Rules, table: RoundView) -> list[Settled] | None:
        """A community card exposed before every decision was made (.13(d)): None voids the round with every
        wager returned; a chapter that settles some wagers anyway returns their rows."""
        return None

    def boxes_per_player(self, rules: Rules) -> int:
        """How many adjacent boxes one player may wager on in a round (643a.7(k), 655a.7(e), 683a.7(e): the Rules
        Submission's number); 1, a player on one box only, where the chapter's rules give none."""
        return 1

    def light_rule(self, hit_rule: str) -> str:
        """Where the dealer verifies the winner's seat light at a progressive hit (`hit_rule` is the hit's rule)."""
        return self.rule("11(i)(1)(ii)")

    def validation_rule(self, hit_rule: str) -> str:
        """Where a floorperson validates a progressive payout before it is paid."""
        return self.rule("11(i)(1)(iii)")

    def random_bonuses(self, rules: Rules) -> Mapping[str, str]:
        """The random bonuses the table game system draws for ("magic_card", "lucky_seat") -> the rule that pays
        each; none by default."""
        return {}

    def terminal_lock_rule(self) -> str:
        """Where the electronic wagering system locks out the Five Card Hand Bonus once dealing begins."""
        return self.rule("2(d)")

    def verification_rule(self) -> str:
        """Where a floorperson verifies a Five Card Hand Bonus payout of 500 for 1 before it is credited."""
        return self.rule("11(i)(3)(ii)")

    def lockout_rule(self) -> str:
        """Where the progressive table game system keeps progressive wagers from being placed."""
        return self.rule("8(b)")


@dataclass(frozen=True, slots=True)
class SeatView:
    """One seat (betting position) of a RoundView: what the chapter needs of it to build the seat's round record."""

    seat: int
    cards: tuple[str, ...]
    wagers: Mapping[str, Cents]  # every wager placed, including those collected at a fold
    folded_on: str | None  # the decision key at which the player folded
    withdrawn: frozenset[str]  # wagers taken back (ride_or_withdraw)
    player: int | None = None  # the table-local player this box is bound to with others, None: a player of its own


@dataclass(frozen=True, slots=True)
class RoundView:
    """What the engine knows of a round at settlement, for the chapter to build its round record."""

    round_id: str
    seats: tuple[SeatView, ...]
    areas: Mapping[str, tuple[str, ...]]  # community, six_card_bonus, dealer, ... (not seats)
    meters: Mapping[str, Cents] = field(default_factory=dict)  # progressive meters shown as settlement begins
    meter_carry_micro: Mapping[str, int] = field(default_factory=dict)  # what a reseed starts from (RoundRecord)
    meters_at_turn: Mapping[str, Cents] = field(default_factory=dict)  # "<seat>:<level>": the link's (RoundRecord)
    meters_after_turn: Mapping[str, Cents] = field(default_factory=dict)  # the link's meter after each award
    exposed: bool = False  # a community card was exposed before its reveal (.13(d)): the hands are void
    magic_card: str | None = None  # the table game system's draws (655a.12(e)(3), 643a.12(f)(3))
    lucky_seat: int | None = None


DeckMode = Literal["one_deck", "two_decks"]
AbandonedWagers = Literal["lose", "hold"]
CashOutMedium = Literal["chips", "ticket"]


@dataclass(frozen=True, slots=True)
class TableOptions:
    """The table's procedural options, as the chapter's spec reads them from its rules (ChapterSpec.options);
    a chapter whose rules set none of them plays with these defaults."""

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
    # 605a.2(d)(1): how a game account's cash-out is paid: a cash-out record the dealer pays in chips, a ticket, or
    # either as the player asks at the terminal.
    cash_out_media: tuple[CashOutMedium, ...] = ("chips", "ticket")
    # The dealing method once the shoe (or, dealing from the hand, the shuffler) is out of order (.13(g)).
    fallback_dealing_method: DealingMethod | None = "manual_shoe"
    # .13(e) reshuffles after a failed shuffle; this many failed in a row and the shuffler is held unusable (.13(g)).
    failed_shuffles_limit: int = 3

    def __post_init__(self) -> None:
        if not 1 <= self.failed_shuffles_limit <= 10:
            raise ValueError(
                f"failed_shuffles_limit = {self.failed_shuffles_limit}: the shuffler is held unusable after this "
                "many failed shuffles in a row (.13(g)); use 1 to 10"
            )
        if not 1 <= self.stub_count_every <= 5:
            raise ValueError(
                f"stub_count_every = {self.stub_count_every}: the stub is counted at least every 5 rounds (.8(f)); "
                "use 1 to 5"
            )
