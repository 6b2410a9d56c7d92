"""Progressive meters as a pure model: integer micro-cents, every change an event that replays exactly.

Units. A rate is integer parts per million of the wager (controller.progressive.parameters), so a wager of
`w` cents at `r` ppm contributes exactly `w * r` micro-cents (1 cent = 1,000,000 micro-cents). Each level
keeps its accumulators in micro-cents; the display shows the whole cents (`display_micro // MICRO`) and the
fraction of a cent below it stays in the accumulator for the next wager, so nothing is rounded and nothing
is lost, however small the rate or the wager.

Every operation decides what happens, emits the events that say so (controller.core.events.DomainEvent, type
`meter.*`, each with the subsection it follows and the change to every accumulator it touches) and returns
the state those events produce: `apply` is the only code that changes a meter, so replaying the journaled
events through `apply` rebuilds the meters exactly, and `seq` in each event catches a gap or a repeat.

Balance (checked by `balance_problem`, and by tests across random rounds, hits and voids):
    contributed + house_funded == display + reserve + overflow + paid + removed      (micro-cents)
i.e. the contributions equal the display's growth over what the house seeded, plus the reserve, plus what
was paid, plus the overflow, plus what an audited reset took off the display. See docs/progressive.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from controller.core.events import DomainEvent
from controller.progressive.parameters import LevelParameters, TableProgressives, ppm_to_percent

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
    produce other meters.
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


class _Batch:
    """Emits events one at a time and applies each at once, so later decisions see its effect."""

    def __init__(self, meters: Meters) -> None:
        self.meters = meters
        self.events: list[DomainEvent] = []

    def emit(
        self,
        type_: str,
        rule: str | None,
        round_id: str | None,
        level: str | None,
        delta: Mapping[str, int] | None = None,
        **facts: Any,
    ) -> None:
        payload: dict[str, Any] = {"seq": self.meters.seq + 1}
        if level is not None:
            shown = self.meters.levels[level].display_cents if level in self.meters.levels else 0
            payload.update(level=level, delta={k: v for k, v in (delta or {}).items() if v}, meter_before_cents=shown)
        payload.update(facts)
        event = DomainEvent(type_, rule, payload, round_id)
        after = apply(self.meters, event)
        if level is not None:
            payload["meter_after_cents"] = after.levels[level].display_cents
        self.meters = after
        self.events.append(event)


# --- operations --------------------------------------------------------------------------------------------------


def seed_missing(meters: Meters, params: TableProgressives) -> tuple[Meters, list[DomainEvent]]:
    """Seed every configured level that has no meters yet (a new table, or a meter the config added)."""
    batch = _Batch(meters)
    for lv in params.levels.values():
        if lv.level not in meters.levels:
            amount = lv.seed_cents * MICRO
            batch.emit(
                "meter.seeded",
                lv.rule,
                None,
                lv.level,
                {"display_micro": amount, "house_funded_micro": amount},
                seed_cents=lv.seed_cents,
            )
    return batch.meters, batch.events


def contribute(
    meters: Meters, params: TableProgressives, wager: str, amount_cents: int, *, seat: int, round_id: str
) -> tuple[Meters, list[DomainEvent]]:
    """An accepted progressive wager adds its incrementation rates to every level it feeds.

    Primary goes to the display up to its limit and to the overflow above it; reserve goes to the reserve.
    """
    if isinstance(amount_cents, bool) or not isinstance(amount_cents, int) or amount_cents <= 0:
        raise MeterError(f"a {wager} wager of {amount_cents!r} cents at seat {seat}: give whole cents above 0")
    progressive = params.for_wager(wager)
    for lv in progressive.levels:
        meters.level(lv.level)  # every level seeded, or nothing happens
    batch = _Batch(meters)
    for lv in progressive.levels:
        current = batch.meters.level(lv.level)
        primary, reserve = amount_cents * lv.primary_ppm, amount_cents * lv.reserve_ppm
        to_display = primary
        if lv.limit_cents is not None:
            to_display = min(primary, max(0, lv.limit_cents * MICRO - current.display_micro))
        batch.emit(
            "meter.contributed",
            lv.rule,
            round_id,
            lv.level,
            {
                "display_micro": to_display,
                "overflow_micro": primary - to_display,
                "reserve_micro": reserve,
                "contributed_micro": primary + reserve,
                "in_count": 1,
                "in_cents": amount_cents,
            },
            seat=seat,
            wager=wager,
            wager_cents=amount_cents,
            primary_percent=ppm_to_percent(lv.primary_ppm),
            reserve_percent=ppm_to_percent(lv.reserve_ppm),
        )
    return batch.meters, batch.events


def hit(
    meters: Meters,
    params: TableProgressives,
    level: str,
    award: Award,
    *,
    seat: int,
    round_id: str | None,
    rule: str,
    paid_by: PaidBy = "attendant",
) -> tuple[Meters, int, list[DomainEvent]]:
    """Pay an award from the meter as it stands now (the player's turn, 643a.12(d)(4), 655a.12(c)(4)).

    Returns the meters, the amount paid in cents and the events. The meter drops by exactly what was paid; a
    100 % award then reseeds it, so the next hit of the level, even in the same round, sees the new meter.
    `rule` is the subsection that pays it (e.g. 655a.11(i)(1)(iv)); `paid_by` picks the 605a.7(a)(2) or (a)(3)
    meter.
    """
    lv = params.level(level)
    current = meters.level(level)
    before = current.display_cents
    if isinstance(award, PercentOfMeter):
        paid = before * award.percent // 100  # a table cannot pay a fraction of a cent
        described: dict[str, Any] = {"percent": award.percent}
    else:
        if award.cents > before:
            raise MeterError(
                f"{level}: a fixed award of {award.cents} cents is more than the meter's {before}: "
                "the meter cannot pay it; check the paytable"
            )
        paid = award.cents
        described = {"fixed_cents": award.cents}
    batch = _Batch(meters)
    batch.emit(
        "meter.hit",
        rule,
        round_id,
        level,
        {"display_micro": -paid * MICRO, "hits": 1, "wins_cents": paid, f"paid_by_{paid_by}_cents": paid},
        seat=seat,
        paid_cents=paid,
        paid_by=paid_by,
        **described,
    )
    if isinstance(award, PercentOfMeter) and award.percent == 100:
        _reseed(batch, lv, round_id)
    return batch.meters, paid, batch.events


def _reseed(batch: _Batch, lv: LevelParameters, round_id: str | None) -> None:
    """Restart the display: the whole reserve moves in (as far as the limit lets it) and the house tops it up
    to the reseed amount if the reserve falls short. The fraction of a cent the last award could not pay stays
    and lowers the house's share."""
    current = batch.meters.level(lv.level)
    room = current.reserve_micro
    if lv.limit_cents is not None:
        room = max(0, lv.limit_cents * MICRO - current.display_micro)
    take = min(current.reserve_micro, room)
    house = max(0, lv.reseed_cents * MICRO - current.display_micro - take)
    batch.emit(
        "meter.reseeded",
        lv.rule,
        round_id,
        lv.level,
        {"display_micro": take + house, "reserve_micro": -take, "house_funded_micro": house, "cycle": 1},
        reseed_cents=lv.reseed_cents,
        from_reserve_micro=take,
        house_funded_micro=house,
    )


def reset(
    meters: Meters,
    params: TableProgressives,
    level: str,
    *,
    reason: str,
    authorised_by: str,
    rule: str = "605a.7(a)(5)",
) -> tuple[Meters, list[DomainEvent]]:
    """An audited reset without a hit (the reset key of 605a.7(a)(5)): the display is taken off into the
    `removed` meter, never lost, and the level is reseeded. Needs a reason and who authorised it."""
    if not reason.strip() or not authorised_by.strip():
        raise MeterError(f"resetting {level}: give the reason and who authorised it; a reset is audited")
    lv = params.level(level)
    current = meters.level(level)
    batch = _Batch(meters)
    batch.emit(
        "meter.reset",
        rule,
        None,
        level,
        {"display_micro": -current.display_micro, "removed_micro": current.display_micro},
        reason=reason,
        authorised_by=authorised_by,
        removed_micro=current.display_micro,
    )
    _reseed(batch, lv, None)
    return batch.meters, batch.events


def void_round(meters: Meters, round_id: str, *, rule: str) -> tuple[Meters, list[DomainEvent]]:
    """Take back exactly what the round's wagers contributed (its wagers are returned), level by level.

    A round with no open contributions gives no events. Refused if a level has paid a hit or been reseeded
    since, because part of those contributions has then been paid out and cannot be taken back.
    """
    entries = meters.open_rounds.get(round_id, ())
    by_level: dict[str, list[OpenContribution]] = {}
    for entry in entries:
        by_level.setdefault(entry.level, []).append(entry)
    for level, contributions in by_level.items():
        now = meters.level(level)
        if any(c.cycle != now.cycle or c.hits != now.hits for c in contributions):
            raise MeterError(
                f"round {round_id}: the {level} meter has paid a hit since its wagers contributed, so "
                "the contributions cannot be taken back; settle the round or have a floorperson "
                "resolve it"
            )
    batch = _Batch(meters)
    for level, contributions in by_level.items():
        total: dict[str, int] = {}
        for c in contributions:
            for name, value in c.delta.items():
                total[name] = total.get(name, 0) - value
        total["reversed_count"] = len(contributions)
        total["reversed_cents"] = -total.get("in_cents", 0)
        batch.emit("meter.contributions_reversed", rule, round_id, level, total, wagers=len(contributions))
    return batch.meters, batch.events


def close_round(meters: Meters, round_id: str) -> tuple[Meters, list[DomainEvent]]:
    """The round is settled: its contributions are final and can no longer be reversed."""
    if round_id not in meters.open_rounds:
        return meters, []
    batch = _Batch(meters)
    batch.emit("meter.round_closed", None, round_id, None)
    return batch.meters, batch.events


def problems(meters: Meters, params: TableProgressives) -> list[str]:
    """What is wrong between the meters and the configured levels, and within the meters; empty when sound.

    A meter the config no longer has still holds money owed to players, so it is reported, never dropped.
    """
    out = meters.balance_problems()
    configured = params.levels
    for name, lv in meters.levels.items():
        if name not in configured:
            out.append(
                f"meter {name!r} holds {lv.display_cents} cents but the config no longer has it: restore "
                "it, or reset it (audited) before removing it"
            )
        elif (limit := configured[name].limit_cents) is not None and lv.display_cents > limit:
            out.append(f"meter {name!r} shows {lv.display_cents} cents, above its limit of {limit}")
    for name in configured:
        if name not in meters.levels:
            out.append(f"meter {name!r} is configured but not seeded: seed it (seed_missing)")
    return out


# --- plain data, for the codec ----------------------------------------------------------------------------------


def as_data(meters: Meters) -> dict[str, Any]:
    """JSON-ready: every level's counters, the open rounds, seq."""
    return {
        "seq": meters.seq,
        "levels": {
            name: {f.name: getattr(lv, f.name) for f in fields(lv) if f.name != "level"}
            for name, lv in sorted(meters.levels.items())
        },
        "open_rounds": {
            rid: [{"level": c.level, "cycle": c.cycle, "hits": c.hits, "delta": dict(c.delta)} for c in entries]
            for rid, entries in sorted(meters.open_rounds.items())
        },
    }


def from_data(data: Mapping[str, Any]) -> Meters:
    """The inverse of as_data; MeterError naming the first field that is not what as_data writes."""

    def whole(value: object, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise MeterError(f"{where}: {value!r} is not a whole number >= 0")
        return value

    if not isinstance(data, Mapping) or set(data) != {"seq", "levels", "open_rounds"}:
        raise MeterError(
            f"meter state must have exactly seq, levels and open_rounds, got {sorted(data)!r}"
            if isinstance(data, Mapping)
            else f"meter state is not an object: {data!r}"
        )
    levels_in, rounds_in = data["levels"], data["open_rounds"]
    if not isinstance(levels_in, Mapping) or not isinstance(rounds_in, Mapping):
        raise MeterError("levels and open_rounds must be objects")
    levels: dict[str, LevelMeters] = {}
    for name, counters in levels_in.items():
        if not isinstance(counters, Mapping) or set(counters) != set(COUNTERS):
            raise MeterError(f"levels.{name}: must have exactly the counters {', '.join(COUNTERS)}")
        levels[name] = LevelMeters(name, **{k: whole(counters[k], f"levels.{name}.{k}") for k in COUNTERS})
    rounds: dict[str, tuple[OpenContribution, ...]] = {}
    for rid, entries in rounds_in.items():
        if not isinstance(entries, Sequence) or not entries:
            raise MeterError(f"open_rounds.{rid}: must be a non-empty list")
        parsed = []
        for i, e in enumerate(entries):
            where = f"open_rounds.{rid}[{i}]"
            if not isinstance(e, Mapping) or set(e) != {"level", "cycle", "hits", "delta"} or e["level"] not in levels:
                raise MeterError(f"{where}: must have level (a known meter), cycle, hits and delta")
            delta = e["delta"]
            if not isinstance(delta, Mapping) or set(delta) - set(COUNTERS):
                raise MeterError(f"{where}.delta: must map counters to whole numbers")
            parsed.append(
                OpenContribution(
                    e["level"],
                    whole(e["cycle"], f"{where}.cycle"),
                    whole(e["hits"], f"{where}.hits"),
                    {k: whole(v, f"{where}.delta.{k}") for k, v in delta.items()},
                )
            )
        rounds[str(rid)] = tuple(parsed)
    return Meters(levels, rounds, whole(data["seq"], "seq"))
