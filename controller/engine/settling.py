"""Settlement: the chapter's settlement, each seat's events counterclockwise from the dealer's right (the meter
awards taken at each winner's turn), and the round's completion, held while a jackpot awaits validation."""

from __future__ import annotations

import re
from typing import Any

from controller.core.settlement import RoundRecord, Settled
from controller.engine import accounts, boundary, jackpot, link, players, progressive
from controller.engine.context import StepContext
from controller.engine.spec import RoundView, SeatView

_CITATION = re.compile(r"[0-9]{3}a\.[0-9]+(?:\([a-z0-9]+\))+")


def view(ctx: StepContext) -> RoundView:
    """What the chapter sees of the round: the seats still in it (not those whose player left, .7(b): his wagers
    were lost or held when he left, so no settlement, nor 683a.13(d)'s on a void, settles them again), the layout,
    the meters as they stand."""
    r = ctx.r
    return RoundView(
        round_id=r.round_id,
        seats=tuple(
            SeatView(
                n,
                tuple(r.seats[n].cards),
                {**r.seats[n].collected, **r.seats[n].withdrawn, **r.seats[n].wagers},
                r.seats[n].folded_on,
                frozenset(r.seats[n].withdrawn),
                players.player_of(ctx, n),
            )
            for n in r.players
            if n not in r.left
        ),
        areas={k: tuple(v) for k, v in r.areas.items()},
        meters=progressive.meter_values(ctx),
        meter_carry_micro=progressive.meter_carry(ctx),
        meters_at_turn={k: a.meter_before_cents for k, a in r.link_awards.items()},
        meters_after_turn={k: a.meter_after_cents for k, a in r.link_awards.items() if a.meter_after_cents is not None},
        exposed=r.exposed,
        magic_card=r.magic_card,
        lucky_seat=r.lucky_seat,
    )


def settle(ctx: StepContext) -> None:
    """Counterclockwise from the dealer's right, through the chapter's own settlement."""
    table = view(ctx)
    rows, _ = ctx.spec.settle(ctx.rules, table) if table.seats else ([], {})
    if link.claims_waiting(ctx, rows):
        return  # a linked hit: settled once the link answers the claim (LinkAnswered, round.py)
    record = ctx.spec.record(ctx.rules, table) if table.seats else None
    rows = progressive.take_hits(ctx, rows)  # each meter award at that seat's turn, from the meter model
    revealed: set[str] = set()
    last = {x.seat: i for i, x in enumerate(rows)}
    for seat in sorted(last, key=last.__getitem__):  # in the order each seat's settlement completed
        mine = [x for x in rows if x.seat == seat]
        main = [x for x in mine if x.wager in ctx.spec.main_wagers]
        if main and not ctx.r.seats[seat].folded:  # a fold's wagers were collected and reported at the fold
            _hand_settled(ctx, seat, main)
        for x in mine:
            if x.wager not in ctx.spec.main_wagers:
                emit_settled(ctx, x, revealed)
    accounts.publish_bonuses(ctx)
    jackpot.credit_accounts(ctx, rows)
    if record is not None:
        recorded(ctx, record)
    done = _completion(ctx, rows)
    if jackpot.hold_for_jackpot(ctx, done):
        return  # round.completed once every hit is validated (controller/engine/jackpot.py)
    ctx.emit("round.completed", ctx.rule("complete"), done)
    boundary.round_over(ctx)


def recorded(ctx: StepContext, record: RoundRecord) -> None:
    """`round.recorded`: the round as `tablectl settle` reads it (docs/settle.md), players and meters included, so a
    dispute recomputes it from the journal (`tablectl settle --journal`); the chapter keeps the cards "in a manner
    that permits the reconstruction of each hand" (the round's completion rule, e.g. 683a.11(j))."""
    ctx.emit("round.recorded", ctx.rule("complete"), {"record": record.model_dump(mode="json", exclude_none=True)})


def _hand_settled(ctx: StepContext, seat: int, main: list[Settled]) -> None:
    """`hand.settled`: the seat's main wagers, settled together."""
    r = ctx.r
    limit_rule = next((m.group(0) for x in main if x.note and (m := _CITATION.search(x.note))), None)
    # A withdrawn bet (643a.11(b)) has no hand: the riding bets' row says how the hand settled.
    lead = next((x for x in main if x.outcome != "withdrawn"), main[0])
    payload: dict[str, Any] = {
        "seat": seat,
        "cards": r.seats[seat].cards,
        "community": r.areas.get("community", []),
        "hand": lead.hand,
        "paytable": lead.paytable,
        "payout_limited": limit_rule is not None,
        "payout_limit_rule": limit_rule,
        "wagers": [_wager(x) for x in main],
        "paid": sum(x.paid for x in main),
    }
    if "dealer" in r.areas:  # 679a, 684a: the hand played against the dealer's
        payload["dealer"] = r.areas["dealer"]
    ctx.emit("hand.settled", lead.rule, payload)


def _completion(ctx: StepContext, rows: list[Settled]) -> dict[str, Any]:
    """round.completed's payload: the table's result, with the abandoned wagers of players who left (.7(b))."""
    r = ctx.r
    paid, collected = sum(x.paid for x in rows), sum(x.collected for x in rows)
    done: dict[str, Any] = {
        "round_no": r.number,
        "players": list(r.players),
        "areas": {k: list(v) for k, v in r.areas.items()},
        "paid": paid,
        "collected": collected,
        "table_result": collected - paid,
    }
    if r.left:  # .7(b): abandoned wagers, collected as losing or held for the player
        done["abandoned"] = {
            str(n): {"disposition": how, "wagers": dict(r.seats[n].collected)} for n, how in sorted(r.left.items())
        }
        lost = sum(sum(r.seats[n].collected.values()) for n, how in r.left.items() if how == "lose")
        done["collected"] = collected + lost
        done["table_result"] = collected + lost - paid
    return done


def emit_settled(ctx: StepContext, x: Settled, revealed: set[str]) -> None:
    """`<wager>.settled` for a wager settled on its own, after revealing the cards it needs (655a.11(i)(4))."""
    r = ctx.r
    if x.wager in ctx.spec.reveal_before and x.wager not in revealed:
        revealed.add(x.wager)
        event, rule, area = ctx.spec.reveal_before[x.wager]
        ctx.emit(event, rule, {"cards": r.areas.get(area, [])})
    payload: dict[str, Any] = {
        "seat": x.seat,
        "cards": r.seats[x.seat].cards,
        "hand": x.hand,
        "paytable": x.paytable,
        **_wager(x),
    }
    if progressive.meter_award(ctx, x) is not None:
        # A share of a meter is paid like "N for 1" odds (655a.12(c)(1)): `paid` is the award less the wager, which
        # is `returned`; `award`, their sum, is the figure progressive.hit and the link's claim answer name.
        payload["award"] = x.paid + x.returned
    if x.note:
        payload["note"] = x.note
    ctx.emit(f"{x.wager}.settled", x.rule, payload)


def _wager(x: Settled) -> dict[str, Any]:
    return {
        "wager": x.wager,
        "amount": x.amount,
        "outcome": x.outcome,
        "odds": x.odds,
        "paid": x.paid,
        "returned": x.returned,
        "collected": x.collected,
    }
