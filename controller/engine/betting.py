"""Betting: the wager stations unlocked, wagers taken, "no more bets" and the lock-out (.7(c), .8(b), .9(a)(3),
.10(a)(2)); once every lock is confirmed, the chip count (controller/engine/chip_count.py) or the deal."""

from __future__ import annotations

from typing import Any

from controller.core.money import fmt
from controller.engine import accounts, chip_count, decisions, progressive
from controller.engine.commands import LockSeat, LockTerminal, UnlockSeat, UnlockTerminal
from controller.engine.context import StepContext
from controller.engine.state import Phase, RoundState
from drivers.interfaces import TERMINAL_SPOTS, LockAcknowledged, WagerDetected

# Blocks that stop a round already in betting from being dealt (others only stop the next round). The shuffler is
# not among them: the round's deck was shuffled before betting opened.
_STOPS_DEALING = ("device:shoe", "no_method", "deck_removed", "shuffle_order")


def open_betting(ctx: StepContext) -> None:
    """Unlock every wager station; betting opens once all have confirmed, so that no chips meet a
    station still locked from the last round."""
    n = ctx.s.rounds_played + 1
    ctx.s.rounds_played = n
    ctx.s.round = RoundState(
        number=n, round_id=f"{ctx.s.table_id}-r{n:06d}", deck=ctx.s.next_deck, deck_counted=ctx.shuffler_counts()
    )
    ctx.s.phase = Phase.BETTING
    # A station that cannot be reached cannot open; its seat simply takes no wagers until it is back.
    ctx.r.unlocks_pending = set(range(1, ctx.seats + 1)) - set(ctx.s.stations_down)
    for seat in sorted(ctx.r.unlocks_pending):
        ctx.command(UnlockSeat(seat))
    # The terminals open with the stations; a terminal still locked refuses a wager itself (WagerRefused).
    accounts.unlock_terminals(ctx)
    if not ctx.r.unlocks_pending:
        betting_opened(ctx)


def betting_opened(ctx: StepContext) -> None:
    first = next(iter(ctx.setup.offers.values()))
    ctx.emit(
        "betting.opened",
        ctx.rule("betting"),
        {
            "round_no": ctx.r.number,
            "seats": ctx.seats,
            "wagers_offered": list(ctx.setup.offers),
            "ante_min": first.min_cents,
            "ante_max": first.max_cents,
        },
    )


def wager(ctx: StepContext, inp: WagerDetected) -> None:
    seat, spot, amount = inp.seat, inp.spot, inp.amount_cents
    base = {"seat": seat, "spot": spot, "amount": amount}
    if not 1 <= seat <= ctx.seats:
        ctx.emit("wager.rejected", ctx.rule("seat"), {**base, "reason": f"no seat {seat} at this table"})
        return
    at_terminal = accounts.terminal_seat(inp.device_id) is not None
    if (spot in TERMINAL_SPOTS) != at_terminal:
        # 655a.7(d)(5), 643a.7(i), 605a.2(a): the Five Card Hand Bonus is made on the seat's electronic wagering
        # device, and only there; chips on the layout are not a terminal's wager, nor is a terminal a wager station.
        where = "at the seat's electronic wagering terminal" if spot in TERMINAL_SPOTS else "on the layout"
        ctx.emit("wager.rejected", ctx.rule("7(c)"), {**base, "reason": f"a {spot} wager is made {where}"})
        return
    d = decisions.current_decision(ctx)
    if d is not None and d.kind == "wager_or_fold" and spot == d.spot:
        decisions.decision_wager(ctx, seat, amount, base, d)
    elif spot in ctx.setup.offers or ctx.s.phase is Phase.BETTING:
        pre_deal_wager(ctx, seat, spot, amount, base)
    else:
        ctx.emit(
            "wager.rejected",
            ctx.rule("7(c)"),
            {**base, "reason": "not a wager the table takes now: a decision wager is made when the dealer asks"},
        )


def pre_deal_wager(ctx: StepContext, seat: int, spot: str, amount: int, base: dict[str, Any]) -> None:
    if ctx.s.phase is not Phase.BETTING:
        ctx.emit(
            "wager.rejected",
            ctx.spec.terminal_lock_rule() if spot in TERMINAL_SPOTS else ctx.rule("7(c)"),
            {**base, "reason": 'placed after "no more bets" or outside betting: not counted'},
        )
        if spot in TERMINAL_SPOTS:
            accounts.show(ctx, seat, "no more bets: wager refused")
        return
    offer = ctx.setup.offers.get(spot)
    if offer is None:
        ctx.emit("wager.rejected", ctx.rule("7(c)"), {**base, "reason": f"this table does not offer a {spot} wager"})
        return
    refusal = progressive.progressive_refusal(ctx, spot, amount)
    if refusal is not None:
        ctx.emit("wager.rejected", offer.rule, {**base, "reason": refusal})
        return
    if spot in TERMINAL_SPOTS:
        if amount and not offer.min_cents <= amount <= offer.max_cents:
            why = f"outside the table limits {fmt(offer.min_cents)} to {fmt(offer.max_cents)}"
            ctx.emit("wager.rejected", offer.rule, {**base, "reason": why})
            accounts.show(ctx, seat, f"wager refused: {why}")
            return
        accounts.terminal_wager(ctx, seat, spot, amount, base, offer.rule)
        return
    wagers = ctx.r.seat(seat).wagers
    if amount == 0:
        if wagers.pop(spot, 0):
            ctx.emit("wager.withdrawn", ctx.rule("7(c)"), base)
        return
    if not offer.min_cents <= amount <= offer.max_cents:
        ctx.emit(
            "wager.rejected",
            offer.rule,
            {**base, "reason": f"outside the table limits {fmt(offer.min_cents)} to {fmt(offer.max_cents)}"},
        )
        return
    wagers[spot] = amount  # the sensor reports the chips on the spot, so the latest reading stands
    ctx.emit("wager.accepted", offer.rule, base)


