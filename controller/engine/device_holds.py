"""Device holds: a shuffler or shoe that faults (.13(e), (f), and the foreign card of .13(c)), goes offline or
malfunctions "and cannot be used" is held (.13(g)) until it says the fault is cleared, identifies again or is
"covered or [has] a sign indicating that [it] is out of order"; then the other method of shuffling or dealing takes
over (the mark, and the holds that follow the method in use: controller/engine/other_method.py). The card
irregularities are controller/engine/irregularities.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from controller.engine import boundary, covered_reports, voiding
from controller.engine.context import StepContext, usable_method
from controller.engine.covered_reports import SHOE_FAULTS, SHOE_STUCK, SHUFFLER_FAULTS
from controller.engine.state import HeldFault, Phase
from drivers.interfaces import DeviceFault, DeviceFaultCleared

DEVICES = ("shuffler", "shoe")  # the devices .13(g) has marked out of order
SHOE_METHODS = ("automated_shoe", "manual_shoe")
# The round is in play and its cards are to come from the shoe: "no more bets" locked the wagers (LOCKING), the
# counted chips may be awaited (RECONCILING), then the deal. A shoe that cannot deal in any of them voids the round
# (.13(f), docs/rules.md): nothing would bring its cards.
SHOE_ROUND = (Phase.LOCKING, Phase.RECONCILING, Phase.DEALING)


def device_fault(ctx: StepContext, inp: DeviceFault) -> None:
    ctx.emit("device.fault", None, {"device_id": inp.device_id, "code": inp.code, "detail": inp.detail})
    dev = inp.device_id
    if covered(ctx, dev):
        covered_reports.fault(ctx, dev, inp.code, inp.detail)  # holds nothing; kept for its back_in_service
        return
    why = fault_why(inp)
    if fallback_fault(ctx, inp):
        return  # the fallback shoe's hold: controller/engine/other_method.py
    if dev == "shuffler" and inp.code in SHUFFLER_FAULTS:
        if ctx.s.phase is Phase.SHUFFLING:
            shuffle_failed(ctx, inp, why)
        else:
            # No shuffle to do again (.13(e)): the next one would be asked of a jammed shuffler, so it waits.
            fault_down(ctx, inp, why)
    elif dev == "shoe" and inp.code in SHOE_FAULTS:
        if ctx.s.phase in SHOE_ROUND and ctx.method == "automated_shoe":
            if inp.code in SHOE_STUCK:
                # A jam outlasts the round it voids, whether the shoe found it before its first card or at a
                # dispense: still jammed, it would void the next round at its first dispense with its wagers taken,
                # so the next round waits for it (as between rounds); device_down voids this one.
                fault_down(ctx, inp, why)
            if ctx.s.phase in SHOE_ROUND:  # not voided above: "empty" is refilled by the void's reshuffle, not held
                shoe_void(ctx, f"the automated dealing shoe reported {inp.code}: {inp.detail}")
        elif ctx.method == "automated_shoe" and inp.code in SHOE_STUCK:
            # Reported while no round is being dealt: .13(f) voids nothing, but betting must not open on a shoe
            # whose first dispense would void the round with its wagers taken.
            fault_down(ctx, inp, why)
    elif dev == "shoe" and inp.code == "foreign_card":
        foreign_card(ctx, inp)
    elif dev in DEVICES:
        # Any other fault (malfunction, failed command, no device): it cannot be used (.13(g)).
        fault_down(ctx, inp, why)


def foreign_card(ctx: StepContext, inp: DeviceFault) -> None:
    """A card that is not of the inspected deck, read by the shoe dealing the round: the hands cannot stand, as with
    a deck that fails its check (.13(c)). Read by a shoe no round is dealt from (the table deals by hand, or between
    deals) it went to no hand: nothing is void, and the shoe, which read what it was given, is not held (.13(g) holds
    a device that "cannot be used"); the operator is told to take the card out (docs/rules.md)."""
    if ctx.s.phase is Phase.DEALING and ctx.method in SHOE_METHODS:
        voiding.void(ctx, ctx.rule("13(c)"), f"the shoe read a card foreign to the deck: {inp.detail}")
        return
    dealt_by = "the table deals by hand" if ctx.method == "hand" else "no round is being dealt from it"
    ctx.ignored(
        f"foreign card read by the shoe: {inp.detail}",
        f"{dealt_by}, so the card went to no hand and voids no round ({ctx.rule('13(c)')}); take it out of the shoe "
        "before the shoe deals",
    )


def stands_in(ctx: StepContext) -> bool:
    """The automated shoe is covered (.13(g)) and the manual shoe deals in its place: its reader is connected in the
    covered shoe's place (the table's one shoe port), so what the device `shoe` says is the stand-in's."""
    return "shoe" in ctx.s.out_of_order and ctx.setup.method == "automated_shoe" and ctx.method == "manual_shoe"


