"""Table limits per wager: the operator posts a minimum and a maximum for each wager the table takes before "no
more bets" (the layout's or the sign's inscriptions, e.g. 683a.2(b)(4)); the chapters' texts fix none.

A [game] table names them by wager under `wager_limits`; a wager it leaves out, or a bound it leaves out, takes
the Ante's (the main wager's) limits. The round engine refuses a wager outside its limits when it is placed, and
`tablectl settle` refuses a round record holding one, so a dispute is settled as the table would have taken it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field

from controller.core.money import MAX_WAGER_CENTS, WAGER_BOUND, Cents, fmt
from controller.core.settlement import SettlementError
from controller.engine.spec import Offer


class WagerLimit(BaseModel):
    """One wager's posted limits in cents; a bound left out is the Ante's."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    min_cents: int | None = Field(
        None, gt=0, le=MAX_WAGER_CENTS, description=f"the least the wager may be, in cents; {WAGER_BOUND}"
    )
    max_cents: int | None = Field(
        None, gt=0, le=MAX_WAGER_CENTS, description=f"the most the wager may be, in cents; {WAGER_BOUND}"
    )


Limits = tuple[Cents, Cents]


def resolve(limits: Mapping[str, WagerLimit], wager: str, default: Limits) -> Limits:
    """The wager's (min, max): its own bounds where set, the default's (the Ante's) for the others."""
    own = limits.get(wager)
    if own is None:
        return default
    return (own.min_cents or default[0], own.max_cents or default[1])


def limits_problem(
    limits: Mapping[str, WagerLimit], offered: Iterable[str], default: Mapping[str, Limits] | Limits
) -> str | None:
    """Why `wager_limits` cannot stand (a wager not offered, a minimum above its maximum), naming the fix; or None.

    `default` is the Ante's limits, or per wager the limits a wager falls back on."""
    names = list(offered)
    for wager, own in limits.items():
        if wager not in names:
            return (
                f"wager_limits.{wager}: this table does not offer the {wager} wager; offer it, or remove "
                f"wager_limits.{wager} (the wagers offered are {', '.join(names) or 'none'})"
            )
        base = default[wager] if isinstance(default, Mapping) else default
        lo, hi = resolve(limits, wager, base)
        if lo > hi:
            missing = "" if own.min_cents and own.max_cents else " (a bound left out is the Ante's)"
            return (
                f"wager_limits.{wager}: the minimum {lo} is above the maximum {hi}{missing}: give "
                f"min_cents <= max_cents"
            )
    return None


def check_offered_limits(offers: Iterable[Offer], seats: Iterable[tuple[str, Mapping[str, Cents]]]) -> None:
    """A round record's wagers within the table's posted limits (`seats`: where each seat is, its wagers), as the
    live table takes them; SettlementError naming the seat, the wager and the limits."""
    by_spot = {o.spot: o for o in offers}
    for where, wagers in seats:
        for wager, amount in wagers.items():
            offer = by_spot.get(wager)
            if offer is None or not amount or offer.min_cents <= amount <= offer.max_cents:
                continue
            raise SettlementError(
                f"{where}.wagers.{wager} = {amount}: outside the table's limits {fmt(offer.min_cents)} to "
                f"{fmt(offer.max_cents)} for this wager ({offer.rule}), which the table refuses when it is placed: "
                f"correct the amount, or the config's limits (wager_limits.{wager})"
            )
