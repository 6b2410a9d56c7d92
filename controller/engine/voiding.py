"""The void of a round (.13): every wager returned, the progressive contributions taken back, the cards reshuffled."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controller.core.settlement import Settled
from controller.engine import boundary, progressive, settling
from controller.engine.context import StepContext


def void(
    ctx: StepContext,
    rule: str,
    reason: str,
    remedy: str = "all wagers returned; cards reshuffled",
    settled: Sequence[Settled] = (),
) -> None:
    """All hands void, every wager returned (those of a player who left included), the cards reshuffled;
    except the wagers the chapter still settles (`settled`, e.g. 683a.13(d)), reported after the void."""
    r = ctx.r
    kept = {(x.seat, x.wager) for x in settled}
    returned: dict[str, dict[str, int]] = {}
    for n, st in sorted(r.seats.items()):
        every = {w: a for w, a in {**st.collected, **st.withdrawn, **st.wagers}.items() if (n, w) not in kept}
        if every:
            returned[str(n)] = every
    payload: dict[str, Any] = {"reason": reason, "returned": returned, "remedy": remedy}
    if r.left:
        payload["players_left"] = sorted(r.left)  # their wagers are held for them, not paid out at the table
    ctx.emit("round.voided", rule, payload)
    revealed: set[str] = set()
    for x in settled:
        settling.emit_settled(ctx, x, revealed)
    progressive.reverse_progressive_contributions(ctx, rule, returned)
    boundary.round_over(ctx)
