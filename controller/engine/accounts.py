"""Game accounts at the table (605a.2(d)): buy-ins and cash-outs the dealer confirms at the seat's terminal, the
Five Card Hand Bonus Wager debited when placed and given back when cancelled or voided, wins credited, the
terminals locked at "no more bets" (655a.2(d), 643a.2(e)), and the table game system's random bonus draws.

The ledger (controller.accounts.ledger) is the account of record: every movement is an `account.*` event in the
step that causes it, committed with the engine state and the ledger's two stored copies in one transaction
(docs/accounts.md). Terminals display it (`ShowAccount`); a terminal that goes away loses nothing.
"""

from __future__ import annotations

from typing import Any

from controller.accounts import ledger
from controller.accounts.ledger import LedgerError
from controller.core.digits import is_ascii_digits
from controller.core.money import fmt
from controller.engine.commands import LockTerminal, ShowAccount, UnlockTerminal
from controller.engine.context import StepContext
from controller.engine.inputs import CashOutAccount
from controller.engine.state import AccountRequest, Phase
from drivers.interfaces import TERMINAL_SPOTS, AccountRequested, DealerConfirmed

TERMINAL_PREFIX = "wager_terminal"
OWN_SEAT_RULE = "605a.2(a)"  # wagers made "at each player's electronic wagering terminal"
BUY_IN_RULE = "605a.2(d)(1)"  # credit funds at the buy-in, debit what remains at the cash-out
WAGER_RULE = "605a.2(d)(2)"  # wager from the account, collect losing wagers, credit winnings and the wager
BUY_IN_MEDIA = ("cash", "chips")
CASH_OUT_MEDIA = ("chips", "ticket")
# Phases in which a placed wager is still in play (settlement ends it; a void gives it back).
_IN_PLAY = frozenset(
    {
        Phase.BETTING,
        Phase.LOCKING,
        Phase.RECONCILING,
        Phase.DEALING,
        Phase.DEALT,
        Phase.STUB_COUNT,
        Phase.DECISION,
    }
)


def terminal_seat(device_id: str) -> int | None:
    """The seat of a `wager_terminal_<seat>` device id, else None."""
    prefix, _, seat = device_id.rpartition("_")
    return int(seat) if prefix == TERMINAL_PREFIX and is_ascii_digits(seat) else None


def foreign_seat(ctx: StepContext, device_id: str, seat: int, what: str) -> bool:
    """Whether a terminal spoke for a seat not its own, refused and recorded if so. 605a.1 and 605a.2(a) give each
    player's betting position its own electronic wagering terminal: a wager, a buy-in or cash-out, the dealer's key
    or a lock-out confirmation from seat 1's terminal never moves seat 2's account nor stands for its lock-out, even
    when a driver (a plugin's, or a seat mistyped in its settings) reports the wrong seat."""
    own = terminal_seat(device_id)
    if own is None or own == seat:
        return False
    why = f"{device_id} is seat {own}'s terminal and cannot act for seat {seat}: correct the driver's seat setting"
    ctx.refused(f"{what} from {device_id} for seat {seat}", why, OWN_SEAT_RULE)
    return True


def show(ctx: StepContext, seat: int, message: str) -> None:
    if ctx.setup.terminals and seat not in ctx.s.terminals_down:
        ctx.command(ShowAccount(seat, ctx.s.accounts.balance(seat), message))


def terminal_seats(ctx: StepContext) -> list[int]:
    """The seats whose terminal can be reached (every betting position has one where the wager is offered)."""
    if not ctx.setup.terminals:
        return []
    return [n for n in range(1, ctx.seats + 1) if n not in ctx.s.terminals_down]


def unlock_terminals(ctx: StepContext) -> None:
    for n in terminal_seats(ctx):
        ctx.command(UnlockTerminal(n))


def lock_terminals(ctx: StepContext) -> set[int]:
    """Every reachable terminal locked ("no more bets"); the seats whose confirmation the deal waits for."""
    seats = terminal_seats(ctx)
    for n in seats:
        ctx.command(LockTerminal(n))
    return set(seats)


# -- buy-in and cash-out ------------------------------------------------------------------------------------------


def live_wager(ctx: StepContext, seat: int) -> str | None:
    """Why money of this seat is still in play (a cash-out must wait), or None."""
    r = ctx.s.round
    if r is not None and ctx.s.phase in _IN_PLAY and any(r.seat(seat).wagers.get(spot) for spot in TERMINAL_SPOTS):
        return "a Five Card Hand Bonus Wager of this seat is in play until the round is settled"
    if any(h.seat == seat and h.to_account for h in ctx.s.pending_hits):
        return "a payout of this seat awaits a floorperson's verification"
    return None