def covered(ctx: StepContext, dev: str) -> bool:
    """Marked out of order: nothing the device says is used; but for the shoe stood in for, `shoe` is the stand-in."""
    return dev in ctx.s.out_of_order and not (dev == "shoe" and stands_in(ctx))


def named(ctx: StepContext, dev: str) -> str:
    return "stand-in manual shoe" if dev == "shoe" and stands_in(ctx) else dev


def fallback_fault(ctx: StepContext, inp: DeviceFault) -> bool:
    """A shoe's fault while the table deals by hand: no round dealt by hand asks the shoe for a card; what it says
    matters once the table turns to it (the fallback shoe, controller/engine/other_method.py)."""
    return inp.device_id == "shoe" and ctx.method == "hand" and inp.code != "foreign_card"


def fault_why(inp: DeviceFault) -> str:
    return f"fault {inp.code}" + (f": {inp.detail}" if inp.detail else "")


def shuffle_failed(ctx: StepContext, inp: DeviceFault, why: str) -> None:
    """.13(e): the cards are reshuffled; but a shuffler that fails `failed_shuffles_limit` shuffles in a row is not
    asked again and again: it malfunctions and cannot be used (.13(g)), held until it identifies again."""
    ctx.s.failed_shuffles += 1
    attempt, limit = ctx.s.failed_shuffles, ctx.opts.failed_shuffles_limit
    held = attempt >= limit
    remedy = (
        f"the shuffler is held unusable after {attempt} failed shuffles in a row ({ctx.rule('13(g)')})"
        if held
        else "the cards are reshuffled"
    )
    ctx.emit(
        "shuffle.failed",
        ctx.rule("13(e)"),
        {"code": inp.code, "attempt": attempt, "limit": limit, "remedy": remedy},
    )
    if held:
        fault_down(ctx, inp, f"{attempt} failed shuffles in a row (the last: {why})")
    else:
        boundary.start_shuffle(ctx)


def fault_down(ctx: StepContext, inp: DeviceFault, why: str) -> None:
    """A device unusable for what it reported: the fault is kept with the state, so a restart does not clear it.
    Said once per fault: a device repeating a fault already held (a shoe that reports its jam every few seconds) adds
    only its `device.fault` row, not a `device.unusable` for the supervisor and the floor's report each time."""
    dev = inp.device_id
    held = ctx.s.device_faults.get(dev)
    if held is not None and inp.code in held.uncleared and dev in ctx.s.devices_down:
        return
    device_down(ctx, dev, why)
    if dev in ctx.s.devices_down:
        ctx.s.device_faults[dev] = (
            HeldFault(inp.code, inp.detail, ctx.s.now, ctx.s.rounds_played, codes=(inp.code,))
            if held is None
            else replace(held, codes=(*held.uncleared, inp.code))
        )


