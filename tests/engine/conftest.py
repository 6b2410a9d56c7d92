"""A pure, in-memory stand-in for the table's devices, to drive the engine without I/O.

It answers the engine's commands the way the reference devices do (the pty simulators are exercised
in tests/drivers and end to end in tests/e2e); here only the engine's logic is under test.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict, TypeVar

import pytest

from controller.core.cards import STANDARD_DECK
from controller.core.events import DomainEvent
from controller.core.settlement import ChapterRules
from controller.engine.commands import (
    DeviceCommand,
    DispenseStack,
    LightSeat,
    LockSeat,
    LockTerminal,
    RemoveStub,
    ShowAccount,
    ShowLevels,
    ShowWin,
    Shuffle,
    UnlockSeat,
    UnlockTerminal,
)
from controller.engine.inputs import Input, OpenTable
from controller.engine.round import RoundEngine
from controller.engine.spec import AbandonedWagers, ChapterSpec, DealingMethod, DeckMode, TableOptions
from controller.engine.state import TableState
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.spec import MississippiStudSpec
from drivers.interfaces import (
    TERMINAL_SPOTS,
    AccountRequested,
    ButtonPressed,
    CardDrawn,
    DealerConfirmed,
    LockAcknowledged,
    ShuffleCompleted,
    StackDispensed,
    StubRemoved,
    WagerDetected,
)

# How the devices answer one command with the inputs they report back.
Answer = Callable[[DeviceCommand], list[Input]]

# A chapter's rules model: the spec and the rules a test table is built from go together.
R = TypeVar("R", bound=ChapterRules)


def sealed(e: DomainEvent) -> Mapping[str, Any]:
    """What the event keeps sealed (card identities, deck order); the test fails if it keeps nothing."""
    assert e.sealed is not None, f"{e.type} has nothing sealed"
    return e.sealed


def arranged_deck(top: Sequence[str]) -> list[str]:
    """A full deck whose first cards are `top` in that order, the rest in standard order."""
    rest = [c for c in STANDARD_DECK if c not in top]
    return [*top, *rest]


@dataclass
class PureTable:
    """The engine with perfect devices: the shuffler counts 52 (and, dealing from the hand, reports the
    order), the automated shoe dispenses stacks and the stub, stations confirm locks at once. A manual
    shoe's draws are fed by draw(); a deal from the hand is confirmed by press("dealt")."""

    engine: RoundEngine[ChapterRules]
    state: TableState
    decks: list[list[str]] = field(default_factory=list)
    shoe: list[str] = field(default_factory=list)
    events: list[DomainEvent] = field(default_factory=list)
    commands: list[DeviceCommand] = field(default_factory=list)
    # The devices' answers; a test replaces it to script a device that misbehaves (its replacement usually
    # falls back to the one it replaced), and puts the perfect devices back with `t.answer = t.perfect_devices`.
    answer: Answer = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.answer = self.perfect_devices

    def feed(self, inp: Input) -> list[DomainEvent]:
        """Feed one input, then answer the device commands it produced until the table is quiet."""
        new: list[DomainEvent] = []
        queue: list[Input] = [inp]
        while queue:
            before = copy.deepcopy(self.state)
            state, effects = self.engine.step(self.state, queue.pop(0))
            assert self.state == before, "a step changed the state it was given"
            self.state = state
            for eff in effects:
                if isinstance(eff, DomainEvent):
                    new.append(eff)
                else:
                    self.commands.append(eff)
                    queue.extend(self.answer(eff))
        self.events.extend(new)
        return new

    def perfect_devices(self, c: DeviceCommand) -> list[Input]:
        match c:
            case Shuffle():
                self.shoe = self.decks.pop(0) if self.decks else list(STANDARD_DECK)
                order = tuple(self.shoe) if self.engine.method == "hand" else ()
                return [ShuffleCompleted("shuffler", card_count=len(self.shoe), order=order)]
            case DispenseStack(cards=n):
                stack, self.shoe = self.shoe[:n], self.shoe[n:]
                return [StackDispensed("shoe", cards=tuple(stack))]
            case RemoveStub():
                stub, self.shoe = self.shoe, []
                return [StubRemoved("shoe", cards=tuple(stub))]
            case LockSeat(seat=seat) | UnlockSeat(seat=seat):
                return [LockAcknowledged(f"wager_station_{seat}", seat=seat, locked=isinstance(c, LockSeat))]
            case LockTerminal(seat=seat) | UnlockTerminal(seat=seat):
                return [LockAcknowledged(f"wager_terminal_{seat}", seat=seat, locked=isinstance(c, LockTerminal))]
            case ShowLevels() | ShowWin() | LightSeat() | ShowAccount():
                return []  # the sign, the seat lights and the terminals' displays answer nothing awaited
        raise AssertionError(f"unexpected command {c}")

    def draw(self, n: int | None = None) -> list[DomainEvent]:
        """A manual dealing shoe: the dealer draws n cards (all the deal needs by default), the reader
        reports each."""
        out: list[DomainEvent] = []
        while self.shoe and (n is None or n > 0) and self.state.phase.value == "dealing":
            card, self.shoe = self.shoe[0], self.shoe[1:]
            out += self.feed(CardDrawn("shoe", card=card))
            n = None if n is None else n - 1
        return out

    def wager(self, seat: int, spot: str, cents: int) -> list[DomainEvent]:
        # The Five Card Hand Bonus is keyed in at the seat's terminal (655a.7(d)(5)), the rest is chips on a station.
        device = "wager_terminal" if spot in TERMINAL_SPOTS else "wager_station"
        return self.feed(WagerDetected(f"{device}_{seat}", seat=seat, spot=spot, amount_cents=cents))

    def buy_in(self, seat: int, cents: int, medium: str = "cash") -> list[DomainEvent]:
        """A buy-in asked for at the seat's terminal and confirmed there by the dealer (605a.2(d)(1))."""
        out = self.feed(AccountRequested(f"wager_terminal_{seat}", seat, "buy_in", cents, medium))
        return out + self.feed(DealerConfirmed(f"wager_terminal_{seat}", seat, "buy_in"))

    def cash_out(self, seat: int, medium: str = "chips") -> list[DomainEvent]:
        out = self.feed(AccountRequested(f"wager_terminal_{seat}", seat, "cash_out", 0, medium))
        return out + self.feed(DealerConfirmed(f"wager_terminal_{seat}", seat, "cash_out"))

    def press(self, button: str) -> list[DomainEvent]:
        return self.feed(ButtonPressed("dealer_panel", button=button))

    def types(self, events: Sequence[DomainEvent] | None = None) -> list[str]:
        return [e.type for e in (self.events if events is None else events)]


