"""Tilts: blocks only a supervisor clears (the signed wrapper is controller/engine/round.py; jackpot validation
controller/engine/jackpot.py).

A tilt is a block that no dealer action and no chapter remedy clears: something is wrong with the
controller itself (its stored state failed validation at start, `critical_state`) and a supervisor must look.
Acknowledging a tilt records who saw it and leaves the block; clearing it removes the block. Blocks with a
remedy of their own (a deck removed, a chip count, a device out of order) are not tilts: clearing them by
hand would skip what the chapter prescribes.
"""

from __future__ import annotations

from controller.engine import boundary, progressive
from controller.engine.context import StepContext
from controller.engine.inputs import AcknowledgeTilt, ClearTilt, RaiseTilt
from controller.engine.state import Phase

# Block keys that are tilts. Another part of the controller raises a new kind of tilt by naming its block
# "tilt:<what>" (e.g. "tilt:journal"), without a change here.
TILTS = frozenset({"critical_state"})
TILT_PREFIX = "tilt:"


def is_tilt(block: str) -> bool:
    return block in TILTS or (block.startswith(TILT_PREFIX) and len(block) > len(TILT_PREFIX))


def raise_tilt(ctx: StepContext, t: RaiseTilt) -> None:
    """The shell raises a tilt (a task that keeps failing): the round in progress plays on to its end, no new one
    starts. Raised again while it stands, it only says so again."""
    ctx.block(t.tilt, t.reason)
    ctx.emit("tilt.raised", None, {"tilt": t.tilt, "reason": t.reason, "remedy": t.remedy})
    if ctx.s.round is None and ctx.s.phase in (Phase.BLOCKED, Phase.OPENING):
        ctx.enter_blocked()
    else:
        boundary.pause_empty_betting(ctx)


def acknowledge_tilt(ctx: StepContext, a: AcknowledgeTilt) -> None:
    if _not_a_raised_tilt(ctx, f"acknowledge tilt {a.tilt!r}", a.tilt):
        return
    ctx.emit(
        "tilt.acknowledged",
        None,
        {
            "tilt": a.tilt,
            "reason": ctx.s.blocks[a.tilt],
            "by": a.key_id,
            "role": a.role,
            "remedy": "a supervisor clears the tilt",
        },
    )


def clear_tilt(ctx: StepContext, c: ClearTilt) -> None:
    if _not_a_raised_tilt(ctx, f"clear tilt {c.tilt!r}", c.tilt):
        return
    ctx.emit(
        "tilt.cleared",
        None,
        {"tilt": c.tilt, "reason": ctx.s.blocks[c.tilt], "by": c.key_id, "role": c.role, "note": c.note},
    )
    boundary.unblock(ctx, c.tilt, f"{c.role} {c.key_id}")
    if c.tilt == "tilt:meters":
        progressive.unlock_progressive(ctx, "meters")
        if ctx.s.phase is not Phase.CLOSED:
            # Meters that were gone (a journal emptied or rolled back) are seeded now, on the supervisor's signed
            # word and journaled, rather than taking progressive wagers without a meter until the next opening.
            progressive.seed_meters(ctx)


def _not_a_raised_tilt(ctx: StepContext, what: str, tilt: str) -> bool:
    if not is_tilt(tilt):
        ctx.refused(
            what,
            f"{tilt!r} is not a tilt (the tilts are {', '.join(sorted(TILTS))} and "
            f"{TILT_PREFIX}*); a block with a remedy of its own is cleared by that remedy",
            None,
        )
        return True
    if tilt not in ctx.s.blocks:
        raised = sorted(b for b in ctx.s.blocks if is_tilt(b))
        ctx.ignored(what, f"no tilt {tilt!r} is raised" + (f" (raised: {', '.join(raised)})" if raised else ""))
        return True
    return False
