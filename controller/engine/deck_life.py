"""Deck life: ticks of the clock, deck change due (.3(c)), the idle-table inspection (.5(f)), the opening
inspection and new decks verified (.4(a)), and the blocks they raise and clear."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from controller.engine import boundary
from controller.engine.context import StepContext
from controller.engine.inputs import Confirm, Tick
from controller.engine.state import DeckLife, Phase


def tick(ctx: StepContext, inp: Tick) -> None:
    if ctx.s.now is not None and inp.now <= ctx.s.now:
        return  # time never runs backwards here; a repeated or late tick changes nothing
    ctx.s.now = inp.now
    if ctx.s.last_activity is None:
        ctx.s.last_activity = inp.now
    if ctx.s.phase is Phase.CLOSED:
        return
    for d, life in list(ctx.s.decks.items()):
        if life.since is None:
            ctx.s.decks[d] = replace(life, since=inp.now)
    hand = ctx.setup.method == "hand"
    hours = ctx.opts.deck_change_hours or (4 if hand else 8)
    due = sorted(
        d
        for d, life in ctx.s.decks.items()
        if life.since is not None and inp.now - life.since >= timedelta(hours=hours)
    )
    if due and "deck_change_due" not in ctx.s.blocks:
        rule = ctx.rule("3(c)(1)" if hand else "3(c)(2)")
        ctx.block("deck_change_due", f"deck {', '.join(due)} in play {hours:g} hours: a new deck must be verified")
        ctx.emit(
            "deck.change_due",
            rule,
            {
                "decks": due,
                "hours": hours,
                "since": {d: _iso(ctx.s.decks[d].since) for d in due},
                "remedy": "no new round until a new deck is verified by the floorperson",
            },
        )
        boundary.pause_empty_betting(ctx)
    idle = ctx.opts.idle_inspection_minutes
    quiet = ctx.s.round is None or (
        ctx.s.phase is Phase.BETTING and not any(st.wagers for st in ctx.s.round.seats.values())
    )
    if (
        idle is not None
        and quiet
        and ctx.s.last_activity is not None
        and "inspection" not in ctx.s.blocks
        and "idle_inspection" not in ctx.s.blocks
        and inp.now - ctx.s.last_activity >= timedelta(minutes=idle)
    ):
        ctx.block(
            "idle_inspection",
            f"no gaming activity for {idle} minutes: the cards must be inspected before the next round",
        )
        ctx.emit(
            "cards.inspection_due",
            ctx.rule("5(f)"),
            {
                "idle_minutes": idle,
                "since": _iso(ctx.s.last_activity),
                "remedy": "the cards are spread for inspection, then washed and shuffled; the dealer confirms",
            },
        )
        boundary.pause_empty_betting(ctx)


def inspected(ctx: StepContext, who: str) -> None:
    if "inspection" in ctx.s.blocks:  # .4(a): the dealer inspects, the floorperson verifies
        if who == "floorperson" and "dealer" not in ctx.s.confirmed:
            ctx.refused(
                "cards_inspected",
                "the floorperson verifies the dealer's inspection: the dealer inspects first",
                ctx.rule("4(a)"),
            )
            return
        ctx.s.confirmed.add(who)
        ctx.emit("cards.inspected" if who == "dealer" else "cards.inspection_verified", ctx.rule("4(a)"), {"by": who})
        if {"dealer", "floorperson"} <= ctx.s.confirmed:
            ctx.s.confirmed = set()
            boundary.unblock(ctx, "inspection", "dealer and floorperson")
    elif "idle_inspection" in ctx.s.blocks:  # .5(f): spread, inspected, then washed and shuffled
        ctx.emit("cards.inspected", ctx.rule("5(f)"), {"by": who})
        if ctx.s.now is not None:
            ctx.s.last_activity = ctx.s.now
        boundary.unblock(ctx, "idle_inspection", who)
    else:
        ctx.ignored("cards_inspected", "no inspection is awaited")


def deck_verified(ctx: StepContext, c: Confirm) -> None:
    if c.who != "floorperson":
        ctx.refused("deck_verified", "a new deck is verified by the floorperson", ctx.rule("4(a)"))
        return
    removed = "deck_removed" in ctx.s.blocks
    due = "deck_change_due" in ctx.s.blocks
    if not (removed or due):
        ctx.ignored("deck_verified", "no new deck is awaited")
        return
    decks = [c.deck] if c.deck in ctx.s.decks else list(ctx.s.decks)
    for d in decks:
        ctx.s.decks[d] = DeckLife(since=ctx.s.now)
    ctx.emit("deck.verified", ctx.rule("4(a)"), {"decks": decks, "by": "floorperson", "note": c.note})
    hand = ctx.setup.method == "hand"
    hours = ctx.opts.deck_change_hours or (4 if hand else 8)
    still_due = [
        d
        for d, life in ctx.s.decks.items()
        if ctx.s.now is not None and life.since is not None and ctx.s.now - life.since >= timedelta(hours=hours)
    ]
    if due and not still_due:
        boundary.unblock(ctx, "deck_change_due", "floorperson")
    if removed:
        boundary.unblock(ctx, "deck_removed", "floorperson")


def _iso(t: datetime | None) -> str | None:
    return t.isoformat() if t is not None else None
