"""What every part of a step works on, and nothing else: the table's fixed setup (the chapter, its rules, the
dealing method, the options and what follows from them), the private copy of the state a step changes, and the
effects it returns; with the helpers every step needs (emit an event, issue a device command, record an input
ignored or refused, raise a block) and the citations that depend on the dealing method in use.

The steps themselves are plain functions over a StepContext, in the modules above this one (docs/engine.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol

from controller.core import rng
from controller.core.events import DomainEvent
from controller.core.invariant import present
from controller.core.settlement import ChapterRules
from controller.engine.commands import DeviceCommand
from controller.engine.spec import ChapterSpec, DealingMethod, Decision, Offer, RulesCo, TableOptions
from controller.engine.state import Phase, RoundState, TableState
from controller.progressive.parameters import TableProgressives
from drivers.interfaces import TERMINAL_SPOTS

Effect = DomainEvent | DeviceCommand


class BonusDraws(Protocol):
    """The table game system's random draws (655a.1 "Magic Card Bonus", "Lucky Bonus")."""

    def magic_card(self) -> str: ...

    def lucky_seat(self, seats: Sequence[int]) -> int: ...


class SecretDraws:
    """The operating system's CSPRNG (controller.core.rng, Python's `secrets`): what a live table uses."""

    def magic_card(self) -> str:
        return rng.draw_magic_card()

    def lucky_seat(self, seats: Sequence[int]) -> int:
        return rng.draw_lucky_seat(seats)


class TableSetup(Generic[RulesCo]):
    """The engine's immutable part: the chapter and its rules as configured, and what the round reads of them on
    every step (the offers, the decisions, the counted and the progressive wagers)."""

    def __init__(
        self,
        spec: ChapterSpec[RulesCo],
        rules: RulesCo,
        method: DealingMethod = "automated_shoe",
        options: TableOptions | None = None,
        draws: BonusDraws | None = None,
    ) -> None:
        spec.require_method(method)  # a chapter whose other dealing sections are unpublished refuses them up front
        self.spec = spec
        self.rules = rules
        self.method = method
        opts = options or spec.options(rules)
        if opts.fallback_dealing_method not in spec.supported_methods:
            # The chapter publishes no procedure for that method: once its device is out of order (.13(g)) the
            # table waits for it (the `no_method` block) instead of dealing by a method the chapter lacks.
            opts = replace(opts, fallback_dealing_method=None)
        self.options = opts
        self.offers: dict[str, Offer] = {o.spot: o for o in spec.offers(rules)}
        self.decisions: list[Decision] = list(spec.decisions(rules))
        self.counted: dict[str, str | None] = dict(spec.counted_wagers(rules))
        self.progressive = spec.progressive_wagers
        # The meters of the progressive wagers this table takes live (docs/progressive.md); ParameterError
        # (a ValueError naming the field and the fix) for figures the chapter does not allow.
        params = spec.progressives(rules)
        self.meter_params = TableProgressives(
            progressives=tuple(p for p in params.progressives if p.wager in self.offers)
        )
        self.meter_wagers = frozenset(p.wager for p in self.meter_params.progressives)
        # Every betting position has an electronic wagering terminal where the chapter's Five Card Hand Bonus is
        # offered (655a.2(d), 643a.2(e)); its random bonuses are drawn by `draws` (the CSPRNG unless a test seeds it).
        self.terminals = any(spot in self.offers for spot in TERMINAL_SPOTS)
        self.random_bonuses = dict(spec.random_bonuses(rules)) if self.terminals else {}
        self.draws: BonusDraws = draws or SecretDraws()
        # The linked progressive this table's progressive wagers feed (the config's [progressive] link), or None: the
        # table's own meters (docs/linked-progressives.md). Set by the shell once, before the first step.
        self.link: str | None = None

    def rule(self, section: str) -> str:
        return self.spec.rule(section)