def open_table(
    spec: ChapterSpec[R],
    rules: R,
    method: DealingMethod = "automated_shoe",
    decks: Sequence[Sequence[str]] = (),
) -> PureTable:
    engine = RoundEngine(spec, rules, method)  # built apart: checked against its own rules model
    t = PureTable(engine, TableState("t1"), [list(d) for d in decks])
    t.feed(OpenTable())
    return t


class ChapterTable(Protocol):
    """The chapter_table fixture: open_table."""

    def __call__(
        self,
        spec: ChapterSpec[R],
        rules: R,
        method: DealingMethod = "automated_shoe",
        decks: Sequence[Sequence[str]] = (),
    ) -> PureTable: ...


class MakeTable(Protocol):
    """The make_table fixture: a 655a table, its rules overridden by keyword."""

    def __call__(
        self, decks: Sequence[Sequence[str]] = (), method: DealingMethod = "automated_shoe", **rules: object
    ) -> PureTable: ...


# The deck fixture: arranged_deck.
Deck = Callable[[Sequence[str]], list[str]]


@pytest.fixture
def chapter_table() -> ChapterTable:
    """Any chapter: chapter_table(spec, rules, method="automated_shoe", decks=())."""
    return open_table


@pytest.fixture
def make_table() -> MakeTable:
    def make(
        decks: Sequence[Sequence[str]] = (), method: DealingMethod = "automated_shoe", **rules: object
    ) -> PureTable:
        r = MississippiStudRules.model_validate(
            {"chapter": "655a", "three_card_bonus_paytable": "A", "six_card_bonus_paytable": "C", **rules}
        )
        return open_table(MississippiStudSpec(), r, method, decks)

    return make


