"""Progressive meters as a pure model: integer micro-cents, every change an event that replays exactly.

Units. A rate is integer parts per million of the wager (controller.progressive.parameters), so a wager of
`w` cents at `r` ppm contributes exactly `w * r` micro-cents (1 cent = 1,000,000 micro-cents). Each level
keeps its accumulators in micro-cents; the display shows the whole cents (`display_micro // MICRO`) and the
fraction of a cent below it stays in the accumulator for the next wager, so nothing is rounded and nothing
is lost, however small the rate or the wager.

Every change is a `meter.*` event (controller.core.events.DomainEvent, each with the subsection it follows and
the change to every accumulator it touches), and `apply` is the only code that changes a meter: replaying the
journaled events through `apply` rebuilds the meters exactly, and `seq` in each event catches a gap or a
repeat. The operations that decide which events happen are controller.progressive.meters.

Balance (checked by `balance_problem`, and by tests across random rounds, hits and voids):
    contributed + house_funded == display + reserve + overflow + paid + removed      (micro-cents)
i.e. the contributions equal the display's growth over what the house seeded, plus the reserve, plus what
was paid, plus the overflow, plus what an audited reset took off the display. See docs/progressive.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from controller.core.events import DomainEvent

MICRO = 1_000_000  # micro-cents per cent
PaidBy = Literal["system", "attendant"]

# Accumulators of a level, all non-negative integers. The lab meters (docs/progressive.md, "Meters"):
COUNTERS = (
    "display_micro",  # the progressive meter the players see, 605a.7(a)(1)
    "reserve_micro",  # put aside at the reserve rate to fund the next reseed
    "overflow_micro",  # primary contributions that arrived while the display stood at its limit
    "contributed_micro",  # every contribution, primary and reserve (less those reversed by a void)
    "house_funded_micro",  # what the house put in: the seed, and any reseed the reserve could not cover
    "removed_micro",  # what audited resets took off the display without a hit
    "in_count",  # progressive-in count: wagers that contributed (less those reversed)
    "in_cents",  # progressive-in amount: those wagers' total
    "hits",  # awards paid from the meter
    "wins_cents",  # cumulative progressive payout, 605a.7(a)(4)
    "paid_by_system_cents",  # paid directly by the table system or a wagering terminal, 605a.7(a)(2)
    "paid_by_attendant_cents",  # paid by an attendant, 605a.7(a)(3)
    "reversed_count",  # contributions reversed by a void round
    "reversed_cents",  # the wagers they came from
    "cycle",  # reseeds so far: a void cannot reach back past one
)
# Only these events may lower the display (a hit, an audited reset, a void's reversal).
MAY_LOWER_DISPLAY = frozenset({"meter.hit", "meter.reset", "meter.contributions_reversed"})
EVENT_TYPES = frozenset(
    {
        "meter.seeded",
        "meter.contributed",
        "meter.hit",
        "meter.reseeded",
        "meter.reset",
        "meter.contributions_reversed",
        "meter.round_closed",
    }
)


class MeterError(ValueError):
    """An operation the meters refuse (the message says why and what to do); the state is unchanged."""


@dataclass(frozen=True, slots=True)
class LevelMeters:
    """One progressive level's meters (605a.7(a)): the progressive meter the players see and the lab meters."""

    level: str
    display_micro: int = 0
    reserve_micro: int = 0
    overflow_micro: int = 0
    contributed_micro: int = 0
    house_funded_micro: int = 0
    removed_micro: int = 0
    in_count: int = 0
    in_cents: int = 0
    hits: int = 0
    wins_cents: int = 0
    paid_by_system_cents: int = 0
    paid_by_attendant_cents: int = 0
    reversed_count: int = 0
    reversed_cents: int = 0
    cycle: int = 0

    @property
    def display_cents(self) -> int:
        """What the sign shows: whole cents; the fraction below stays in display_micro."""
        return self.display_micro // MICRO

    def plus(self, delta: Mapping[str, int]) -> LevelMeters:
        unknown = set(delta) - set(COUNTERS)
        if unknown:
            raise MeterError(f"{self.level}: unknown meter(s) {sorted(unknown)} in a change")
        changed = {name: getattr(self, name) + value for name, value in delta.items()}
        negative = {name: value for name, value in changed.items() if value < 0}
        if negative:
            raise MeterError(f"{self.level}: the change would take {negative} below zero")
        return replace(self, **changed)

    def balance_problem(self) -> str | None:
        """Why this level's meters do not balance, or None (module docstring, "Balance")."""
        funded = self.contributed_micro + self.house_funded_micro
        held = (
            self.display_micro + self.reserve_micro + self.overflow_micro + self.wins_cents * MICRO + self.removed_micro
        )
        if funded != held:
            return (
                f"{self.level}: contributed {self.contributed_micro} + house-funded {self.house_funded_micro} "
                f"micro-cents != display + reserve + overflow + paid + removed = {held}"
            )
        return None

    def lab_meters(self) -> dict[str, int]:
        """Every meter in whole cents (micro-cent fractions truncated), as a lab or an operator reads them."""
        out: dict[str, int] = {}
        for name in COUNTERS:
            value = getattr(self, name)
            if name.endswith("_micro"):
                out[name.removesuffix("_micro") + "_cents"] = value // MICRO
            else:
                out[name] = value
        return out


