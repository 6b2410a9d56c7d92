"""The round's boundary: the blocks that stop the next round and their clearing, the start of a shuffle, the end
of a round and the close of the table.

The round is a loop (shuffle, bets, deal, decisions, settlement, shuffle) but no step calls back up it: a round
ends here (round_over starts the next shuffle) and the next round's betting opens only on the shuffler's answer
(ShuffleCompleted, an input: controller/engine/shuffling.py). So the phases above this module import it, and it
imports none of them.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.engine.commands import LockSeat, Shuffle
from controller.engine.context import StepContext
from controller.engine.state import Phase


def unblock(ctx: StepContext, key: str, by: str) -> None:
    """Clear a block; the last one cleared between rounds starts the shuffle for the next round."""
    if ctx.s.blocks.pop(key, None) is None:
        return
    ctx.emit("table.block_cleared", None, {"block": key, "by": by, "remaining": dict(ctx.s.blocks)})
    if ctx.s.phase in (Phase.BLOCKED, Phase.OPENING) and ctx.s.round is None:
        if ctx.s.blocks:
            ctx.enter_blocked()
        else:
            ctx.s.block_reason = None
            start_shuffle(ctx)


def pause_empty_betting(ctx: StepContext) -> None:
    """A block that arises while betting is open and no wager is on the layout: betting closes now."""
    r = ctx.s.round
    if ctx.s.phase is Phase.BETTING and r is not None and not any(st.wagers for st in r.seats.values()):
        ctx.s.round = None
        for seat in range(1, ctx.seats + 1):
            ctx.command(LockSeat(seat))
        ctx.enter_blocked()


def start_shuffle(ctx: StepContext) -> None:
    """Shuffle for the next round, unless the table closes or a block stops the next round."""
    if ctx.s.closing:
        closed(ctx)
        return
    if ctx.s.blocks:  # no new round until every block is cleared
        ctx.enter_blocked()
        return
    ctx.s.phase = Phase.SHUFFLING
    if ctx.manual_shuffle():
        # .13(g): the shuffler is out of order; the dealer shuffles by hand and cuts with the cover card.
        ctx.emit(
            "shuffle.started",
            ctx.rule("shuffle"),
            {
                "device": "manual",
                "deck": ctx.s.next_deck,
                "then": "cut with the cover card at least ten cards in (.5(d)); confirm when done",
            },
        )
        return
    ctx.emit("shuffle.started", ctx.rule("shuffle"), {"device": "shuffler"})
    ctx.command(Shuffle())


def closed(ctx: StepContext, asked: Mapping[str, str] | None = None) -> None:
    """`asked`: who asked a close at once (`by`, CloseTable); a close after the round says who asked it, as its
    `table.closing` did (kept in the state, across a restart)."""
    if asked is None and ctx.s.closing_by is not None:
        asked = {"by": ctx.s.closing_by}
    ctx.s.round = None
    ctx.s.phase = Phase.CLOSED
    ctx.s.closing = False
    ctx.s.closing_by = None
    # A closed table shows no block; reopened (or restored after a restart) it says again what blocks it.
    ctx.s.block_reason = None
    ctx.emit("table.closed", None, {"rounds_played": ctx.s.rounds_played, **(asked or {})})
    for seat in range(1, ctx.seats + 1):
        ctx.command(LockSeat(seat))


def round_over(ctx: StepContext) -> None:
    """The round's cards go to the shuffler; with two decks the other deck comes into play (.3(b)(3))."""
    if ctx.opts.decks == "two_decks" and not ctx.manual_shuffle() and len(ctx.s.decks) > 1:
        labels = sorted(ctx.s.decks)
        ctx.s.next_deck = labels[(labels.index(ctx.r.deck) + 1) % len(labels)]
    ctx.s.round = None
    start_shuffle(ctx)