@pytest.fixture
def deck() -> Deck:
    return arranged_deck


# -- additive helpers for any chapter in controller.games.registry.SPECS (test_stateful, test_fault_matrix) -------

CONFIGS = __import__("pathlib").Path(__file__).resolve().parents[2] / "configs"


def example_rules(chapter: str) -> ChapterRules:
    """The chapter's rules from its example config in configs/ (the [game] table), validated."""
    import tomllib

    from pydantic import TypeAdapter

    from controller.config.game import GameRules

    # configs/cajun-stud-manual-shoe.toml sorts first but shows another dealing method: the chapter's own is wanted.
    preferred = {"683a": CONFIGS / "cajun-stud.toml"}
    paths = sorted(CONFIGS.glob("*.toml"))
    for path in [p for p in paths if p in preferred.values()] + paths:
        game = tomllib.loads(path.read_text()).get("game", {})
        if game.get("chapter") == chapter:
            rules: ChapterRules = TypeAdapter(GameRules).validate_python(game)
            return rules
    raise LookupError(f"no example config for chapter {chapter} in {CONFIGS}")


class OptionChanges(TypedDict, total=False):
    """Keyword changes to TableOptions (controller.engine.spec), each with its field's type."""

    decks: DeckMode
    cards_preinspected: bool
    shuffler_counts: bool
    stub_count_every: int
    deck_change_hours: float | None
    idle_inspection_minutes: int | None
    abandoned_wagers: AbandonedWagers
    fallback_dealing_method: DealingMethod | None
    failed_shuffles_limit: int


def table_with(
    spec: ChapterSpec[R],
    rules: R,
    method: DealingMethod = "automated_shoe",
    decks: Sequence[Sequence[str]] = (),
    options: TableOptions | None = None,
    start: Input | None = None,
) -> PureTable:
    """A PureTable whose engine has these TableOptions (controller.engine.spec); `start` is fed first (e.g. a
    Tick, so deck life is measured from it), then OpenTable."""
    engine = RoundEngine(spec, rules, method, options)  # built apart: checked against its own rules model
    t = PureTable(engine, TableState("t1"), [list(d) for d in decks])
    if start is not None:
        t.feed(start)
    t.feed(OpenTable())
    return t


def enter_player(t: PureTable, seat: int) -> list[DomainEvent]:
    """Every wager the table offers at its minimum on this seat (a player under any chapter)."""
    out: list[DomainEvent] = []
    for offer in t.engine.spec.offers(t.engine.rules):
        if offer.spot in TERMINAL_SPOTS and t.state.accounts.balance(seat) < offer.min_cents:
            out += t.buy_in(seat, 100 * offer.min_cents)
        out += t.wager(seat, offer.spot, offer.min_cents)
    return out


def decide_all(t: PureTable, pending: Sequence[DomainEvent]) -> list[DomainEvent]:
    """Answer each decision the engine asks for: the smallest allowed wager, or let it ride."""
    out = list(pending)
    while True:
        asks = [e for e in pending if e.type == "decision.requested"]
        if not asks or t.state.phase.value != "decision":
            return out
        p = asks[-1].payload
        pending = (
            t.wager(p["seat"], p["spot"], p["allowed"][0]) if p["kind"] == "wager_or_fold" else t.press("let_it_ride")
        )
        out += pending