@dataclass(frozen=True, slots=True)
class OpenContribution:
    """A contribution of a round not yet settled or voided: what a void must take back, exactly."""

    level: str
    cycle: int  # the level's cycle when it was made: a reseed since then puts it out of reach
    hits: int  # the level's hit count then: a hit since then has paid part of it out
    delta: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Meters:
    """Every level's meters, the contributions of rounds still open, and the number of meter events applied."""

    levels: Mapping[str, LevelMeters] = field(default_factory=dict)
    open_rounds: Mapping[str, tuple[OpenContribution, ...]] = field(default_factory=dict)
    seq: int = 0

    def level(self, name: str) -> LevelMeters:
        found = self.levels.get(name)
        if found is None:
            raise MeterError(
                f"meter {name!r} has not been seeded; seed it first (seed_missing) or fix the name; "
                f"seeded meters: {', '.join(self.levels) or 'none'}"
            )
        return found

    def display(self) -> dict[str, int]:
        """Cents by level: what the progressive sign is to show."""
        return {name: lv.display_cents for name, lv in self.levels.items()}

    def balance_problems(self) -> list[str]:
        return [p for lv in self.levels.values() if (p := lv.balance_problem()) is not None]


@dataclass(frozen=True, slots=True)
class PercentOfMeter:
    """ "100% of meter", "10% of meter": that share of the meter at the player's turn, in whole cents."""

    percent: int

    def __post_init__(self) -> None:
        if isinstance(self.percent, bool) or not isinstance(self.percent, int) or not 1 <= self.percent <= 100:
            raise MeterError(f"an award of {self.percent!r}% of the meter: give a whole percent from 1 to 100")


@dataclass(frozen=True, slots=True)
class FixedFromMeter:
    """A fixed sum paid out of the meter (the meter drops by it)."""

    cents: int

    def __post_init__(self) -> None:
        if isinstance(self.cents, bool) or not isinstance(self.cents, int) or self.cents <= 0:
            raise MeterError(f"a fixed award of {self.cents!r} cents: give a whole number of cents above 0")


Award = PercentOfMeter | FixedFromMeter


# --- applying events ---------------------------------------------------------------------------------------------


def apply(meters: Meters, event: DomainEvent) -> Meters:
    """The meters after one `meter.*` event; other events leave them as they are.

    Refuses (MeterError) an event out of sequence, one that would take a meter below zero, and one that lowers
    a display without being a hit, a reset or a void's reversal: replaying a damaged journal must stop, not
    produce other meters (605a.7(a)(6): no alteration of the meters but those the rules allow).
    """
    if not event.type.startswith("meter."):
        return meters
    if event.type not in EVENT_TYPES:
        raise MeterError(f"unknown meter event type {event.type!r}")
    payload = event.payload
    seq = payload.get("seq")
    if seq != meters.seq + 1:
        raise MeterError(
            f"{event.type} has seq {seq!r} but the meters are at {meters.seq}: an event is missing "
            "or repeated; replay the journal in order from the last good meter state"
        )
    if event.type == "meter.round_closed":
        return replace(meters, seq=meters.seq + 1, open_rounds=_without(meters.open_rounds, event.round_id, None))
    level = payload.get("level")
    delta = payload.get("delta")
    if (
        not isinstance(level, str)
        or not isinstance(delta, Mapping)
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in delta.values())
    ):
        raise MeterError(f"{event.type} seq {seq}: needs a level and a delta of whole numbers, got {dict(payload)!r}")
    if event.type == "meter.seeded":
        if level in meters.levels:
            raise MeterError(f"meter {level!r} is already seeded; a second seed would count the house's money twice")
        before = LevelMeters(level)
    else:
        before = meters.level(level)
    if delta.get("display_micro", 0) < 0 and event.type not in MAY_LOWER_DISPLAY:
        raise MeterError(
            f"{event.type} seq {seq} lowers the {level} display: only a hit, an audited reset or a void's reversal may"
        )
    after = before.plus(delta)
    open_rounds = meters.open_rounds
    if event.type == "meter.contributed":
        if event.round_id is None:
            raise MeterError(f"meter.contributed seq {seq}: a contribution belongs to a round; give its round_id")
        entry = OpenContribution(level, before.cycle, before.hits, dict(delta))
        open_rounds = {**open_rounds, event.round_id: (*open_rounds.get(event.round_id, ()), entry)}
    elif event.type == "meter.contributions_reversed":
        open_rounds = _without(open_rounds, event.round_id, level)
    return replace(meters, seq=meters.seq + 1, levels={**meters.levels, level: after}, open_rounds=open_rounds)


def _without(
    open_rounds: Mapping[str, tuple[OpenContribution, ...]], round_id: str | None, level: str | None
) -> dict[str, tuple[OpenContribution, ...]]:
    out = dict(open_rounds)
    if round_id is None or round_id not in out:
        return out
    kept = tuple(c for c in out[round_id] if level is not None and c.level != level)
    if kept:
        out[round_id] = kept
    else:
        del out[round_id]
    return out


def replay(events: Iterable[DomainEvent], start: Meters | None = None) -> Meters:
    meters = start or Meters()
    for event in events:
        meters = apply(meters, event)
    return meters