def account_requested(ctx: StepContext, inp: AccountRequested) -> None:
    seat, request = inp.seat, inp.request
    what = f"{request} at seat {seat}"
    if not ctx.setup.terminals:
        ctx.refused(what, "this table has no electronic wagering system (it does not offer the wager)", BUY_IN_RULE)
        return
    if not 1 <= seat <= ctx.seats:
        ctx.refused(what, f"no seat {seat} at this table", BUY_IN_RULE)
        return
    base: dict[str, Any] = {"seat": seat, "request": request, "medium": inp.medium}
    if request == "buy_in":
        why = _buy_in_problem(inp)
        amount = inp.amount_cents
    elif request == "cash_out":
        amount = ctx.s.accounts.balance(seat)
        why = _cash_out_problem(ctx, seat, inp.medium)
    else:
        why, amount = f"{request!r} is not a request a terminal makes (buy_in, cash_out)", 0
    if why is not None:
        ctx.emit("account.request_refused", BUY_IN_RULE, {**base, "amount": inp.amount_cents, "reason": why})
        show(ctx, seat, f"{request.replace('_', '-')} refused: {why}")
        return
    ctx.s.account_requests[seat] = AccountRequest(request, amount, inp.medium)
    ctx.emit(
        "account.requested",
        BUY_IN_RULE,
        {**base, "amount": amount, "remedy": "the dealer confirms at the seat's terminal"},
    )
    show(ctx, seat, f"{request.replace('_', '-')} of {fmt(amount)}: awaiting the dealer")


def _buy_in_problem(inp: AccountRequested) -> str | None:
    if inp.medium not in BUY_IN_MEDIA:
        return f"a buy-in is made with {' or '.join(BUY_IN_MEDIA)}, not {inp.medium!r}"
    if not 0 < inp.amount_cents <= ledger.MAX_BUY_IN_CENTS:
        return f"a buy-in is 1 to {ledger.MAX_BUY_IN_CENTS} cents, not {inp.amount_cents}"
    return None


def _cash_out_problem(ctx: StepContext, seat: int, medium: str) -> str | None:
    if medium not in CASH_OUT_MEDIA:
        return f"a cash-out is paid in {' or by '.join(CASH_OUT_MEDIA)}, not {medium!r}"
    allowed = ctx.setup.options.cash_out_media
    if medium not in allowed:
        # The operator's choice (game_account_cash_out): e.g. tickets only where the cage redeems them.
        return f"this table cashes out by {' or '.join(allowed)} only (game_account_cash_out), not by {medium}"
    if live := live_wager(ctx, seat):
        return live
    if ctx.s.accounts.balance(seat) <= 0:
        return "the game account is empty"
    return None


def dealer_confirmed(ctx: StepContext, inp: DealerConfirmed) -> None:
    seat = inp.seat
    pending = ctx.s.account_requests.get(seat)
    what = f"dealer's confirmation of {inp.request} at seat {seat}"
    if pending is None or pending.request != inp.request:
        ctx.refused(what, f"no {inp.request} awaits the dealer at seat {seat}", BUY_IN_RULE)
        return
    del ctx.s.account_requests[seat]
    base: dict[str, Any] = {"seat": seat, "request": pending.request, "medium": pending.medium}
    if not inp.confirmed:
        ctx.emit("account.request_declined", BUY_IN_RULE, {**base, "amount": pending.amount_cents})
        show(ctx, seat, f"{pending.request.replace('_', '-')} declined by the dealer")
        return
    try:
        if pending.request == "buy_in":
            new, payload = ledger.buy_in(ctx.s.accounts, seat, pending.amount_cents)
            event, message = "account.bought_in", f"bought in {fmt(pending.amount_cents)}"
        else:
            if live := live_wager(ctx, seat):
                raise LedgerError(live)
            new, payload = ledger.cash_out(ctx.s.accounts, seat)
            event, message = "account.cashed_out", f"cashed out {fmt(payload['amount'])} in {pending.medium}"
    except LedgerError as err:
        ctx.emit("account.request_refused", BUY_IN_RULE, {**base, "amount": pending.amount_cents, "reason": str(err)})
        show(ctx, seat, f"{pending.request.replace('_', '-')} refused: {err}")
        return
    ctx.s.accounts = new
    ctx.emit(event, BUY_IN_RULE, {**base, **payload, "totals": new.totals()})
    show(ctx, seat, message)


# -- a cash-out on a supervisor's authority ------------------------------------------------------------------------

