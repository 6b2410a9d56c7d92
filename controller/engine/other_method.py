"""Before "any other method of shuffling or dealing may be utilized" (.13(g)) the device is "covered or [has] a sign
indicating that [it] is out of order" (`MarkOutOfOrder`): the mark and its taking back, the method that takes over,
and the shoe holds that follow the method the round deals by (`ctx.method`), not the one configured: a hand-dealt
table's fallback shoe, faulted or offline while the table deals by hand, is kept held without blocking, and blocks
the round once the table turns to it. A device's own faults and holds are controller/engine/device_holds.py."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from controller.engine import betting, boundary, covered_reports, device_holds
from controller.engine.context import StepContext, usable_method
from controller.engine.covered_reports import SHOE_FAULTS, SHOE_STUCK
from controller.engine.device_holds import DEVICES, SHOE_METHODS, SHOE_ROUND, takeover, unusable, waits
from controller.engine.inputs import MarkOutOfOrder
from controller.engine.state import HeldFault, Phase
from drivers.interfaces import DeviceFault

# Before "no more bets" no dealing procedure has begun: a mark then turns the round itself to the other method.
BEFORE_THE_LOCK = (Phase.CLOSED, Phase.OPENING, Phase.SHUFFLING, Phase.BETTING, Phase.BLOCKED)
COVERED = "covered or has a sign indicating that it is out of order placed on the device"  # .13(g)'s words


def device_fault(ctx: StepContext, inp: DeviceFault) -> None:
    """A device's fault (device_holds.device_fault); a shoe's while the table deals by hand is kept if the table's
    fallback shoe would be held for it once dealing from it."""
    device_holds.device_fault(ctx, inp)
    if device_holds.fallback_fault(ctx, inp) and fallback_holds(ctx, inp.code):
        remember_fault(ctx, inp, device_holds.fault_why(inp))


def device_offline(ctx: StepContext, dev: str, why: str) -> None:
    """A shuffler or shoe that stopped answering. Dealing from the hand no round asks the shoe for anything, so
    nothing waits for it; but the table may turn to it (the shuffler marked out of order), and the engine knows a
    device's state only from what it said last: the hold is kept, blocking nothing, so that turning to the shoe
    blocks the round before betting (`hold_follows_method`) instead of voiding it at its first card. It lifts when
    the shoe identifies again (`device_back`) or is marked out of order. Said as the fallback's fault is
    (`remember_fault`), so `device/shoe` reads `unusable` now as it will after a restart (`still_offline`)."""
    if dev == "shoe" and ctx.method == "hand" and dev not in ctx.s.out_of_order:
        if ctx.opts.fallback_dealing_method in SHOE_METHODS:  # else the table never turns to a shoe
            ctx.s.devices_down[dev] = why
            held_by_hand(ctx, why, "identifies again")
        return
    device_holds.device_down(ctx, dev, why)


def fallback_holds(ctx: StepContext, code: str) -> bool:
    """Would the hand-dealt table's fallback shoe be held for `code` once the table deals from it: a malfunction (or
    any fault outside .13(f)) of either shoe, an automated shoe's jam, stop or misfeed. Not a manual shoe's jam
    (recorded only, docs/rules.md), not "empty" (the next shuffle refills it), nothing with no fallback shoe."""
    fallback = ctx.opts.fallback_dealing_method
    if fallback not in SHOE_METHODS or "shoe" in ctx.s.out_of_order:
        return False
    return code not in SHOE_FAULTS or (fallback == "automated_shoe" and code in SHOE_STUCK)


def remember_fault(ctx: StepContext, inp: DeviceFault, why: str) -> None:
    """A fault of the fallback shoe while the table deals by hand: held as `fault_down` would hold it, but blocking
    nothing (no round asks the shoe for a card), so that turning to the shoe (`hold_follows_method`) blocks the round
    before betting instead of voiding it at its first dispense with its wagers taken. Said once per fault."""
    held = ctx.s.device_faults.get("shoe")
    if held is not None and inp.code in held.uncleared:
        return
    ctx.s.devices_down["shoe"] = why
    ctx.s.device_faults["shoe"] = (
        HeldFault(inp.code, inp.detail, ctx.s.now, ctx.s.rounds_played, codes=(inp.code,))
        if held is None
        else replace(held, codes=(*held.uncleared, inp.code))
    )
    held_by_hand(ctx, why, "says the fault is cleared, or is cleared and restarted (it identifies again)")


def held_by_hand(ctx: StepContext, why: str, until: str) -> None:
    """Say the fallback shoe's hold while the table deals by hand: it blocks nothing, but the engine stopped using
    the shoe (docs/mqtt.md, `unusable`). A round dealt by hand after the shuffler was covered in it (its method pinned)
    is the last: the next round deals from the shoe, so it waits for it (the block waits for the round's end)."""
    if ctx.table_method in SHOE_METHODS:
        if "device:shoe" not in ctx.s.blocks:
            unusable(ctx, "shoe", why)
        return
    ctx.emit(
        "device.unusable",
        ctx.rule("13(g)"),
        {
            "device": "shoe",
            "reason": why,
            "phase": str(ctx.s.phase),
            "remedy": f"{waits(ctx, 'shoe')} the shoe {until}, or is marked out of order; should the table turn to "
            "it first (the shuffler marked out of order), no new round until then",
        },
    )


def order_follows_method(ctx: StepContext, by: str) -> None:
    """The dealing method changed: a round in betting that the table can no longer deal waits (`no_order`); dealing by
    another method than the hand again (the shoe back in service), the `shuffle_order` block goes."""
    if ctx.table_method != "hand":
        boundary.unblock(ctx, "shuffle_order", f"{by}: the table no longer deals from the hand")
        return
    remedy = no_order(ctx)
    if remedy is not None:
        ctx.block("shuffle_order", remedy)
        boundary.pause_empty_betting(ctx)  # nothing on the layout: betting closes now


def no_order(ctx: StepContext) -> str | None:
    """Turned to the hand in betting (the shoe covered), the round's deck was shuffled for the shoe: a shuffler that
    gives no card order leaves nothing this engine can lay the hand's layout from (.9(a)(1)). The table knows it before
    "no more bets" (.9(a)(3): "prior to dealing any cards"), so that is refused (`shuffle_order` stops dealing) instead
    of locking wagers for a round voided at its deal; the wagers stand (docs/rules.md). The remedy, or None."""
    r = ctx.s.round
    if ctx.table_method != "hand" or r is None or r.method is not None or ctx.s.phase is not Phase.BETTING:
        return None
    if len(ctx.s.deck_order) == 52 or "shuffle_order" in ctx.s.blocks:
        return None
    return (
        f"dealing this deck from the hand needs the automated shuffler's card order ({ctx.rule('9(a)(1)')}) and its "
        f"shuffle gave none: {order_remedy(ctx)}"
    )


def order_remedy(ctx: StepContext) -> str:
    """What lifts `shuffle_order`: either way on, each with the rule it is taken under."""
    return (
        f"put the shoe back in service ({ctx.rule('13(g)')}; the deck is in it, the round is dealt from it with its "
        f"wagers as they stand), or a floorperson directs a reshuffle ({ctx.rule('5(a)')}) on a card-reading "
        "shuffler, the wagers on the layout returned"
    )


def refusal_pending(ctx: StepContext) -> dict[str, Any] | None:
    """In betting, the refusal "no more bets" meets until a block that stops dealing is lifted (its rule, reason and
    blocks, as `no_more_bets.refused` says them) and what lifts it: a restart says it (`table.recovered`'s
    `no_more_bets_refused`), so the dealer and the floor learn it then, not at the dealer's next press. Whatever the
    covered device says at its first report after the restart, the mark stands until a signed back_in_service."""
    stopped = betting.dealing_stopped(ctx) if ctx.s.phase is Phase.BETTING else None
    if stopped is None:
        return None
    rule, payload = stopped
    lifts = [order_remedy(ctx) if k == "shuffle_order" else ctx.s.blocks[k] for k in payload["blocks"]]
    return {"rule": rule, **payload, "remedy": "; ".join(lifts)}


def method_changed(ctx: StepContext, by: str) -> None:
    hold_follows_method(ctx, by)
    order_follows_method(ctx, by)


def hold_follows_method(ctx: StepContext, by: str) -> None:
    """The dealing method changed (the shuffler marked out of order or back in service): a held shoe blocks only a
    round that would deal from it. Dealing by hand again, its block is cleared but the hold stands (`devices_down`,
    `device_faults`: its device status stays unusable) until it is lifted the usual ways; should the table turn to
    the shoe again, the block is back before any round is dealt from it."""
    why = ctx.s.devices_down.get("shoe")
    if why is None:
        return
    # The next round's method: a round past "no more bets" keeps its own (`RoundState.method`), so a shoe held while
    # it deals by hand blocks the next round only (a block raised in a round waits for its end).
    if ctx.table_method in SHOE_METHODS:
        if "device:shoe" not in ctx.s.blocks:
            unusable(ctx, "shoe", why)
    else:
        boundary.unblock(ctx, "device:shoe", f"{by}: the table deals by hand; the shoe stays held ({why})")


def mark_out_of_order(ctx: StepContext, inp: MarkOutOfOrder) -> None:
    dev = inp.device
    if dev not in DEVICES:
        ctx.ignored(f"out of order {dev!r}", "only the shuffler or the shoe is marked out of order")
        return
    if not inp.out:
        back_in_service(ctx, dev)
        return
    if dev in ctx.s.out_of_order:
        ctx.ignored(f"out of order {dev}", "already marked out of order")
        return
    takes_over = takeover(ctx, dev)
    if ctx.s.round is not None and ctx.s.phase not in BEFORE_THE_LOCK:
        # Past "no more bets" the round is dealt by the procedure it was announced under (.8, .9 or .10): the mark
        # turns the next round to another method, not this one (docs/rules.md).
        ctx.r.method = ctx.method
    # The round's own shoe covered before its last card: it "fails to deal all cards during a round of play" (.13(f)).
    was_dealing = dev == "shoe" and ctx.s.phase in SHOE_ROUND and ctx.method in SHOE_METHODS
    was_shuffling = dev == "shuffler" and ctx.s.phase is Phase.SHUFFLING
    ctx.s.out_of_order[dev] = takes_over
    # .13(g) names nobody: the device "must be covered or have a sign indicating that [it] is out of order placed on
    # the device"; the mark is a signed command (mark_out_of_order), whose signer the command's events name.
    down = ctx.s.devices_down.pop(dev, None)
    reason = down or COVERED
    # Covered: its fault is no longer what stops the table, but it stays the device's until it says otherwise.
    covered_reports.at_cover(ctx, dev, down, ctx.s.device_faults.pop(dev, None))
    if dev == "shuffler":
        ctx.s.failed_shuffles = 0
    # What the table deals by now: none (null) while `no_method` stands, not the configured method it cannot use.
    usable = usable_method(ctx.setup.method, ctx.opts.fallback_dealing_method, ctx.s.out_of_order)
    payload: dict[str, str | None] = {
        "device": dev,
        "reason": reason,
        "takes_over": takes_over,
        "dealing_method": usable,
        "decks": "one deck" if dev == "shuffler" and ctx.opts.decks == "two_decks" else None,
    }
    if ctx.s.round is not None and ctx.s.round.method is not None:
        # Past "no more bets": what the dealer does with the round in play, which `dealing_method` (the next round's)
        # does not say.
        payload["this_round"] = "void" if was_dealing else ctx.s.round.method
    waits = no_order(ctx)  # in betting: what the round waits for before "no more bets"
    payload["remedy"] = f'"no more bets" is refused until then: {waits}' if waits else None
    ctx.emit("device.out_of_order", ctx.rule("13(g)"), {k: v for k, v in payload.items() if k != "remedy" or v})
    if usable is None:
        ctx.block("no_method", no_method(ctx, dev))
    ctx.s.blocks.pop(f"device:{dev}", None)
    method_changed(ctx, f"{dev} out of order")
    if was_dealing:
        device_holds.shoe_void(ctx, f"the dealing shoe was marked out of order in {ctx.s.phase}: {COVERED}")
    elif was_shuffling:
        boundary.start_shuffle(ctx)  # the shuffle starts over by hand
    elif ctx.s.round is None and ctx.s.phase in (Phase.BLOCKED, Phase.OPENING):
        if ctx.s.blocks:
            ctx.enter_blocked()
        else:
            ctx.s.block_reason = None
            boundary.start_shuffle(ctx)


def back_in_service(ctx: StepContext, dev: str) -> None:
    if dev not in ctx.s.out_of_order:
        ctx.ignored(f"back in service {dev}", "it is not marked out of order")
    elif dev in ctx.s.devices_down:
        # The stand-in's hold is on the shoe's port too: the automated shoe is back once the port's device answers.
        said = f"the {device_holds.named(ctx, dev)} is {ctx.s.devices_down[dev]}"
        ctx.refused(f"back in service {dev}", said, ctx.rule("13(g)"))
    elif (unfit := covered_reports.refusal(ctx, dev)) is not None:
        why, status = unfit
        payload = {"input": f"back in service {dev}", "reason": why, "phase": str(ctx.s.phase)}
        ctx.emit("input.refused", ctx.rule("13(g)"), {**payload, "device": dev, "status": status})
    elif ctx.s.phase not in (Phase.BLOCKED, Phase.OPENING, Phase.BETTING, Phase.CLOSED):
        ctx.refused(f"back in service {dev}", "only between rounds", ctx.rule("13(g)"))
    else:
        del ctx.s.out_of_order[dev]
        ctx.s.covered_reports.pop(dev, None)
        usable = usable_method(ctx.setup.method, ctx.opts.fallback_dealing_method, ctx.s.out_of_order)
        ctx.emit("device.back_in_service", ctx.rule("13(g)"), {"device": dev, "dealing_method": usable})
        if usable is not None:
            boundary.unblock(ctx, "no_method", f"{dev} back in service")  # else the other device still stops it
        method_changed(ctx, f"{dev} back in service")


def marks_restored(ctx: StepContext) -> None:
    """At a restart: each mark kept with the state is said again, before any restored fault. The device statuses
    (`device/<id>`) are derived from this boot's events only, so without it a covered shoe read `online` at its next
    identification, and `unusable` when the manual shoe standing in for it was held, though still covered."""
    usable = usable_method(ctx.setup.method, ctx.opts.fallback_dealing_method, ctx.s.out_of_order)
    covered_reports.restarted(ctx)  # a fault it reported while covered outlasts its start-up identification
    for dev, takes_over in sorted(ctx.s.out_of_order.items()):
        payload: dict[str, Any] = {"device": dev, "reason": COVERED, "takes_over": takes_over, "dealing_method": usable}
        if (unfit := covered_reports.refusal(ctx, dev)) is not None:
            # What it said last, kept with the state: a back_in_service is refused until it reports healthy.
            payload |= {"not_in_service_until": unfit[0], "status": unfit[1]}
        ctx.emit("device.out_of_order", ctx.rule("13(g)"), {**payload, "restored": True})


def no_method(ctx: StepContext, dev: str) -> str:
    fallback = ctx.opts.fallback_dealing_method
    if fallback is None or fallback == ctx.setup.method:
        return f"the {dev} is out of order and no other dealing method is configured"
    # Both are configured and both devices covered: neither the method nor its fallback can deal.
    return (
        f"the {dev} is out of order and neither {ctx.setup.method} nor its fallback {fallback} can be used: "
        f"{' and '.join(f'the {d}' for d in sorted(ctx.s.out_of_order))} out of order"
    )
