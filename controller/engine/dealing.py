"""Dealing: the chapter's deal plan per dealing method, automated-shoe stacks and stub, manual-shoe cards,
the deal from the hand, and the stub count without a counting shuffler (.8(f)-(h), .9(d)-(f), .10(d)-(f));
once every card is out, the decisions (or, with none, the settlement)."""

from __future__ import annotations

from dataclasses import replace

from controller.core.cards import deck_problems
from controller.engine import decisions, settling, voiding
from controller.engine.commands import DispenseStack, RemoveStub
from controller.engine.context import StepContext, area_of, usable_method
from controller.engine.spec import DealPlan
from controller.engine.state import DeckLife, Phase
from drivers.interfaces import CardDrawn, StackDispensed, StubRemoved


def deal_plan(ctx: StepContext) -> DealPlan:
    r = ctx.r
    # The wagers as at "no more bets": a player who left mid-deal (.7(b)) does not change the deal.
    return ctx.spec.plan(
        ctx.rules, ctx.method, r.players, {n: {**r.seats[n].collected, **r.seats[n].wagers} for n in r.players}
    )


def start_dealing(ctx: StepContext) -> None:
    if (
        ctx.r.method is None
        and usable_method(ctx.setup.method, ctx.opts.fallback_dealing_method, ctx.s.out_of_order) is None
    ):
        # No method can deal the round and none was pinned for it (a mark after "no more bets" pins the round's own,
        # controller/engine/other_method.py; its covered shoe voids it there): none of its cards is asked for.
        covered = " and ".join(f"the {d}" for d in sorted(ctx.s.out_of_order))
        voiding.void(ctx, ctx.rule("13(g)"), f"no dealing method can be used: {covered} out of order")
        return
    ctx.s.phase = Phase.DEALING
    life = ctx.s.decks.get(ctx.r.deck, DeckLife(since=ctx.s.now))
    ctx.s.decks[ctx.r.deck] = replace(life, rounds=life.rounds + 1, rounds_since_count=life.rounds_since_count + 1)
    plan = deal_plan(ctx)
    if ctx.method == "hand" and len(ctx.s.deck_order) < len(plan.cards):
        # .9(a)(1): dealing from the hand takes an automated shuffler, and only its card order tells
        # the controller the layout; after a manual shuffle there is none, so this round cannot be
        # dealt from the hand and no round will be until the shuffler is back or a shoe deals. With the shuffler
        # in service (the table turned to the hand from a covered shoe after a shuffle that gave no order) its
        # next shuffle gives one: nothing stops the table.
        if ctx.manual_shuffle():
            ctx.block(
                "no_method",
                "dealing from the hand needs the automated shuffler's card order "
                f"({ctx.rule('9(a)(1)')}): put the shuffler back in service",
            )
        voiding.void(ctx, ctx.rule("9(a)(1)"), "no card order from an automated shuffler to deal from the hand")
        return
    # The method is said where the deal starts: a mark later in the round changes what the table deals by next,
    # not how this round's cards came (the recall reads the round's method here, floor/recall.py).
    first = plan.stacks[0].rule if plan.stacks else plan.rule  # the rule the first card is dealt by
    ctx.emit("deal.started", first, {"dealing_method": ctx.method, "out_of_order": dict(ctx.s.out_of_order)})
    if ctx.method == "automated_shoe":
        ctx.command(DispenseStack(len(plan.stacks[0].targets)))
    elif ctx.method == "hand":
        lay_from_order(ctx, plan)
        ctx.s.phase = Phase.DEALT
        ctx.emit("deal.awaiting_dealer", plan.rule, {"cards": len(plan.cards)})


def lay_from_order(ctx: StepContext, plan: DealPlan) -> None:
    """Dealing from the hand: the deck's order is known, so the layout follows from the chapter's dealing order. A card
    found face up in the deck is not used (.13(a)): the cards after it are dealt one place earlier, so the layout is
    laid again without it."""
    r = ctx.r
    r.dealt.clear()
    r.areas.clear()
    for st in r.seats.values():
        st.cards.clear()
    order = [c for c in ctx.s.deck_order if c not in r.discarded]
    for target, card in zip(plan.cards, order, strict=False):
        place(ctx, target, card, plan.rule)
    r.cards_dealt = len(plan.cards)