def fault_cleared(ctx: StepContext, inp: DeviceFaultCleared) -> None:
    """The device says a fault it reported is cleared (the attendant cleared the jam without restarting it): the
    hold lifts once every fault it holds is cleared. A clear for a fault it does not hold lifts nothing."""
    dev, code = inp.device_id, inp.code
    what = f"fault {code} cleared by the {dev}"
    held = ctx.s.device_faults.get(dev)
    # Kept for its back_in_service; the shoe stood in for is also the stand-in's port, whose hold follows below.
    noted = covered_reports.cleared(ctx, dev, code) if dev in ctx.s.out_of_order else None
    if covered(ctx, dev):
        covered_says = f"the {dev} is marked out of order: nothing it says holds the table until it is back in service"
        ctx.ignored(what, f"{covered_says}; {noted}" if noted else covered_says)
        return
    if (held is None or code not in held.uncleared) and noted:
        ctx.ignored(what, noted)  # the stand-in holds no such fault: the covered shoe's, noted
        return
    if held is None or code not in held.uncleared:
        holds = f": it holds {', '.join(held.uncleared)}" if held is not None else ""
        ctx.ignored(what, f"the {dev} holds no fault {code}{holds}; the hold, if any, stands")
        return
    left = tuple(c for c in held.uncleared if c != code)
    ctx.emit(
        "device.fault_cleared",
        ctx.rule("13(g)"),
        {
            "device": dev,
            "code": code,
            "detail": inp.detail,
            "fault": fault_record(held),
            "still_held": list(left),
            "remedy": f"the {dev} is usable again once nothing else blocks the table"
            if not left
            else f"the {dev} stays unusable until it says {', '.join(left)} cleared too, or is marked out of order",
        },
    )
    if left:
        ctx.s.device_faults[dev] = replace(held, codes=left)
    else:
        lift(ctx, dev, f"{dev} said fault {code} cleared")


def fault_record(held: HeldFault) -> dict[str, str | int | None]:
    return {
        "code": held.code,
        "detail": held.detail,
        "since": held.since.isoformat() if held.since else None,
        "round_no": held.round_no,
    }


def device_down(ctx: StepContext, dev: str, why: str) -> None:
    if dev not in DEVICES:
        return
    if covered(ctx, dev):
        covered_reports.offline(ctx, dev, why)  # holds nothing; kept for its back_in_service
        return
    if dev == "shoe" and ctx.method == "hand":
        # Dealing from the hand uses no shoe; a hand-dealt table dealing from its fallback shoe holds it (ctx.method).
        return
    ctx.s.devices_down[dev] = why
    unusable(ctx, dev, why)
    if dev == "shoe" and ctx.s.phase in SHOE_ROUND and ctx.method in SHOE_METHODS:
        shoe_void(ctx, f"the dealing shoe cannot deal the round: {why}")
    elif dev == "shuffler" and ctx.s.phase is Phase.SHUFFLING:
        ctx.enter_blocked()  # the shuffle cannot complete; the cards are reshuffled once it is cleared
    else:
        boundary.pause_empty_betting(ctx)


def unusable(ctx: StepContext, dev: str, why: str) -> None:
    """Block the next round on a device held unusable, and say so."""
    ctx.block(
        f"device:{dev}",
        f"the {named(ctx, dev)} is {why}: bring it back, "
        + (
            "or put back in service the automated shoe it stands in for once the device on the shoe's port answers"
            if dev == "shoe" and stands_in(ctx)
            else "or mark it out of order (.13(g)) before any other method of shuffling or dealing is used"
        ),
    )
    ctx.emit(
        "device.unusable",
        ctx.rule("13(g)"),
        {
            "device": dev,
            "reason": why,
            "phase": str(ctx.s.phase),
            "remedy": f"no new round until it is back (it says the fault is cleared, or it is cleared and restarted "
            f"and identifies again){after(ctx, dev, ' or marked out of order')}",
        },
    )


def shoe_void(ctx: StepContext, reason: str) -> None:
    """.13(f): the automated shoe fails to deal the round's cards (a manual shoe's reader, .13(g)): void, every wager
    returned. Before its first card (after "no more bets") it voids at once: no dispense would deal the round."""
    automated = ctx.method == "automated_shoe"
    where = "the shoe" if automated else "the manual shoe"
    dealt = "with any cards already dealt" if ctx.s.phase is Phase.DEALING else "(no card was dealt)"
    remedy = f"all wagers returned; the cards are removed from {where} and reshuffled {dealt}"
    # A chip count awaiting the floorperson (.8(b)) was this round's: void, it no longer stops the table.
    boundary.unblock(ctx, "chip_count", "the round was voided")
    voiding.void(ctx, ctx.rule("13(f)") if automated else ctx.rule("13(g)"), reason, remedy=remedy)


