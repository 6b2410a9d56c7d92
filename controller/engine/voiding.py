"""The void of a round (.13): every wager returned, the progressive contributions taken back, the cards reshuffled."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controller.core.settlement import RoundRecord, Settled
from controller.engine import accounts, boundary, progressive, settling
from controller.engine.context import StepContext


def void_exposed(ctx: StepContext) -> None:
    """.13(d): a community card exposed before its reveal voids every hand; a chapter that still settles some wagers
    (683a.13(d): the optional wagers, under 683a.11(i)) settles them on the layout as dealt, and journals the round's
    record with the exposure so a dispute recomputes it (`round.recorded`).

    A player who left (.7(b)) is not in that settlement: 683a.13(d) settles "in accordance with 683a.11(i)", which
    settles each remaining player's wagers (683a.11(h)), as a completed round does. His wagers stay as he left them,
    collected as losing or held for him; settled again here, a win would be paid on a wager the house had already
    collected or holds, a loss collected twice. The void lists them with `players_left` (docs/rules.md)."""
    ctx.r.exposed = True
    reason = "a community card was exposed before the dealer revealed it"
    table = settling.view(ctx)
    rows = ctx.spec.settle_on_exposure(ctx.rules, table) if table.seats else None
    if rows is None:
        void(ctx, ctx.rule("13(d)"), reason)
        return
    record = ctx.spec.record(ctx.rules, table)
    remedy = "hands void and the other wagers returned; " + ", ".join(ctx.spec.exposure_settles) + " settled"
    void(ctx, ctx.rule("13(d)"), reason, remedy=remedy + "; cards reshuffled", settled=rows, record=record)


def void(
    ctx: StepContext,
    rule: str,
    reason: str,
    remedy: str = "all wagers returned; cards reshuffled",
    settled: Sequence[Settled] = (),
    record: RoundRecord | None = None,
) -> None:
    """All hands void, every wager returned (those of a player who left included), the cards reshuffled;
    except the wagers the chapter still settles (`settled`, e.g. 683a.13(d)), reported after the void with the
    round's `record`."""
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
    if record is not None:
        settling.recorded(ctx, record)
    progressive.reverse_progressive_contributions(ctx, rule, returned)
    for seat, every in returned.items():  # a wager made from a game account goes back to it (605a.2(d)(2))
        for spot, amount in sorted(every.items()):
            accounts.give_back(ctx, int(seat), spot, amount, rule, reason)
    boundary.round_over(ctx)