@dataclass
class StepContext:
    """One input's worth of work: `s` is the step's private copy of the state (the caller's is never changed),
    `out` collects the effects in the order they happen."""

    setup: TableSetup[ChapterRules]
    s: TableState
    out: list[Effect]

    # -- what the chapter and the table fix --------------------------------------------------------------

    @property
    def spec(self) -> ChapterSpec[ChapterRules]:
        return self.setup.spec

    @property
    def rules(self) -> ChapterRules:
        return self.setup.rules

    @property
    def opts(self) -> TableOptions:
        return self.setup.options

    @property
    def seats(self) -> int:
        return self.spec.seats(self.rules)

    @property
    def r(self) -> RoundState:
        """The round in progress (a step that needs one is only reached while there is one)."""
        return present(self.s.round, "the round in progress")

    def rule(self, section: str) -> str:
        return self.setup.rule(section)

    # -- the dealing method in use (.13(g)) ----------------------------------------------------------------

    @property
    def method(self) -> DealingMethod:
        """The dealing method of the round in play: the one its "no more bets" was announced under, if a device was
        marked out of order since (`RoundState.method`); else the table's (`table_method`)."""
        r = self.s.round
        if r is not None and r.method is not None:
            return r.method
        return self.table_method

    @property
    def table_method(self) -> DealingMethod:
        """The dealing method the table deals its next round by: the configured one, or what took over from a device
        marked out of order (.13(g)); when none is usable the `no_method` block keeps the table from dealing."""
        return usable_method(self.setup.method, self.opts.fallback_dealing_method, self.s.out_of_order) or (
            self.setup.method
        )

    def manual_shuffle(self) -> bool:
        return "shuffler" in self.s.out_of_order

    def shuffler_counts(self) -> bool:
        """Whether the table's next deck is counted by its shuffler (.5(b)): a counting shuffler in service."""
        return self.opts.shuffler_counts and not self.manual_shuffle()

    def deck_counted(self) -> bool:
        """Whether the round's own deck was counted by the shuffler that shuffled it (`RoundState.deck_counted`, set as
        betting opens), whatever was covered or put back since; the devices in service for a round stored without it."""
        r = self.s.round
        if r is not None and r.deck_counted is not None:
            return r.deck_counted
        return self.shuffler_counts()

    def lock_rule(self) -> str:
        """The "no more bets" and lock-out rule of the dealing method in use."""
        return self.rule({"automated_shoe": "10(a)(2)", "manual_shoe": "8(b)", "hand": "9(a)(3)"}[self.method])

    def stub_discard_rule(self) -> str:
        """Where the dealing method in use puts the stub in the discard rack once every card is dealt (643a.8(e),
        .9(c), .10(c); 683a numbers its manual shoe's 683a.8(d), which its spec says)."""
        return self.rule({"manual_shoe": "8(e)", "hand": "9(c)", "automated_shoe": "10(c)"}[self.method])

    def stub_rules(self) -> tuple[str, str, str]:
        """The stub count's rules for the dealing method in use: (count, whole, incorrect)."""
        sub = {
            "manual_shoe": ("8(f)", "8(g)", "8(h)"),
            "hand": ("9(d)", "9(e)", "9(f)"),
            "automated_shoe": ("10(d)", "10(e)", "10(f)"),
        }[self.method]
        return self.rule(sub[0]), self.rule(sub[1]), self.rule(sub[2])

    # -- effects ---------------------------------------------------------------------------------------------

    def emit(
        self,
        type_: str,
        rule: str | None,
        payload: Mapping[str, Any] | None = None,
        sealed: Mapping[str, Any] | None = None,
    ) -> None:
        rid = self.s.round.round_id if self.s.round else None
        self.out.append(DomainEvent(type_, rule, dict(payload or {}), rid, sealed))

    def command(self, cmd: DeviceCommand) -> None:
        self.out.append(cmd)

    def ignored(self, what: str, why: str) -> None:
        self.emit("input.ignored", None, {"input": what, "reason": why, "phase": str(self.s.phase)})

    def refused(self, what: str, why: str, rule: str | None) -> None:
        """An input the rules forbid now (not merely out of place): recorded with the rule."""
        self.emit("input.refused", rule, {"input": what, "reason": why, "phase": str(self.s.phase)})

    # -- blocks (clearing one may start the next shuffle: controller/engine/boundary.py) ---------------------------

    def block(self, key: str, reason: str) -> None:
        """No new round until this is cleared. Between rounds the table shows BLOCKED at once (the caller
        emits the event that says why); during a round the block waits for the round to end."""
        self.s.blocks[key] = reason
        if self.s.round is None and self.s.phase in (Phase.BLOCKED, Phase.OPENING):
            self.s.block_reason = self.reasons()

    def reasons(self) -> str:
        return "; ".join(self.s.blocks.values())

    def enter_blocked(self) -> None:
        self.s.phase = Phase.OPENING if "inspection" in self.s.blocks else Phase.BLOCKED
        reason = self.reasons()
        if reason != self.s.block_reason:
            self.s.block_reason = reason
            self.emit("table.blocked", None, {"reasons": dict(self.s.blocks)})


def usable_method(
    base: DealingMethod, fallback: DealingMethod | None, out_of_order: Mapping[str, str]
) -> DealingMethod | None:
    """The configured method if its device is in service, else the fallback if that one can be used."""

    def usable(m: DealingMethod) -> bool:
        if m == "hand":  # .9(a)(1): an automated shuffler, and this engine needs its card order
            return "shuffler" not in out_of_order
        if m == "manual_shoe" and base == "automated_shoe":
            return True  # a manual shoe standing in for the automated one, which is what was covered
        # The table's one shoe: configured, or a hand-dealt table's fallback. Covered (.13(g)), it deals nothing.
        return "shoe" not in out_of_order

    if usable(base):
        return base
    return fallback if fallback is not None and fallback != base and usable(fallback) else None


def area_of(target: str) -> tuple[str, int | None]:
    """A card target's area and its 1-based place, if it names one: `community#2` -> ("community", 2)."""
    name, _, index = target.partition("#")
    return name, int(index) if index else None
