"""Opening and closing the table, and the shuffle's outcome (.4(a) opening inspection, .5(b)-(d) counting and
manual shuffle, .13(g) the shuffler out of order): a completed shuffle opens the next round's betting."""

from __future__ import annotations

from typing import Any

from controller.core.cards import deck_problems
from controller.engine import accounts, betting, boundary, progressive
from controller.engine.context import StepContext, usable_method
from controller.engine.inputs import CloseTable
from controller.engine.state import DeckLife, Phase
from drivers.interfaces import ShuffleCompleted


def open_table(ctx: StepContext) -> None:
    if ctx.s.phase is not Phase.CLOSED:
        ctx.ignored("open table", "the table is already open")
        return
    labels = ("A", "B") if ctx.opts.decks == "two_decks" else ("A",)
    ctx.s.decks = {d: ctx.s.decks.get(d, DeckLife(since=ctx.s.now)) for d in labels}
    ctx.s.last_activity = ctx.s.now
    progressive.seed_meters(ctx)
    ctx.emit(
        "table.opened",
        ctx.rule("open"),
        {
            "chapter": ctx.spec.chapter,
            "game": ctx.spec.name,
            "seats": ctx.seats,
            # What the table deals by now (.13(g)): a mark outlasts the close, so the fallback that took over, or
            # none (null, the `no_method` block) as `device.out_of_order` says it; not the method configured.
            "dealing_method": usable_method(ctx.setup.method, ctx.opts.fallback_dealing_method, ctx.s.out_of_order),
            "out_of_order": dict(ctx.s.out_of_order),  # device -> what took over, until marked back in service
            "decks": list(labels),
            "decks_rule": ctx.rule("3(b)") if ctx.opts.decks == "two_decks" else ctx.rule("3(a)"),
            "cards_preinspected": ctx.opts.cards_preinspected,
            # .4(e): decks preinspected and reshuffled under 603a.16(u)/(v) need no opening inspection; else .4(a).
            "inspection_rule": ctx.rule("4(e)") if ctx.opts.cards_preinspected else ctx.rule("4(a)"),
        },
    )
    if not ctx.opts.cards_preinspected:
        # .4(a): the dealer inspects the cards, the floorperson verifies; only then the first shuffle.
        ctx.s.blocks["inspection"] = "the opening inspection of the cards: dealer, verified by the floorperson"
        ctx.s.confirmed = set()
        ctx.s.phase = Phase.OPENING
        ctx.s.block_reason = ctx.reasons()
        ctx.emit(
            "cards.inspection_requested",
            ctx.rule("4(a)"),
            {
                "decks": list(labels),
                "by": ["dealer", "floorperson"],
                "reason": "the table opens: the dealer inspects the cards and the floorperson verifies",
            },
        )
        return
    boundary.start_shuffle(ctx)


def close_table(ctx: StepContext, inp: CloseTable) -> None:
    asked = {} if inp.by is None else {"by": inp.by}
    if ctx.s.phase is Phase.CLOSED:
        ctx.ignored("close table", "the table is already closed")
    elif ctx.s.phase in (Phase.SHUFFLING, Phase.BETTING, Phase.BLOCKED, Phase.OPENING):
        if ctx.s.round:  # no cards are out: wagers on the layout go back to their players
            for n, st in sorted(ctx.s.round.seats.items()):
                for spot, amount in sorted(st.wagers.items()):
                    ctx.emit(
                        "wager.returned",
                        ctx.rule("7(c)"),
                        {"seat": n, "spot": spot, "amount": amount, "reason": "the table closed"},
                    )
                    accounts.give_back(ctx, n, spot, amount, ctx.rule("7(c)"), "the table closed")
        boundary.closed(ctx, asked)
    elif ctx.s.closing:
        # Asked again (a supervisor after the dealer's Ctrl-C): the first asker stands, and the second is told who.
        # None: asked without a name (the demo's people), or stored by older software (controller/store/snapshot.py).
        who = f"asked by {ctx.s.closing_by}" if ctx.s.closing_by else "who asked is not recorded"
        ctx.ignored(
            "close table",
            f"the table is already closing after round {ctx.r.number}, {who}: the close stands as asked, the table "
            "closes when the round is complete",
        )
    else:
        ctx.s.closing = True
        ctx.s.closing_by = inp.by  # for the table.closed once the round is complete
        ctx.emit("table.closing", None, {"after_round": ctx.r.number, **asked})


