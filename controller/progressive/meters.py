"""What a table does to its progressive meters: seed, contribute, pay a hit, reseed, reset, void, close a round.

Every operation decides what happens, emits the events that say so (type `meter.*`, each with the subsection it
follows and the change to every accumulator it touches) and returns the state those events produce, by
applying each event to the model as it is emitted (controller.progressive.model.apply): what an operation
returns is exactly what replaying its events gives. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.core.events import DomainEvent
from controller.progressive.model import (
    MICRO,
    Award,
    MeterError,
    Meters,
    OpenContribution,
    PaidBy,
    PercentOfMeter,
    apply,
)
from controller.progressive.parameters import LevelParameters, TableProgressives, ppm_to_percent


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
