"""Decisions: each seat asked clockwise, decision wagers, folds, ride or withdraw, the reveal after each
decision, and a player who leaves during the round (.7(b))."""

from __future__ import annotations

from typing import Any, Literal

from controller.core.money import fmt
from controller.engine import accounts, players, settling
from controller.engine.context import StepContext, area_of
from controller.engine.spec import Decision
from controller.engine.state import Phase
from drivers.interfaces import TERMINAL_SPOTS


def current_decision(ctx: StepContext) -> Decision | None:
    if ctx.s.phase is not Phase.DECISION or ctx.s.round is None:
        return None
    return ctx.setup.decisions[ctx.r.decision]


def next_decision(ctx: StepContext, after: int | None = None) -> None:
    """Ask the next seat clockwise, or reveal and move on when everyone has decided."""
    r = ctx.r
    d = ctx.setup.decisions[r.decision]
    waiting = [n for n in r.in_play() if after is None or r.players.index(n) > r.players.index(after)]
    if waiting:
        r.turn = waiting[0]
        ask(ctx, waiting[0], d)
        return
    r.turn = None
    if d.reveal:
        area, index = area_of(d.reveal)
        card = r.areas.get(area, [])[(index or 1) - 1]
        r.revealed.append(d.reveal)
        ctx.emit(
            "community.revealed" if area == "community" else f"{area}.revealed",
            d.reveal_rule,
            {"index": index, "after": d.name},
            {"card": card},
        )
    if r.decision + 1 < len(ctx.setup.decisions):
        r.decision += 1
        next_decision(ctx)
    else:
        settling.settle(ctx)


def ask(ctx: StepContext, seat: int, d: Decision, reissued: bool = False) -> None:
    """`decision.requested`: the seat's turn to decide, with the amounts it may put out."""
    payload: dict[str, Any] = {"seat": seat, "decision": d.key, "street": d.name, "spot": d.spot, "kind": d.kind}
    if reissued:
        payload["reissued"] = True
    if d.kind == "wager_or_fold":
        payload["allowed"] = list(ctx.spec.allowed(ctx.rules, d, ctx.r.seats[seat].wagers))
    ctx.emit("decision.requested", d.rule, payload)


def decision_wager(ctx: StepContext, seat: int, amount: int, base: dict[str, Any], d: Decision) -> None:
    r = ctx.r
    if seat != r.turn:
        ctx.emit(
            "wager.rejected",
            d.rule,
            {**base, "reason": f"seat {r.turn} is deciding; seat {seat} must wait for its turn"},
        )
        return
    allowed = list(ctx.spec.allowed(ctx.rules, d, r.seats[seat].wagers))
    if amount not in allowed:
        ctx.emit("wager.rejected", d.rule, {**base, "reason": "must be one of " + ", ".join(map(fmt, allowed))})
        return
    r.seats[seat].wagers[d.spot] = amount
    first = ctx.spec.main_wagers[0]
    ante = r.seats[seat].wagers.get(first, 0)
    payload: dict[str, Any] = {"seat": seat, "street": d.name, "decision": d.key, "amount": amount}
    if ante:
        payload["multiple"] = amount // ante
    ctx.emit("street_wager.placed", d.rule, payload)
    next_decision(ctx, after=seat)


def button_decision(ctx: StepContext, button: str) -> None:
    d = current_decision(ctx)
    seat = ctx.s.round.turn if ctx.s.round else None
    if d is None or seat is None:
        ctx.ignored(button, "no decision is awaited")
        return
    st = ctx.r.seats[seat]
    if button == "fold" and d.kind == "wager_or_fold":
        st.folded_on = d.key
        st.collected = {w: st.wagers.pop(w) for w in ctx.spec.main_wagers if w in st.wagers}
        optional = sorted(w for w in st.wagers)
        ctx.emit(
            "seat.folded",
            d.rule,
            {
                "seat": seat,
                "street": d.name,
                "decision": d.key,
                "collected": dict(st.collected),
                # With an optional wager the cards stay on the table until it is settled.
                "cards": "left on the table" if optional else "to the discard rack",
                "optional_wagers_pending": optional,
            },
        )
    elif button in ("withdraw", "let_it_ride") and d.kind == "ride_or_withdraw":
        if button == "withdraw":
            st.withdrawn[d.spot] = st.wagers.pop(d.spot)
        ctx.emit(
            "bet.withdrawn" if button == "withdraw" else "bet.rides",
            d.rule,
            {
                "seat": seat,
                "decision": d.key,
                "bet": d.spot,
                "amount": st.withdrawn.get(d.spot) or st.wagers.get(d.spot),
            },
        )
    else:
        ctx.ignored(button, f"not an answer to {d.name}")
        return
    next_decision(ctx, after=seat)


