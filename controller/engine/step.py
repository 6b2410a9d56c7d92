"""The state every part of a step works on: the table state, the effects out, the engine; the helpers
that emit events and commands; the blocks that stop the next round; and the dealing method in use (.13(g))."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from controller.core.events import DomainEvent
from controller.core.settlement import ChapterRules, Settled
from controller.engine.inputs import Command
from controller.engine.spec import DealingMethod, Decision, RoundView, TableOptions
from controller.engine.state import Phase, RoundState, TableState

if TYPE_CHECKING:
    from controller.engine.round import Effect, RoundEngine


def _area(target: str) -> tuple[str, int | None]:
    name, _, index = target.partition("#")
    return name, int(index) if index else None


class _StepBase:
    """One input's worth of work on a private copy of the state: what every part of a step shares."""

    def __init__(self, engine: RoundEngine[ChapterRules], s: TableState, out: list[Effect]) -> None:
        self.e = engine
        self.spec = engine.spec
        self.rules = engine.rules
        self.s = s
        self.out = out

    # -- helpers -------------------------------------------------------------------------------

    @property
    def r(self) -> RoundState:
        assert self.s.round is not None, "no round in progress"
        return self.s.round

    @property
    def seats(self) -> int:
        return self.spec.seats(self.rules)

    def emit(
        self,
        type_: str,
        rule: str | None,
        payload: Mapping[str, Any] | None = None,
        sealed: Mapping[str, Any] | None = None,
    ) -> None:
        rid = self.s.round.round_id if self.s.round else None
        self.out.append(DomainEvent(type_, rule, dict(payload or {}), rid, sealed))

    def command(self, target: str, verb: str, seat: int | None = None, cards: int = 0) -> None:
        self.out.append(Command(target, verb, seat, cards))

    def ignored(self, what: str, why: str) -> None:
        self.emit("input.ignored", None, {"input": what, "reason": why, "phase": str(self.s.phase)})

    def refused(self, what: str, why: str, rule: str | None) -> None:
        """An input the rules forbid now (not merely out of place): recorded with the rule."""
        self.emit("input.refused", rule, {"input": what, "reason": why, "phase": str(self.s.phase)})

    @property
    def opts(self) -> TableOptions:
        return self.e.options

    @property
    def method(self) -> DealingMethod:
        """The dealing method in use: the configured one, or what took over from a device marked out of
        order (.13(g)); when none is usable the `no_method` block keeps the table from dealing."""
        return _usable_method(self.e.method, self.opts.fallback_dealing_method, self.s.out_of_order) or self.e.method

    def manual_shuffle(self) -> bool:
        return "shuffler" in self.s.out_of_order

    def shuffler_counts(self) -> bool:
        return self.opts.shuffler_counts and not self.manual_shuffle()

    # -- blocks ----------------------------------------------------------------------------------

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

    def unblock(self, key: str, by: str) -> None:
        if self.s.blocks.pop(key, None) is None:
            return
        self.emit("table.block_cleared", None, {"block": key, "by": by, "remaining": dict(self.s.blocks)})
        if self.s.phase in (Phase.BLOCKED, Phase.OPENING) and self.s.round is None:
            if self.s.blocks:
                self.enter_blocked()
            else:
                self.s.block_reason = None
                self.start_shuffle()

    def pause_empty_betting(self) -> None:
        """A block that arises while betting is open and no wager is on the layout: betting closes now."""
        r = self.s.round
        if self.s.phase is Phase.BETTING and r is not None and not any(st.wagers for st in r.seats.values()):
            self.s.round = None
            for seat in range(1, self.seats + 1):
                self.command("wager_station", "lock", seat=seat)
            self.enter_blocked()

    if TYPE_CHECKING:  # the parts of a step each other part calls; defined by the mixins of _Step

        def current_decision(self) -> Decision | None: ...
        def decision_wager(self, seat: int, amount: int, base: dict[str, Any], d: Decision) -> None: ...
        def emit_settled(self, x: Settled, revealed: set[str]) -> None: ...
        def next_decision(self, after: int | None = None) -> None: ...
        def open_betting(self) -> None: ...
        def contribute_wagers(self) -> None: ...
        def hold_for_jackpot(self, done: dict[str, Any]) -> bool: ...
        def meter_values(self) -> dict[str, int]: ...
        def progressive_refusal(self, spot: str, amount: int) -> str | None: ...
        def reverse_progressive_contributions(self, rule: str, returned: Mapping[str, Mapping[str, int]]) -> None: ...
        def seed_meters(self) -> None: ...
        def lock_progressive(self, key: str, why: str) -> None: ...
        def unlock_progressive(self, key: str) -> None: ...
        def take_hits(self, rows: Sequence[Settled]) -> list[Settled]: ...
        def round_over(self) -> None: ...
        def settle(self) -> None: ...
        def start_dealing(self) -> None: ...
        def start_shuffle(self) -> None: ...
        def view(self) -> RoundView: ...
        def void(
            self,
            rule: str,
            reason: str,
            remedy: str = "all wagers returned; cards reshuffled",
            settled: Sequence[Settled] = (),
        ) -> None: ...


def _usable_method(
    base: DealingMethod, fallback: DealingMethod | None, out_of_order: Mapping[str, str]
) -> DealingMethod | None:
    """The configured method if its device is in service, else the fallback if that one can be used."""

    def usable(m: DealingMethod) -> bool:
        if m == "hand":  # .9(a)(1): an automated shuffler, and this engine needs its card order
            return "shuffler" not in out_of_order
        if m == "automated_shoe" or base == "manual_shoe":  # the configured shoe
            return "shoe" not in out_of_order
        return True  # a manual shoe standing in for the automated one

    if usable(base):
        return base
    return fallback if fallback is not None and fallback != base and usable(fallback) else None