def dealing_stopped(ctx: StepContext) -> tuple[str, dict[str, Any]] | None:
    """What "no more bets" is refused with (the rule, the payload) while a block stops the round in betting from being
    dealt, or None: one source for the refusal itself and for the restart that says it is pending (recovery)."""
    stops = {k: v for k, v in ctx.s.blocks.items() if k.startswith(_STOPS_DEALING)}
    if not stops:
        return None
    # No card order to deal from the hand (the shoe covered in betting): .9(a)(1), not a device's .13(g).
    rule = ctx.rule("9(a)(1)") if list(stops) == ["shuffle_order"] else ctx.rule("13(g)")
    return rule, {"reason": "the cards cannot be dealt: " + "; ".join(stops.values()), "blocks": sorted(stops)}


def no_more_bets(ctx: StepContext) -> None:
    """The dealer's "no more bets": every station locked before the first card, its lock confirmed (.7(c))."""
    if ctx.s.phase is not Phase.BETTING:
        ctx.ignored("no more bets", "betting is not open")
        return
    stopped = dealing_stopped(ctx)
    if stopped is not None:
        ctx.emit("no_more_bets.refused", *stopped)
        return
    r = ctx.r
    players = _players(ctx)
    if not players:
        ctx.emit(
            "no_more_bets.refused",
            ctx.rule("player"),
            {"reason": "no player has made the wagers that enter a round"},
        )
        return
    unlockable = sorted(n for n in players if n in ctx.s.stations_down)
    if unlockable:
        # The lock-out of a station that cannot be reached cannot be confirmed, and its wagers stand on it.
        ctx.emit(
            "no_more_bets.refused",
            ctx.lock_rule(),
            {
                "reason": "the wager station of seat(s) " + ", ".join(map(str, unlockable)) + " cannot confirm its "
                "lock-out (" + "; ".join(ctx.s.stations_down[n] for n in unlockable) + "): bring it back",
                "seats": unlockable,
            },
        )
        return
    r.players = players
    ctx.s.phase = Phase.LOCKING
    r.locks_pending = set(range(1, ctx.seats + 1)) - set(ctx.s.stations_down)
    payload: dict[str, Any] = {"players": players, "wagers": {str(n): dict(r.seats[n].wagers) for n in players}}
    bound = {str(p): seats for p, seats in sorted(ctx.s.bound.items()) if set(seats) & set(players)}
    if bound:
        payload["bound"] = bound  # the boxes each bound player wagers on this round (643a.7(k), 683a.7(e))
    ctx.emit("no_more_bets", ctx.lock_rule(), payload)
    for seat in sorted(r.locks_pending):
        ctx.command(LockSeat(seat))
    # 655a.2(d), 643a.2(e): the electronic wagering system's lock-out, confirmed by each terminal like the stations.
    r.terminal_locks_pending = accounts.lock_terminals(ctx)
    if not r.locks_pending and not r.terminal_locks_pending:
        locks_complete(ctx)


def _players(ctx: StepContext) -> list[int]:
    """The seats whose wagers make a player (clockwise); the wagers of a seat that is not a player go back."""
    players = []
    for n, st in sorted(ctx.r.seats.items()):
        if not st.wagers:
            continue
        why = ctx.spec.player_problem(st.wagers)
        if why is None:
            players.append(n)
            continue
        for spot, amount in sorted(st.wagers.items()):  # not a player: everything goes back
            offer = ctx.setup.offers.get(spot)
            _give_back(ctx, n, spot, amount, offer.rule if offer else ctx.rule("player"), why)
        st.wagers.clear()
    return players


def return_standing(ctx: StepContext, rule: str, why: str) -> None:
    """Every wager on the layout goes back before "no more bets" (a floorperson's reshuffle, .5(a)): none was locked,
    so no round of play began and there is nothing to void (.13's voids are "during a round of play")."""
    for n, st in sorted(ctx.r.seats.items()):
        for spot, amount in sorted(st.wagers.items()):
            _give_back(ctx, n, spot, amount, rule, why)
        st.wagers.clear()


