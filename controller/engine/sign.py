"""The progressive sign: while it cannot show the meters, progressive wagering is locked out and the rest of the game
goes on (605a.7(a)(1): a progressive must have a meter the players can see; 655a.2(c)(2), 643a.2(d)'s lock-out keeps
its wagers from being recognised). Unlike a shuffler's or shoe's fault (.13(g)), a sign's never blocks a round: no card
or non-progressive wager depends on it (docs/rules.md).

Each fault the sign reports is its own lock-out reason (`sign:<code>`, offline is `sign`), so the sign saying one fault
is cleared (`fault_cleared`, docs/protocol.md section 5) lifts that one; its identification lifts them all."""

from __future__ import annotations

from controller.engine.context import StepContext
from controller.engine.progressive import lock_progressive, unlock_progressive
from drivers.interfaces import DeviceFaultCleared

OFFLINE = "sign"
FAULT = "sign:"


def down(ctx: StepContext, why: str, code: str | None = None) -> None:
    """The sign went offline (code None) or reported fault `code`."""
    key = OFFLINE if code is None else f"{FAULT}{code}"
    lock_progressive(ctx, key, f"the progressive sign is unavailable ({why})")


def up(ctx: StepContext) -> None:
    """The sign identified: whatever it had is behind it."""
    for key in [k for k in ctx.s.progressive_lockout if k == OFFLINE or k.startswith(FAULT)]:
        unlock_progressive(ctx, key)


def held(ctx: StepContext) -> list[str]:
    """The fault codes the sign's lock-out holds, in the order reported."""
    return [k.removeprefix(FAULT) for k in ctx.s.progressive_lockout if k.startswith(FAULT)]


def fault_cleared(ctx: StepContext, inp: DeviceFaultCleared) -> None:
    """The sign says fault `code` is cleared: its lock-out reason lifts; progressive wagers are taken again (and the
    meters shown) once nothing else locks them out. A clear for a fault it does not hold lifts nothing."""
    codes = held(ctx)
    if inp.code not in codes:
        holds = f": it holds {', '.join(codes)}" if codes else ""
        ctx.ignored(
            f"fault {inp.code} cleared by the {inp.device_id}",
            f"the {inp.device_id} holds no fault {inp.code}{holds}; the lock-out, if any, stands",
        )
        return
    left = [c for c in codes if c != inp.code]
    ctx.emit(
        "device.fault_cleared",
        ctx.spec.lockout_rule(),
        {
            "device": inp.device_id,
            "code": inp.code,
            "detail": inp.detail,
            "still_held": left,
            "remedy": "progressive wagers are taken again once nothing else locks them out"
            if not left
            else f"progressive wagering stays locked out until the sign says {', '.join(left)} cleared too",
        },
    )
    unlock_progressive(ctx, f"{FAULT}{inp.code}")
