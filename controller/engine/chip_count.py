"""The dealer's chip count of the counted wagers after the lock-out and before any card (.8(b),
643a.8(b)(1)-(2)), and the floorperson's decision on a count that does not match."""

from __future__ import annotations

from controller.engine import dealing, voiding
from controller.engine.context import StepContext
from controller.engine.inputs import FloorpersonDecision
from controller.engine.state import Phase


def counted_wagers(ctx: StepContext) -> dict[str, dict[str, int]]:
    """Counted wagers of the round's players, by spot: seat -> amount."""
    r = ctx.r
    out: dict[str, dict[str, int]] = {}
    for n in r.players:
        for spot, amount in r.seats[n].wagers.items():
            if spot in ctx.setup.counted:
                out.setdefault(spot, {})[str(n)] = amount
    return out


def chip_rule(ctx: StepContext) -> str:
    rules = [ctx.setup.counted[spot] for spot in counted_wagers(ctx)]
    return next((x for x in rules if x), None) or ctx.lock_rule()


def reconcile_or_deal(ctx: StepContext) -> None:
    counted = counted_wagers(ctx)
    if not counted:
        dealing.start_dealing(ctx)
        return
    r = ctx.r
    r.chips_accepted = sum(len(v) for v in counted.values())
    ctx.s.phase = Phase.RECONCILING
    ctx.emit(
        "chip_count.requested",
        chip_rule(ctx),
        {
            "wagers": {spot: dict(v) for spot, v in counted.items()},
            "accepted": r.chips_accepted,
            "remedy": "the dealer counts the value chips in front of the table inventory container and enters "
            "the count; no card is dealt until it equals the number accepted",
        },
    )


def chips_counted(ctx: StepContext, count: int) -> None:
    r = ctx.r
    if "chip_count" in ctx.s.blocks:
        ctx.ignored("chip count", "the count is with the floorperson: awaiting a decision")
        return
    r.chips_entered.append(count)
    if count == r.chips_accepted:
        ctx.emit("chip_count.reconciled", chip_rule(ctx), {"entered": count, "accepted": r.chips_accepted})
        dealing.start_dealing(ctx)
        return
    ctx.block(
        "chip_count",
        f"chip count {count} does not equal the {r.chips_accepted} counted wagers accepted: a floorperson must decide",
    )
    ctx.emit(
        "chip_count.mismatch",
        chip_rule(ctx),
        {
            "entered": count,
            "accepted": r.chips_accepted,
            "counts": list(r.chips_entered),
            "remedy": "no card is dealt until a floorperson decides (proceed, recount or void)",
        },
    )


def chip_decision(ctx: StepContext, d: FloorpersonDecision) -> None:
    if ctx.s.phase is not Phase.RECONCILING or "chip_count" not in ctx.s.blocks:
        ctx.ignored("floorperson decision", "no chip count is awaiting a decision")
        return
    if d.decision not in ("proceed", "recount", "void"):
        ctx.refused("floorperson decision", f"{d.decision!r}: decide proceed, recount or void", None)
        return
    r = ctx.r
    ctx.s.blocks.pop("chip_count")
    ctx.emit(
        "chip_count.resolved",
        chip_rule(ctx),
        {
            "decision": d.decision,
            "floorperson": d.floorperson,
            "note": d.note,
            "entered": list(r.chips_entered),
            "accepted": r.chips_accepted,
        },
    )
    if d.decision == "proceed":
        dealing.start_dealing(ctx)
    elif d.decision == "recount":
        ctx.emit(
            "chip_count.requested",
            chip_rule(ctx),
            {"wagers": counted_wagers(ctx), "accepted": r.chips_accepted, "recount": True},
        )
    else:
        voiding.void(
            ctx,
            chip_rule(ctx),
            "the floorperson voided the round over the chip count "
            f"({r.chips_entered[-1]} counted, {r.chips_accepted} accepted)",
        )
