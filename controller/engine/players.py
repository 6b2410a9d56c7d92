"""Players on several boxes: the dealer (panel) or a floorperson (signed command) binds adjacent boxes to one player for
the session, within the number the Rules Submission allows (643a.7(k), 655a.7(e), 683a.7(e)). The player is a
table-local number, journaled and published with its boxes, never a person's identity.

The round reads the binding wherever a chapter speaks of a player rather than a box: envy bonuses are never paid for
the player's own hands (655a.11(i)(1)(v), 643a.11(f)(3)(iii)(E), (iv)(E)), 683a.12(f) limits what one player is paid
in a round, and a player who leaves abandons every box he wagered on (.7(b)).
"""

from __future__ import annotations

from controller.engine.context import StepContext
from controller.engine.state import Phase


def player_of(ctx: StepContext, seat: int) -> int | None:
    """The table-local player this box is bound to with others, or None (a player of its own)."""
    return next((p for p, seats in ctx.s.bound.items() if seat in seats), None)


def boxes_of(ctx: StepContext, seat: int) -> list[int]:
    """Every box of the player at this seat: the bound boxes, or the seat alone."""
    player = player_of(ctx, seat)
    return list(ctx.s.bound[player]) if player is not None else [seat]


def bind(ctx: StepContext, seats: tuple[int, ...], by: str) -> None:
    """Bind these boxes to one new player (2 or more), or release one box (a player of its own again)."""
    rule = ctx.rule("boxes")
    what = f"bind boxes {list(seats)}"
    problem = _problem(ctx, seats)
    if problem is not None:
        ctx.refused(what, problem, rule)
        return
    boxes = sorted(seats)
    for player, held in sorted(ctx.s.bound.items()):
        if set(held) & set(boxes):
            left = [n for n in held if n not in boxes]
            if len(left) >= 2:
                ctx.s.bound[player] = left
                ctx.emit("player.bound", rule, {"player": player, "seats": left, "by": by, "reason": "boxes taken"})
            else:
                del ctx.s.bound[player]
                ctx.emit("player.released", rule, {"player": player, "seats": held, "by": by})
    if len(boxes) == 1:
        return
    player = ctx.s.next_player
    ctx.s.next_player += 1
    ctx.s.bound[player] = boxes
    ctx.emit("player.bound", rule, {"player": player, "seats": boxes, "by": by})


def _problem(ctx: StepContext, seats: tuple[int, ...]) -> str | None:
    limit = ctx.spec.boxes_per_player(ctx.rules)
    boxes = sorted(seats)
    if not boxes or len(set(boxes)) != len(boxes) or not all(1 <= n <= ctx.seats for n in boxes):
        return f"boxes are distinct seat numbers from 1 to {ctx.seats}"
    if ctx.s.round is not None and ctx.s.phase is not Phase.BETTING:
        return 'a player\'s boxes are bound between rounds or before "no more bets", never during a round'
    if len(boxes) > limit:
        return f"a player may wager on at most {limit} adjacent box(es) in a round at this table"
    if boxes != list(range(boxes[0], boxes[0] + len(boxes))):
        return f"boxes {boxes} are not adjacent: a player's boxes are side by side"
    if len(boxes) == 1 and player_of(ctx, boxes[0]) is None:
        return f"box {boxes[0]} is bound to no other box: it is already a player of its own"
    return None