def place(ctx: StepContext, target: str, card: str, rule: str) -> None:
    r = ctx.r
    r.dealt.append(card)
    area, index = area_of(target)
    if area.startswith("seat:"):
        seat = int(area[5:])
        r.seats[seat].cards.append(card)
        return
    cards = r.areas.setdefault(area, [])
    if index is None:
        cards.append(card)
    else:
        while len(cards) < index:
            cards.append("")
        cards[index - 1] = card


def stack_dispensed(ctx: StepContext, inp: StackDispensed) -> None:
    if ctx.s.phase is not Phase.DEALING or ctx.method != "automated_shoe":
        ctx.ignored("stack dispensed", "no stack was asked for")
        return
    plan = deal_plan(ctx)
    r = ctx.r
    if r.stacks_dispensed >= len(plan.stacks):
        ctx.ignored("stack dispensed", "every stack of the round is already out")
        return
    stack = plan.stacks[r.stacks_dispensed]
    r.stacks_dispensed += 1
    if len(inp.cards) != len(stack.targets):
        r.dealt.extend(inp.cards)
        voiding.void(ctx, ctx.rule("13(c)"), f"a stack of {len(inp.cards)} cards instead of {len(stack.targets)}")
        return
    for target, card in zip(stack.targets, inp.cards, strict=True):
        place(ctx, target, card, stack.rule)
    report_stack(ctx, stack.targets, list(inp.cards), stack.rule)
    if r.stacks_dispensed < len(plan.stacks):
        ctx.command(DispenseStack(len(plan.stacks[r.stacks_dispensed].targets)))
    else:
        ctx.command(RemoveStub())


def report_stack(ctx: StepContext, targets: tuple[str, ...], cards: list[str], rule: str) -> None:
    """One event per area a stack or hand deal fills: `cards.dealt` for a seat, `<area>.dealt` else."""
    groups: dict[str, list[str]] = {}
    for t, c in zip(targets, cards, strict=True):
        groups.setdefault(area_of(t)[0], []).append(c)
    for area, got in groups.items():
        if area.startswith("seat:"):
            ctx.emit("cards.dealt", rule, {"seat": int(area[5:]), "count": len(got)}, {"cards": got})
        else:
            ctx.emit(f"{area}.dealt", rule, {"count": len(got)}, {"cards": got})


def stub_removed(ctx: StepContext, inp: StubRemoved) -> None:
    if (
        ctx.s.phase is not Phase.DEALING
        or ctx.method != "automated_shoe"
        or ctx.r.stacks_dispensed < len(deal_plan(ctx).stacks)
    ):
        ctx.ignored("stub removed", "the stub was not asked for")
        return
    plan = deal_plan(ctx)
    r = ctx.r
    stub = list(inp.cards)
    problems = deck_problems(r.dealt + r.discarded + stub)
    if problems:
        voiding.void(ctx, ctx.rule("13(c)"), "deck check failed: " + "; ".join(problems))
        return
    hand_dealt, stub = stub[: len(plan.from_stub)], stub[len(plan.from_stub) :]
    for target, card in zip(plan.from_stub, hand_dealt, strict=True):
        place(ctx, target, card, plan.rule)
    if plan.from_stub:
        report_stack(ctx, plan.from_stub, hand_dealt, plan.rule)
    finish_deal(ctx, len(stub))


def card_drawn(ctx: StepContext, inp: CardDrawn) -> None:
    if ctx.s.phase is not Phase.DEALING or ctx.method != "manual_shoe":
        ctx.ignored("card drawn", "no cards are being dealt from a manual shoe")
        return
    plan = deal_plan(ctx)
    r = ctx.r
    if inp.card in r.dealt or inp.card in r.discarded:
        voiding.void(ctx, ctx.rule("13(c)"), f"the shoe gave {inp.card} a second time: the deck is not whole")
        return
    target = plan.cards[r.cards_dealt]
    r.cards_dealt += 1
    place(ctx, target, inp.card, plan.rule)
    ctx.emit("card.dealt", plan.rule, {"to": area_of(target)[0]}, {"card": inp.card})
    if r.cards_dealt == len(plan.cards):
        finish_deal(ctx, 52 - len(r.dealt) - len(r.discarded))