def player_left(ctx: StepContext, seat: int) -> None:
    """The player at this seat left the table (.7(b)): every box the player wagered on is abandoned."""
    r = ctx.s.round
    if r is None or seat not in r.seats:
        ctx.ignored(f"player left seat {seat}", "no wager of that seat is in play")
        return
    if ctx.s.phase is Phase.BETTING:  # no card yet: the wagers come off the layout for the player
        for n in players.boxes_of(ctx, seat):
            st = r.seat(n)
            for spot, amount in sorted(st.wagers.items()):
                ctx.emit(
                    "wager.returned",
                    ctx.rule("7(c)"),
                    {"seat": n, "spot": spot, "amount": amount, "reason": "the player left before the deal"},
                )
                accounts.give_back(ctx, n, spot, amount, ctx.rule("7(c)"), "the player left before the deal")
            st.wagers.clear()
        return
    boxes = [n for n in players.boxes_of(ctx, seat) if n in r.players and n not in r.left and r.seats[n].wagers]
    if not boxes:
        ctx.ignored(f"player left seat {seat}", "no live wager of that seat is in play")
        return
    turn = r.turn
    for n in boxes:
        _abandon(ctx, n)
    if ctx.s.phase is Phase.DECISION and turn in boxes:
        next_decision(ctx, after=turn)


def release_held(ctx: StepContext, seat: int, to: Literal["player", "house"]) -> None:
    """The wagers held for the player who left this seat (.7(b)) leave the hold, at any moment (they are off the
    layout): back to the player, or collected by the house as the losing wagers .7(b) allows them to be."""
    held = ctx.s.held_wagers.pop(seat, None)
    if not held:
        ctx.ignored(f"release held wagers of seat {seat}", "no wager is held for that seat")
        return
    ctx.emit(
        "held_wagers.released",
        ctx.rule("7(b)"),
        {
            "seat": seat,
            "to": to,
            "wagers": dict(sorted(held.items())),
            "amount": sum(held.values()),
            "remedy": "given back to the player who left" if to == "player" else "treated as losing wagers",
        },
    )


def _abandon(ctx: StepContext, seat: int) -> None:
    r = ctx.r
    st = r.seats[seat]
    how = ctx.opts.abandoned_wagers
    wagers = dict(st.wagers)
    r.left[seat] = how
    st.wagers.clear()
    # A wager made from a game account (the Five Card Hand Bonus) has no chips on the layout to hold: held, it goes
    # back to the account it was debited from (605a.2(d)(2)), where the player cashes it out; lost, the debit made
    # when it was placed already collected it (605a.2(d)(2): "collect losing wagers from the game account").
    to_account = {spot: a for spot, a in wagers.items() if how == "hold" and spot in TERMINAL_SPOTS}
    kept = {spot: a for spot, a in wagers.items() if spot not in to_account}
    st.collected.update(kept)  # not the account's: a later void must not give it back a second time
    if how == "hold":
        held = ctx.s.held_wagers.setdefault(seat, {})
        for spot, amount in kept.items():
            held[spot] = held.get(spot, 0) + amount
        if not held:
            del ctx.s.held_wagers[seat]
    payload: dict[str, Any] = {
        "seat": seat,
        "disposition": how,
        "wagers": wagers,
        "phase": str(ctx.s.phase),
        "remedy": "treated as losing wagers and collected"
        if how == "lose"
        else "held for the player; the hand takes no further part",
    }
    if to_account:
        payload["to_account"] = to_account
    if (player := players.player_of(ctx, seat)) is not None:
        payload["player"] = player
    ctx.emit("wagers.abandoned", ctx.rule("7(b)"), payload)
    why = "the player left; the abandoned wager is held for him in his game account"
    for spot, amount in sorted(to_account.items()):
        accounts.give_back(ctx, seat, spot, amount, ctx.rule("7(b)"), why)