# How a cash-out the terminal did not ask for is paid: by an attendant (the floor's hand pay), as the progressive
# awards the table cannot pay itself are (605a.7(a)(3), controller.progressive.model.PaidBy).
PAID_BY_ATTENDANT = "attendant"


def cash_out_account(ctx: StepContext, inp: CashOutAccount) -> None:
    """605a.2(d)(1) for a player whose terminal cannot ask (offline, faulted, keypad broken): a floorperson or
    supervisor's signed `cash_out_account` debits what remains, exactly as the dealer's confirmation of a terminal's
    cash-out does (the same ledger movement and `account.cashed_out`), paid by an attendant, with who authorised it
    and why. Refused while the seat has a wager in the round in progress (the player is still in the hand: settle or
    void it first), while a payout of the seat awaits verification, and for an empty account. A request the terminal
    left pending is superseded, so the dealer's key, once the terminal is back, cannot pay it a second time."""
    seat = inp.seat
    why = _attendant_cash_out_problem(ctx, inp)
    if why is not None:
        ctx.refused(f"cash-out of seat {seat}'s game account by {inp.role} {inp.key_id}", why, BUY_IN_RULE)
        return
    pending = ctx.s.account_requests.pop(seat, None)
    if pending is not None:
        never = "; never credited: give back any cash or chips the dealer took" if pending.request == "buy_in" else ""
        ctx.emit(
            "account.request_declined",
            BUY_IN_RULE,
            {
                "seat": seat,
                "request": pending.request,
                "medium": pending.medium,
                "amount": pending.amount_cents,
                "by": inp.key_id,
                "reason": f"superseded by the {inp.role}'s cash-out of the account{never}",
            },
        )
    new, payload = ledger.cash_out(ctx.s.accounts, seat)
    ctx.s.accounts = new
    ctx.emit(
        "account.cashed_out",
        BUY_IN_RULE,
        {
            "seat": seat,
            "request": "cash_out",
            "medium": PAID_BY_ATTENDANT,
            **payload,
            "totals": new.totals(),
            "paid_by": PAID_BY_ATTENDANT,
            "authorised_by": inp.key_id,
            "role": inp.role,
            "reason": inp.reason,
            "terminal": ctx.s.terminals_down.get(seat, "reachable"),
        },
    )
    show(ctx, seat, f"cashed out {fmt(payload['amount'])}: paid by an attendant")


def _attendant_cash_out_problem(ctx: StepContext, inp: CashOutAccount) -> str | None:
    seat = inp.seat
    if not ctx.setup.terminals:
        return "this table has no electronic wagering system (it does not offer the wager)"
    if not 1 <= seat <= ctx.seats:
        return f"no seat {seat} at this table (seats 1 to {ctx.seats})"
    if not inp.reason.strip():
        return "a reason is required: say why the terminal cannot cash out (the journal keeps it)"
    why = _in_round(ctx, seat) or live_wager(ctx, seat)
    if why is None and ctx.s.accounts.balance(seat) <= 0:
        why = f"seat {seat}'s game account is empty: nothing to pay"
    return why


def _in_round(ctx: StepContext, seat: int) -> str | None:
    """Why the seat's player is still in the hand (any wager of the seat, chips or the account's), or None."""
    r = ctx.s.round
    if r is None or ctx.s.phase not in _IN_PLAY:
        return None
    placed = r.seats.get(seat)
    if placed is None or not placed.wagers:
        return None
    return f"seat {seat} has wagers in round {r.round_id} until it is settled: settle the round or void it first"


# -- the wager ------------------------------------------------------------------------------------------------------


def terminal_wager(ctx: StepContext, seat: int, spot: str, amount: int, base: dict[str, Any], rule: str) -> None:
    """A Five Card Hand Bonus Wager placed (or, amount 0, cancelled) at the seat's terminal during betting: debited
    from the game account when accepted (605a.2(d)(2)); the terminal shows "wager accepted" (655a.7(d)(5))."""
    wagers = ctx.r.seat(seat).wagers
    if amount == 0:
        placed = wagers.pop(spot, 0)
        if placed:
            new, payload = ledger.give_back(ctx.s.accounts, seat, placed)
            ctx.s.accounts = new
            ctx.emit("wager.withdrawn", ctx.rule("7(c)"), {**base, "amount": placed})
            ctx.emit("account.wager_cancelled", WAGER_RULE, {**payload, "spot": spot, "totals": new.totals()})
            show(ctx, seat, "wager cancelled")
        return
    if spot in wagers:
        if wagers[spot] == amount:
            show(ctx, seat, "wager accepted")  # the terminal asked again: the player sees the same answer
            return
        ctx.emit("wager.rejected", rule, {**base, "reason": "a wager is already placed here: cancel it first"})
        show(ctx, seat, "wager refused: cancel the wager placed first")
        return
    try:
        new, payload = ledger.wager(ctx.s.accounts, seat, amount)
    except LedgerError as err:
        ctx.emit("wager.rejected", rule, {**base, "reason": str(err)})
        show(ctx, seat, f"wager refused: {err}")
        return
    ctx.s.accounts = new
    wagers[spot] = amount
    ctx.emit("wager.accepted", rule, base)
    ctx.emit("account.wagered", WAGER_RULE, {**payload, "spot": spot, "totals": new.totals()})
    show(ctx, seat, "wager accepted")


