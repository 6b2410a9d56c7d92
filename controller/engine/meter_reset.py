"""605a.7(a)(5)'s reset mechanism at the table: a supervisor's signed `reset_meter` (docs/commands.md), audited through
the meter model's reset (controller.progressive.meters.reset), between rounds only."""

from __future__ import annotations

from controller.engine import progressive
from controller.engine.context import StepContext
from controller.engine.inputs import ResetMeter
from controller.engine.state import Phase
from controller.progressive import meters as model
from controller.progressive.model import MeterError

RESET_RULE = "605a.7(a)(5)"
# The phases between rounds: a round's contributions are not taken yet (betting) or already final.
_BETWEEN_ROUNDS = frozenset({Phase.CLOSED, Phase.OPENING, Phase.SHUFFLING, Phase.BETTING, Phase.BLOCKED})


def reset_meter(ctx: StepContext, inp: ResetMeter) -> None:
    """605a.7(a)(5)'s "other reset mechanism": a supervisor's signed reset of one level, with the reason. The display
    goes into the removed meter (owed under the Rules Submission, never lost) and the level is reseeded. Refused
    during a round: a void must still take back exactly what the round put in, and model.void_round refuses a level
    reseeded since (docs/progressive.md, "Void")."""
    what = f"reset of the {inp.level} meter"
    meters = ctx.s.meters
    if ctx.setup.link is not None:
        ctx.refused(what, "this table's meters are the link controller's: reset them there", RESET_RULE)
    elif meters is None or inp.level not in meters.levels:
        have = ", ".join(sorted(meters.levels)) if meters is not None and meters.levels else "none"
        ctx.refused(what, f"no {inp.level} meter at this table (its meters: {have})", RESET_RULE)
    elif ctx.s.phase not in _BETWEEN_ROUNDS or meters.open_rounds or ctx.s.pending_hits:
        ctx.refused(what, "only between rounds: finish or void the round in progress first", RESET_RULE)
    else:
        try:
            new, events = model.reset(
                meters, ctx.setup.meter_params, inp.level, reason=inp.reason, authorised_by=inp.key_id
            )
        except MeterError as err:
            ctx.refused(what, str(err), RESET_RULE)
            return
        progressive.meter_events(ctx, events, new)
        progressive.show_levels(ctx)
