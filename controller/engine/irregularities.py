"""Irregularities of the cards: a card face up (.13(a)), drawn in error (.13(b)), a wrong number of cards (.13(c)),
an exposed community card (.13(d)); the void itself is controller/engine/voiding.py, the devices' faults and holds
(.13(c), (e), (f), (g)) controller/engine/device_holds.py, the mark out of order and the method that takes over
controller/engine/other_method.py."""

from __future__ import annotations

from controller.engine import dealing, voiding
from controller.engine.context import StepContext
from controller.engine.state import Phase


def face_up(ctx: StepContext, card: str) -> None:
    """.13(a): a card found face up "in the shoe or the deck" while dealing is not used; more than one voids the round.
    Dealing from the hand (the dealer's panel reports it) the layout is laid again from the shuffler's order without
    it, since every later card goes one place earlier."""
    from_hand = ctx.s.phase is Phase.DEALT and ctx.method == "hand"
    if ctx.s.phase is not Phase.DEALING and not from_hand:
        ctx.ignored("face-up card", "no cards are being dealt")
        return
    r = ctx.r
    if card in r.discarded or (from_hand and card not in ctx.s.deck_order):
        ctx.ignored(f"face-up card {card}", "not a card of the deck being dealt, or already set aside")
        return
    r.discarded.append(card)
    if len(r.discarded) > 1:
        voiding.void(ctx, ctx.rule("13(a)"), f"{len(r.discarded)} cards found face up while dealing")
        return
    remedy = "not used this round; to the discard rack"
    if from_hand:
        dealing.lay_from_order(ctx, dealing.deal_plan(ctx))
        remedy += "; the cards after it are dealt one place earlier"
    ctx.emit("card.face_up_discarded", ctx.rule("13(a)"), {"remedy": remedy}, {"card": card})


def drawn_in_error(ctx: StepContext) -> None:
    """.13(b): a card drawn in error without its face exposed is used as the next card."""
    if ctx.s.phase not in (Phase.DEALING, Phase.DEALT):
        ctx.ignored("drawn in error", "no cards are being dealt")
        return
    ctx.emit("card.drawn_in_error", ctx.rule("13(b)"), {"remedy": "used as the next card"})


def wrong_card_count(ctx: StepContext) -> None:
    """.13(c): a player or the community area dealt an incorrect number of cards, which the dealer sees and reports
    (a manual shoe's reader and a deal from the hand cannot show where a card went): the round is void."""
    if ctx.s.phase not in (Phase.DEALING, Phase.DEALT, Phase.STUB_COUNT, Phase.DECISION):
        ctx.ignored("wrong card count", "no cards are on the layout")
        return
    voiding.void(ctx, ctx.rule("13(c)"), "the dealer reports a player or the community area dealt an incorrect number")


def community_exposed(ctx: StepContext) -> None:
    """.13(d): a community card exposed before its reveal voids the round (683a.13(d): the optional wagers are still
    settled, which needs every card on the layout: an exposure while dealing waits for the deal to be complete)."""
    area = ctx.spec.community_area
    if area is None:
        ctx.ignored("community card exposed", f"chapter {ctx.spec.chapter} deals no community card")
        return
    if ctx.s.phase not in (Phase.DEALING, Phase.DEALT, Phase.STUB_COUNT, Phase.DECISION) or not any(
        ctx.r.areas.get(area, ())
    ):
        ctx.ignored("community card exposed", "no community card is on the layout")
        return
    if ctx.s.phase is Phase.DEALING and ctx.spec.exposure_settles:
        if not ctx.r.exposed:
            ctx.r.exposed = True
            ctx.emit(
                "community.exposed",
                ctx.rule("13(d)"),
                {
                    "remedy": "the deal is completed, then every hand is void and its wagers returned; "
                    + ", ".join(ctx.spec.exposure_settles)
                    + " settled on the cards as dealt"
                },
            )
        return
    voiding.void_exposed(ctx)