def give_back(ctx: StepContext, seat: int, spot: str, amount: int, rule: str, why: str) -> None:
    """A terminal wager that goes back (its seat made no player, or the round is void): to the game account."""
    if spot not in TERMINAL_SPOTS or amount <= 0:
        return
    new, payload = ledger.give_back(ctx.s.accounts, seat, amount)
    ctx.s.accounts = new
    ctx.emit("account.returned", rule, {**payload, "spot": spot, "reason": why, "totals": new.totals()})
    show(ctx, seat, f"wager of {fmt(amount)} returned")


def credit(ctx: StepContext, seat: int, wager: str, amount: int, rule: str, note: str = "") -> None:
    """Winnings and their wager credited to the game account (655a.11(i)(3)(iii), 643a.11(f)(3)(v)(C))."""
    if amount <= 0:
        return
    new, payload = ledger.credit_win(ctx.s.accounts, seat, amount)
    ctx.s.accounts = new
    body: dict[str, Any] = {**payload, "wager": wager, "totals": new.totals()}
    if note:
        body["note"] = note
    ctx.emit("account.credited", rule, body)
    show(ctx, seat, f"{wager.replace('_', ' ')} won: {fmt(amount)} credited")


# -- the random bonuses -------------------------------------------------------------------------------------------


def draw_bonuses(ctx: StepContext) -> None:
    """The Magic Card and the Lucky Bonus position, drawn by the table game system (655a.1, 643a.1 definitions) once
    every lock-out is confirmed and before the first card leaves the shoe or the deck: no card that could decide them
    has been seen. Sealed in the journal (`bonus.drawn`) and published with the settlement (`bonus.published`)."""
    r = ctx.r
    if not ctx.setup.random_bonuses or r.magic_card is not None or r.lucky_seat is not None:
        return
    if not any(r.seats[n].wagers.get(spot) for n in r.players for spot in TERMINAL_SPOTS):
        return  # nobody can win them: nothing is drawn
    sealed: dict[str, Any] = {}
    if "magic_card" in ctx.setup.random_bonuses:
        r.magic_card = sealed["magic_card"] = ctx.setup.draws.magic_card()
    if "lucky_seat" in ctx.setup.random_bonuses:
        r.lucky_seat = sealed["lucky_seat"] = ctx.setup.draws.lucky_seat(range(1, ctx.seats + 1))
    ctx.emit(
        "bonus.drawn",
        ctx.spec.rule("1"),  # the definitions: "randomly selected by the table game system"
        {
            "bonuses": sorted(sealed),
            "rules": dict(ctx.setup.random_bonuses),
            "when": "every lock-out confirmed, before the first card is dealt",
            "published": "with the round's settlement",
        },
        sealed=sealed,
    )


def publish_bonuses(ctx: StepContext) -> None:
    r = ctx.r
    if r.magic_card is None and r.lucky_seat is None:
        return
    payload: dict[str, Any] = {}
    if r.magic_card is not None:
        payload["magic_card"] = r.magic_card
    if r.lucky_seat is not None:
        payload["lucky_seat"] = r.lucky_seat
    rule = next(iter(ctx.setup.random_bonuses.values()), None)
    ctx.emit("bonus.published", rule, payload)


def reissue(ctx: StepContext) -> None:
    """After a restart: every reachable terminal is locked or unlocked as the phase needs and shown its balance."""
    if not ctx.setup.terminals:
        return
    if ctx.s.phase is Phase.BETTING:
        unlock_terminals(ctx)
    else:
        for n in terminal_seats(ctx):
            ctx.command(LockTerminal(n))
    for n in terminal_seats(ctx):
        pending = ctx.s.account_requests.get(n)
        show(ctx, n, f"{pending.request.replace('_', '-')}: awaiting the dealer" if pending else "balance")
