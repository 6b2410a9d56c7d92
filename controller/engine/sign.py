"""The progressive sign: while it cannot show the meters, progressive wagering is locked out and the rest of the game
goes on (605a.7(a)(1): a progressive must have a meter the players can see; 655a.2(c)(2), 643a.2(d)'s lock-out keeps
its wagers from being recognised). Unlike a shuffler's or shoe's fault (.13(g)), a sign's never blocks a round: no card
or non-progressive wager depends on it (docs/rules.md).

Each fault the sign reports is its own lock-out reason (`sign:<code>`, offline is `sign`), so the sign saying one fault
is cleared (`fault_cleared`, docs/protocol.md section 5) lifts that one; its identification lifts them all. A fault
stored before the per-code reasons is upgraded at restore (`upgrade_stored`): any `fault_cleared` lifts it."""

from __future__ import annotations

from collections.abc import Mapping

from controller.engine.context import StepContext
from controller.engine.progressive import lock_progressive, unlock_progressive
from drivers.interfaces import DeviceFaultCleared

OFFLINE = "sign"
FAULT = "sign:"
# A fault stored before the per-code reasons: which code the sign will name in its clear is not known, so any lifts it.
STORED = f"{FAULT}*"
_UNAVAILABLE = "the progressive sign is unavailable ("
# How every offline reason reads, before the per-code reasons and since (controller/engine/round.py: device_offline).
_OFFLINE_REASON = f"{_UNAVAILABLE}offline"


def down(ctx: StepContext, why: str, code: str | None = None) -> None:
    """The sign went offline (code None) or reported fault `code`."""
    key = OFFLINE if code is None else f"{FAULT}{code}"
    lock_progressive(ctx, key, f"{_UNAVAILABLE}{why})")


def upgrade_stored(lockout: dict[str, str]) -> str | None:
    """A state stored before the per-code reasons kept a sign's fault under the offline key (`sign`, "the progressive
    sign is unavailable (<code>: <detail>)"), which only the sign's identification lifts: restored as is, a sign that
    says the fault is cleared would be ignored and progressive wagering stay locked out until it reconnects. Such a
    reason becomes `STORED`, which the sign's next `fault_cleared` (any code) or identification lifts; an offline
    reason stays what it is. Returns the reason upgraded (for the restore's log), None if there was none."""
    why = lockout.get(OFFLINE)
    if why is None or why.startswith(_OFFLINE_REASON):
        return None
    upgraded = {(STORED if k == OFFLINE else k): v for k, v in lockout.items()}  # the reasons keep their order
    lockout.clear()
    lockout.update(upgraded)
    return why


def up(ctx: StepContext) -> None:
    """The sign identified: whatever it had is behind it."""
    for key in [k for k in ctx.s.progressive_lockout if k == OFFLINE or k.startswith(FAULT)]:
        unlock_progressive(ctx, key)


def held(ctx: StepContext) -> list[str]:
    """The fault codes the sign's lock-out holds, in the order reported."""
    return held_codes(ctx.s.progressive_lockout)


def held_codes(lockout: Mapping[str, str]) -> list[str]:
    """The fault codes among progressive lock-out reasons, in the order reported (a fault stored before the per-code
    reasons names none)."""
    return [k.removeprefix(FAULT) for k in lockout if k.startswith(FAULT) and k != STORED]


def fault_cleared(ctx: StepContext, inp: DeviceFaultCleared) -> None:
    """The sign says fault `code` is cleared: its lock-out reason lifts, and a fault stored before the per-code
    reasons with it (`STORED`); progressive wagers are taken again (and the meters shown) once nothing else locks them
    out. A clear for a fault it does not hold lifts nothing."""
    codes = held(ctx)
    stored = ctx.s.progressive_lockout.get(STORED)
    if inp.code not in codes and stored is None:
        holds = f": it holds {', '.join(codes)}" if codes else ""
        ctx.ignored(
            f"fault {inp.code} cleared by the {inp.device_id}",
            f"the {inp.device_id} holds no fault {inp.code}{holds}; the lock-out, if any, stands",
        )
        return
    left = [c for c in codes if c != inp.code]
    payload: dict[str, str | list[str]] = {
        "device": inp.device_id,
        "code": inp.code,
        "detail": inp.detail,
        "still_held": left,
        "remedy": "progressive wagers are taken again once nothing else locks them out"
        if not left
        else f"progressive wagering stays locked out until the sign says {', '.join(left)} cleared too",
    }
    if stored is not None:
        payload["stored_fault"] = stored  # the reason stored before the per-code reasons, lifted by this clear
    ctx.emit("device.fault_cleared", ctx.spec.lockout_rule(), payload)
    unlock_progressive(ctx, STORED)
    unlock_progressive(ctx, f"{FAULT}{inp.code}")
