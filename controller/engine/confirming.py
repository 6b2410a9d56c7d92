"""What people confirm, count and decide at the table: the dealer's confirmations (panel keys or signed
commands), the keypad's counts, and the floorperson's rulings; each goes to the step that awaits it."""

from __future__ import annotations

from controller.engine import betting, boundary, chip_count, dealing, deck_life, shuffling
from controller.engine.context import StepContext
from controller.engine.inputs import Confirm, CountEntered, FloorpersonDecision
from controller.engine.state import Phase
from drivers.interfaces import COUNTS, CountKeyed


def confirm(ctx: StepContext, c: Confirm) -> None:
    match c.what:
        case "cards_inspected":
            deck_life.inspected(ctx, c.who)
        case "deck_verified":
            deck_life.deck_verified(ctx, c)
        case "shuffled":
            shuffling.manual_shuffle_done(ctx, c.who)
        case "misdeal" | "no_misdeal":
            if ctx.s.phase is not Phase.STUB_COUNT or ctx.r.stub_entered is None or c.who != "dealer":
                ctx.ignored(c.what, "no stub count awaits the dealer's determination of a misdeal")
            else:
                dealing.misdeal_determined(ctx, c.what == "misdeal")
        case _:
            ctx.ignored(f"confirm {c.what!r}", "not something this controller asks to confirm")


def count_entered(ctx: StepContext, c: CountEntered) -> None:
    if c.count < 0:
        ctx.refused(f"{c.what} count", "a count is not negative", None)
    elif c.what == "chips" and ctx.s.phase is Phase.RECONCILING:
        chip_count.chips_counted(ctx, c.count)
    elif c.what == "stub" and ctx.s.phase is Phase.STUB_COUNT:
        dealing.stub_counted(ctx, c.count)
    else:
        ctx.ignored(f"{c.what} count", "no such count is awaited")


def count_keyed(ctx: StepContext, c: CountKeyed) -> None:
    """A count keyed on the dealer panel: checked here, since it comes from a device, then as CountEntered."""
    count: object = c.count
    if c.what not in COUNTS:
        ctx.refused(
            f"count {c.what!r} from {c.device_id}",
            f"the panel keys only the {' or '.join(COUNTS)} count; fix the panel's key map",
            None,
        )
    elif not isinstance(count, int) or isinstance(count, bool) or count < 0:
        rule = ctx.rule("8(b)") if c.what == "chips" else ctx.stub_rules()[0]
        ctx.refused(
            f"{c.what} count {count!r} from {c.device_id}",
            "a count is a whole non-negative number: key it again",
            rule,
        )
    else:
        count_entered(ctx, CountEntered("chips" if c.what == "chips" else "stub", count))


def floorperson_decision(ctx: StepContext, d: FloorpersonDecision) -> None:
    if d.about == "chip_count":
        chip_count.chip_decision(ctx, d)
    elif d.about == "shuffle_order" and "shuffle_order" in ctx.s.blocks and d.decision == "reshuffle":
        ctx.emit(
            "floorperson.decided",
            None,
            {"about": d.about, "decision": d.decision, "floorperson": d.floorperson, "note": d.note},
        )
        if ctx.s.phase is Phase.BETTING and ctx.s.round is not None:
            # The shoe covered in betting left a deck the hand cannot deal (no card order, .9(a)(1)): the cards are
            # shuffled again "when directed by a floorperson or above" (.5(a)), so the wagers standing for this deck
            # go back and betting closes; the shuffle's order opens the next round's betting.
            betting.return_standing(ctx, ctx.rule("5(a)"), "a floorperson directed a reshuffle before no more bets")
            boundary.pause_empty_betting(ctx)
        boundary.unblock(ctx, "shuffle_order", "floorperson")
    else:
        ctx.ignored(f"floorperson decision on {d.about!r}", "nothing awaits that decision")