def device_back(ctx: StepContext, dev: str) -> None:
    if dev in ctx.s.out_of_order:
        # The device on its port answers (the stand-in's, for the shoe stood in for, answers for the port too).
        covered_reports.online(ctx, dev)
    held = ctx.s.device_faults.get(dev)
    if held is not None and held.restarted:
        # A device identifies to a restarted daemon whatever its state: the identification says nothing of the fault
        # it reported before, so the block stands until it identifies again (or is marked out of order).
        ctx.s.device_faults[dev] = replace(held, restarted=False)
        still_unusable(ctx, dev, "it identified at start-up, which does not say the fault was cleared: ")
        return
    lift(ctx, dev, f"{dev} online")


def lift(ctx: StepContext, dev: str, by: str) -> None:
    ctx.s.device_faults.pop(dev, None)
    if dev == "shuffler":
        ctx.s.failed_shuffles = 0  # cleared and identifying again: its failures start over
    if dev in ctx.s.devices_down:
        del ctx.s.devices_down[dev]
        boundary.unblock(ctx, f"device:{dev}", by)


def faults_restored(ctx: StepContext) -> None:
    """At a restart: each fault stored with the state still makes its device unusable, and the table says so; so does
    each hold of a device that went offline (no fault kept), which its identification lifts. The device statuses
    (`device/<id>`) are derived from this boot's events only: unsaid, a held device read `unknown` until it reported."""
    for dev, held in sorted(ctx.s.device_faults.items()):
        ctx.s.device_faults[dev] = replace(held, restarted=True)
        still_unusable(ctx, dev, "the table restarted; its identification at start-up does not clear the fault: ")
    for dev, why in sorted(ctx.s.devices_down.items()):
        if dev not in ctx.s.device_faults:
            still_offline(ctx, dev, why)


def still_offline(ctx: StepContext, dev: str, why: str) -> None:
    """A hold with no fault kept (the device went offline, or a journal from before faults were kept)."""
    ctx.emit(
        "device.unusable",
        ctx.rule("13(g)"),
        {
            "device": dev,
            "reason": why,
            "phase": str(ctx.s.phase),
            "restored": True,
            "remedy": f"the table restarted with it held, and no fault kept to clear: {waits(ctx, dev)} the "
            f"{named(ctx, dev)} identifies again{after(ctx, dev, ', or is marked out of order')}",
        },
    )


def still_unusable(ctx: StepContext, dev: str, why_not: str) -> None:
    held = ctx.s.device_faults[dev]
    ctx.emit(
        "device.unusable",
        ctx.rule("13(g)"),
        {
            "device": dev,
            "reason": ctx.s.devices_down.get(dev, f"fault {held.code}"),
            "phase": str(ctx.s.phase),
            "restored": True,
            "fault": fault_record(held),
            "remedy": f"{why_not}{waits(ctx, dev)} the {named(ctx, dev)} says the fault is cleared, or is cleared and "
            f"restarted (it identifies again){after(ctx, dev, ', or is marked out of order')}",
        },
    )


def waits(ctx: StepContext, dev: str) -> str:
    if dev == "shoe" and ctx.table_method not in SHOE_METHODS:
        return "the table deals by hand, so no round waits for it; it stays held until"
    return "no new round until"


def after(ctx: StepContext, dev: str, marked: str) -> str:
    """What else lifts the hold: the mark, and the method that then takes over; the stand-in manual shoe is not marked
    (the automated shoe it stands in for is), and nothing else deals."""
    if dev == "shoe" and stands_in(ctx):
        return (
            "; the stand-in manual shoe stands in for the automated shoe marked out of order, which goes back in "
            "service once the device on the shoe's port answers"
        )
    return f"{marked}; then {takeover(ctx, dev)} takes over"


def takeover(ctx: StepContext, dev: str, out: Mapping[str, str] | None = None) -> str:
    ooo = {**ctx.s.out_of_order, dev: ""} if out is None else out
    if dev == "shuffler":
        method = usable_method(ctx.setup.method, ctx.opts.fallback_dealing_method, ooo)
        return "manual shuffle and cut" + (f", dealing by {method}" if method and method != ctx.setup.method else "")
    return usable_method(ctx.setup.method, ctx.opts.fallback_dealing_method, ooo) or "no other dealing method"