def _give_back(ctx: StepContext, seat: int, spot: str, amount: int, rule: str, why: str) -> None:
    ctx.emit("wager.returned", rule, {"seat": seat, "spot": spot, "amount": amount, "reason": why})
    accounts.give_back(ctx, seat, spot, amount, rule, why)


def lock_acknowledged(ctx: StepContext, inp: LockAcknowledged) -> None:
    if accounts.terminal_seat(inp.device_id) is not None:
        _terminal_lock(ctx, inp)
        return
    if not inp.locked:
        if ctx.s.phase is Phase.BETTING and ctx.r.unlocks_pending:
            ctx.r.unlocks_pending.discard(inp.seat)
            if not ctx.r.unlocks_pending:
                betting_opened(ctx)
        return
    if ctx.s.phase is not Phase.LOCKING:
        return  # a repeated confirmation after dealing began changes nothing
    ctx.r.locks_pending.discard(inp.seat)
    if not ctx.r.locks_pending and not ctx.r.terminal_locks_pending:
        locks_complete(ctx)


def _terminal_lock(ctx: StepContext, inp: LockAcknowledged) -> None:
    """A terminal's confirmation: its lock-out (655a.2(d), 643a.2(e)) counts toward the deal like a station's."""
    if not inp.locked or ctx.s.phase is not Phase.LOCKING:
        return
    ctx.r.terminal_locks_pending.discard(inp.seat)
    if not ctx.r.locks_pending and not ctx.r.terminal_locks_pending:
        locks_complete(ctx)


def locks_complete(ctx: StepContext) -> None:
    down = sorted(ctx.s.stations_down)
    payload: dict[str, Any] = {"stations": ctx.seats - len(down)}
    if down:
        payload["unreachable"] = down  # no wagers at those seats; they are locked when they come back
    if ctx.setup.terminals:
        payload["terminals"] = ctx.seats - len(ctx.s.terminals_down)
        if ctx.s.terminals_down:
            payload["terminals_unreachable"] = sorted(ctx.s.terminals_down)
    ctx.emit("lockout.confirmed", ctx.lock_rule(), payload)
    progressive.contribute_wagers(ctx)  # the progressive wagers are collected now (655a.8(b), 643a.8(b)(2))
    accounts.draw_bonuses(ctx)  # the fixed point of the draws: locked out, no card yet (docs/accounts.md)
    chip_count.reconcile_or_deal(ctx)


def terminal_down(ctx: StepContext, seat: int, why: str) -> None:
    """A terminal unreachable: the account is the controller's, so nothing is lost; no wager can come from it, so
    the deal does not wait for its lock (it is locked when it comes back, past "no more bets")."""
    if seat in ctx.s.terminals_down or not 1 <= seat <= ctx.seats:
        return
    ctx.s.terminals_down[seat] = why
    r = ctx.s.round
    if r is not None and ctx.s.phase is Phase.LOCKING and seat in r.terminal_locks_pending:
        r.terminal_locks_pending.discard(seat)
        if not r.locks_pending and not r.terminal_locks_pending:
            locks_complete(ctx)


def terminal_back(ctx: StepContext, seat: int) -> None:
    if ctx.s.terminals_down.pop(seat, None) is None:
        return
    if ctx.s.phase is Phase.BETTING:
        ctx.command(UnlockTerminal(seat))
    else:
        ctx.command(LockTerminal(seat))
    accounts.show(ctx, seat, "balance")


def station_down(ctx: StepContext, seat: int, why: str) -> None:
    if seat in ctx.s.stations_down or not 1 <= seat <= ctx.seats:
        return
    ctx.s.stations_down[seat] = why
    r = ctx.s.round
    if r is None:
        return
    has_wagers = bool(r.seats.get(seat) and r.seats[seat].wagers)
    if ctx.s.phase is Phase.BETTING and seat in r.unlocks_pending:
        r.unlocks_pending.discard(seat)
        if not r.unlocks_pending:
            betting_opened(ctx)
    elif ctx.s.phase is Phase.LOCKING and seat in r.locks_pending:
        if has_wagers:
            # Its chips are on the layout and its lock-out unconfirmed: no card until it answers.
            ctx.emit("lockout.waiting", ctx.lock_rule(), {"seat": seat, "reason": why})
            return
        r.locks_pending.discard(seat)
        if not r.locks_pending:
            locks_complete(ctx)


def station_back(ctx: StepContext, seat: int) -> None:
    if ctx.s.stations_down.pop(seat, None) is None:
        return
    r = ctx.s.round
    if r is None or ctx.s.phase in (Phase.CLOSED, Phase.SHUFFLING, Phase.BLOCKED, Phase.OPENING):
        return
    if ctx.s.phase is Phase.BETTING:
        ctx.command(UnlockSeat(seat))
    else:
        # Past "no more bets" a station must not take a pre-deal wager: it is locked on its return.
        ctx.command(LockSeat(seat))