def dealt_confirmed(ctx: StepContext) -> None:
    if ctx.s.phase is not Phase.DEALT:
        ctx.ignored("dealt", "no deal from the hand is awaiting confirmation")
        return
    plan = deal_plan(ctx)
    report_stack(ctx, plan.cards, ctx.r.dealt[: len(plan.cards)], plan.rule)
    finish_deal(ctx, 52 - len(plan.cards) - len(ctx.r.discarded))


def finish_deal(ctx: StepContext, stub: int) -> None:
    """Every card is on the layout: the stub goes to the discard rack, after a count when one is due; a community card
    exposed while dealing voids the round now that the cards it settles are all there (.13(d))."""
    r = ctx.r
    if r.exposed:
        voiding.void_exposed(ctx)
        return
    life = ctx.s.decks.get(r.deck, DeckLife())
    if not ctx.deck_counted() and life.rounds_since_count >= ctx.opts.stub_count_every:
        ctx.s.phase = Phase.STUB_COUNT
        r.stub_rule = ctx.stub_rules()[0]
        r.stub_expected = 52 - len(r.dealt) - len(r.discarded)
        ctx.emit(
            "stub_count.requested",
            r.stub_rule,
            {
                "rounds_since_count": life.rounds_since_count,
                "deck": r.deck,
                "remedy": "count the stub face down on the layout and enter the count",
            },
            {"expected": r.stub_expected},
        )
        return
    ctx.emit("stub.discarded", ctx.stub_discard_rule(), {"count": stub})
    dealing_complete(ctx)


def stub_counted(ctx: StepContext, count: int) -> None:
    r = ctx.r
    if r.stub_entered is not None:
        ctx.ignored("stub count", "the dealer is determining whether the cards were misdealt")
        return
    _, whole, incorrect = ctx.stub_rules()
    total = len(r.dealt) + len(r.discarded) + count
    if total == 52:
        life = ctx.s.decks.get(r.deck, DeckLife())
        ctx.s.decks[r.deck] = replace(life, rounds_since_count=0)
        ctx.emit("stub.counted", whole, {"count": count, "deck_total": 52, "deck": r.deck})
        ctx.emit("stub.discarded", whole, {"count": count})
        r.stub_rule = None
        dealing_complete(ctx)
        return
    r.stub_entered = count
    ctx.emit(
        "stub_count.mismatch",
        incorrect,
        {
            "count": count,
            "deck_total": total,
            "remedy": (
                "the dealer determines whether the cards were misdealt: confirm 'misdeal' (52 cards are "
                "there, void) or 'no_misdeal' (void and the deck leaves the table)"
            ),
        },
    )


def misdeal_determined(ctx: StepContext, misdealt: bool) -> None:
    r = ctx.r
    _, _, incorrect = ctx.stub_rules()
    total = len(r.dealt) + len(r.discarded) + (r.stub_entered or 0)
    if misdealt:
        # The count did not make 52: the dealer's determination is that a misdeal, not a missing card, explains it.
        dealt = len(r.dealt) + len(r.discarded)
        voiding.void(
            ctx,
            incorrect,
            f"the stub count ({r.stub_entered}) and the {dealt} cards dealt make {total}, not 52: the dealer "
            "determined the cards were misdealt and 52 cards remain in the deck",
        )
        return
    ctx.block(
        "deck_removed",
        f"the stub count makes {total} cards and the cards were not misdealt: a new deck must be verified",
    )
    ctx.emit("deck.removed", incorrect, {"card_count": total, "deck": r.deck, "reason": ctx.s.blocks["deck_removed"]})
    voiding.void(
        ctx,
        incorrect,
        f"the stub count makes {total} cards, not 52, and the cards were not misdealt",
        remedy="all wagers returned; the entire deck is removed from the table",
    )


def dealing_complete(ctx: StepContext) -> None:
    ctx.s.phase = Phase.DECISION
    ctx.r.decision = 0
    if not ctx.setup.decisions:
        settling.settle(ctx)
        return
    decisions.next_decision(ctx)