def shuffle_completed(ctx: StepContext, inp: ShuffleCompleted) -> None:
    if ctx.s.phase is not Phase.SHUFFLING or ctx.manual_shuffle():
        ctx.ignored(
            "shuffle completed",
            "no shuffle was asked for" if not ctx.manual_shuffle() else "the shuffler is out of order (.13(g))",
        )
        return
    if ctx.opts.shuffler_counts and inp.card_count != 52:
        # .5(b): a counting shuffler that finds other than 52 cards: the deck leaves the table.
        _remove_deck(ctx, inp.card_count, f"shuffler counted {inp.card_count} cards")
        return
    problems = deck_problems(inp.order) if inp.order else []
    if problems:
        # The order the layout is laid from when dealing from the hand is not a deck of 603a.15(a)-(c) (a card of
        # another deck, read twice): 52 counted, yet a card would be dealt twice. The deck leaves the table as on a
        # miscount (.5(b)) before any wager is taken on it, counting shuffler or not.
        why = "; ".join(problems)
        _remove_deck(
            ctx, inp.card_count, f"the shuffler's card order is not a deck of 52 cards (603a.15(a)-(c)): {why}"
        )
        return
    if ctx.method == "hand" and len(inp.order) != 52:
        ctx.s.blocks["shuffle_order"] = (
            "dealing from the hand needs the shuffler's card order, and it gave "
            "none: use a card-reading shuffler or another dealing method"
        )
        ctx.s.phase = Phase.BLOCKED
        ctx.s.block_reason = ctx.reasons()
        ctx.emit("table.blocked", None, {"reason": ctx.s.block_reason, "reasons": dict(ctx.s.blocks)})
        return
    ctx.s.deck_order = list(inp.order)
    ctx.s.failed_shuffles = 0  # the failures counted toward .13(g) are those in a row
    payload: dict[str, Any] = {
        "card_count": inp.card_count if ctx.opts.shuffler_counts else None,
        "deck_in": "shoe" if ctx.method != "hand" else "dealer's hand",
    }
    if ctx.opts.decks == "two_decks":
        payload["deck"] = ctx.s.next_deck
    ctx.emit("shuffle.completed", ctx.rule("count") if ctx.opts.shuffler_counts else ctx.rule("shuffle"), payload)
    after_shuffle(ctx)


def _remove_deck(ctx: StepContext, card_count: int, why: str) -> None:
    ctx.s.blocks["deck_removed"] = f"{why}; a new deck must be verified"
    ctx.s.phase = Phase.BLOCKED
    ctx.s.block_reason = ctx.reasons()
    ctx.emit(
        "deck.removed",
        ctx.rule("count"),
        {"card_count": card_count, "deck": ctx.s.next_deck, "reason": ctx.s.blocks["deck_removed"]},
    )


def after_shuffle(ctx: StepContext) -> None:
    if ctx.s.closing:
        boundary.closed(ctx)
    elif ctx.s.blocks:
        ctx.enter_blocked()
    else:
        betting.open_betting(ctx)


def manual_shuffle_done(ctx: StepContext, who: str) -> None:
    if not ctx.manual_shuffle():
        ctx.refused(
            "shuffled",
            "the shuffler is not marked out of order: no other method of shuffling may be used (.13(g))",
            ctx.rule("13(g)"),
        )
        return
    if ctx.s.phase is not Phase.SHUFFLING or who != "dealer":
        ctx.ignored("shuffled", "no manual shuffle is awaited from the dealer")
        return
    ctx.s.deck_order = []
    ctx.emit(
        "shuffle.completed",
        ctx.rule("5(c)(2)"),
        {
            "card_count": None,
            "device": "manual",
            "cut": ctx.rule("5(d)"),
            "deck_in": "shoe" if ctx.method != "hand" else "dealer's hand",
        },
    )
    after_shuffle(ctx)
