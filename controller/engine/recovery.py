"""Recovery after a restart at any instant (kill -9, power loss), and a critical state that cannot be restored.

The shell restores the TableState stored with the last journaled step and sends `Recover`: the devices may
never have received that step's commands, and the devices' own reports since may be lost, so each phase
re-issues what it needs or, where cards may have left a device unrecorded, voids the round with the chapter's
remedy. The policy per phase, and why the chapter allows it, is docs/recovery.md; every recovery starts with a
`table.recovered {phase, policy}` event citing the rule it relies on.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from controller.core.events import DomainEvent
from controller.engine import (
    accounts,
    betting,
    boundary,
    chip_count,
    dealing,
    decisions,
    device_holds,
    jackpot,
    link,
    other_method,
    progressive,
    voiding,
)
from controller.engine.commands import LockSeat, UnlockSeat
from controller.engine.context import StepContext
from controller.engine.inputs import Recover, StopRecord
from controller.engine.state import Phase, TableState
from drivers.interfaces import WagerDetected

# policy -> what happens, for the `table.recovered` event (docs/recovery.md has the reasons and citations).
POLICIES: dict[str, str] = {
    "await_jackpot": "the round is settled and its hits taken from the meters: each hit still awaits a "
    "floorperson's signed validation before it is paid and the round completes",
    "resume_between_rounds": "no round in progress: the stations are locked again, every block stands",
    "reshuffle": "the shuffle may not have completed: the shuffler is asked again (a manual shuffle is awaited)",
    "reopen_betting": "the wagers accepted stand; the stations are unlocked again and betting opens when they "
    "confirm; a station's report of chips already accepted is not taken again",
    "relock": '"no more bets" stands: every station is locked again and the deal waits for their confirmations',
    "recount": "no card is out: the stations are locked again and the dealer's chip count is asked again",
    "void": "cards may have left the device without being recorded: the round is void, every wager returned",
    "resume_deal": "the layout is known from the shuffler's card order: the dealer confirms the deal again",
    "resume_stub_count": "every card is recorded: the stub count (or the misdeal determination) is asked again",
    "resume_decisions": "every card is recorded: the seat whose turn it was is asked again",
    "await_claim": "settled up to a linked hit: the claim is sent again under the same key; the link answers the "
    "hit it recorded the first time",
}

# The policy `recover` applies in each phase: what a table stopped at once tells its journal the next start will do.
POLICY_AT: dict[Phase, str] = {
    Phase.OPENING: "resume_between_rounds",
    Phase.BLOCKED: "resume_between_rounds",
    Phase.SHUFFLING: "reshuffle",
    Phase.BETTING: "reopen_betting",
    Phase.LOCKING: "relock",
    Phase.RECONCILING: "recount",
    Phase.DEALING: "void",
    Phase.DEALT: "resume_deal",
    Phase.STUB_COUNT: "resume_stub_count",
    Phase.DECISION: "resume_decisions",
    Phase.CLAIMING: "await_claim",
    Phase.JACKPOT: "await_jackpot",
}


def stopped(state: TableState, by: str) -> DomainEvent:
    """`table.stopped`: the shell stops the table at once (`by`: SIGTERM, a second interrupt), its round left as it is.
    Journaled as the file's last event, so the file says the stop was asked for and what the next start does with
    the round (the policy of `recover`, docs/recovery.md); a crash leaves no such event."""
    r = state.round
    policy = POLICY_AT.get(state.phase)
    payload: dict[str, Any] = {
        "by": by,
        "phase": str(state.phase),
        "round_no": r.number if r is not None else None,
        "policy": policy,
        "what": POLICIES[policy] if policy is not None else "the table is closed: it opens as usual",
    }
    if state.blocks:
        payload["blocks"] = dict(state.blocks)
    return DomainEvent("table.stopped", None, payload, round_id=r.round_id if r is not None else None)


def recover(ctx: StepContext, inp: Recover) -> None:
    _recover(ctx)
    if inp.after_stop is not None:
        _after_stop(ctx, inp.after_stop)


def _after_stop(ctx: StepContext, stop: StopRecord) -> None:
    """`table.recovered` names the stop on purpose it follows: a reader of the journal (and the floor) tells it from a
    crash without looking back, and the policy is the same either way (the state stored says what is awaited)."""
    for i, effect in enumerate(ctx.out):
        if isinstance(effect, DomainEvent) and effect.type == "table.recovered":
            payload = {**effect.payload, "after_stop": {"seq": stop.seq, "by": stop.by}}
            ctx.out[i] = dataclasses.replace(effect, payload=payload)


def _recover(ctx: StepContext) -> None:
    phase = ctx.s.phase
    if phase is Phase.CLOSED:
        # The shell recovers a closed table only for these (controller/shell/restore.py): its marks and faults stand.
        if ctx.s.device_faults or ctx.s.devices_down or ctx.s.out_of_order:
            other_method.marks_restored(ctx)
            device_holds.faults_restored(ctx)
        else:
            ctx.ignored("recover", "the table is closed: it opens as usual")
        return
    if phase in (Phase.OPENING, Phase.BLOCKED):
        recovered(ctx, "resume_between_rounds", None)
        lock_all(ctx)
    elif phase is Phase.SHUFFLING:
        recovered(ctx, "reshuffle", ctx.rule("13(e)"))
        lock_all(ctx)
        boundary.start_shuffle(ctx)
    elif phase is Phase.BETTING:
        reopen_betting(ctx)
    elif phase is Phase.LOCKING:
        relock(ctx)
    elif phase is Phase.RECONCILING:
        recount(ctx)
    elif phase is Phase.DEALING:
        void_unrecorded_deal(ctx)
    elif phase is Phase.DEALT:
        plan = dealing.deal_plan(ctx)
        recovered(ctx, "resume_deal", plan.rule)
        lock_all(ctx)
        ctx.emit("deal.awaiting_dealer", plan.rule, {"cards": len(plan.cards), "reissued": True})
    elif phase is Phase.STUB_COUNT:
        resume_stub_count(ctx)
    elif phase is Phase.DECISION:
        resume_decisions(ctx)
    elif phase is Phase.CLAIMING:
        claims = [k for k, q in ctx.s.link_outbox.items() if q.kind == "claim"]
        recovered(ctx, "await_claim", None, claims=claims)
        lock_all(ctx)
    elif phase is Phase.JACKPOT:
        first = ctx.s.pending_hits[0].rule if ctx.s.pending_hits else ""
        recovered(ctx, "await_jackpot", ctx.spec.validation_rule(first), hits=[h.hit for h in ctx.s.pending_hits])
        lock_all(ctx)
    # A device identifies to a restarted daemon, jammed or not: a fault it reported before stands (docs/recovery.md);
    # a device covered stays covered, said first so that the status of a held stand-in shoe reads out of order.
    other_method.marks_restored(ctx)
    device_holds.faults_restored(ctx)
    link.restarted(ctx)  # the lease is unknown after a restart: locked out until the link grants one
    # Whatever the phase: a light the crash left lit, or never lit, is set right (643a.11(f)(3)(iii)(B)).
    jackpot.reissue_lights(ctx, reachable(ctx))
    # The terminals' lock and display may be anything after a crash: told again, balances from the ledger.
    accounts.reissue(ctx)


def recovered(ctx: StepContext, policy: str, rule: str | None, **extra: Any) -> None:
    r = ctx.s.round
    payload: dict[str, Any] = {
        "phase": str(ctx.s.phase),
        "policy": policy,
        "what": POLICIES[policy],
        "round_no": r.number if r else None,
        **extra,
    }
    if ctx.s.blocks:
        payload["blocks"] = dict(ctx.s.blocks)
    ctx.emit("table.recovered", rule, payload)


def reachable(ctx: StepContext) -> list[int]:
    return [n for n in range(1, ctx.seats + 1) if n not in ctx.s.stations_down]


def lock_all(ctx: StepContext) -> None:
    # A station that lost power may come back unlocked; between rounds and after "no more bets" it must not
    # take a pre-deal wager (.7(c)). Locking a locked station changes nothing.
    for n in reachable(ctx):
        ctx.command(LockSeat(n))


def reopen_betting(ctx: StepContext) -> None:
    r = ctx.r
    accepted = {str(n): dict(st.wagers) for n, st in sorted(r.seats.items()) if st.wagers}
    recovered(ctx, "reopen_betting", ctx.rule("betting"), wagers=accepted)
    r.unlocks_pending = set(reachable(ctx))
    for n in sorted(r.unlocks_pending):
        ctx.command(UnlockSeat(n))
    if not r.unlocks_pending:
        betting.betting_opened(ctx)


def relock(ctx: StepContext) -> None:
    r = ctx.r
    recovered(ctx, "relock", ctx.lock_rule())
    # A station still unreachable with chips on it stays pending, as before the restart (lockout.waiting).
    r.locks_pending = set(reachable(ctx)) | (r.locks_pending & set(ctx.s.stations_down))
    for n in reachable(ctx):
        ctx.command(LockSeat(n))
    if not r.locks_pending:
        betting.locks_complete(ctx)


def recount(ctx: StepContext) -> None:
    r = ctx.r
    recovered(ctx, "recount", chip_count.chip_rule(ctx))
    lock_all(ctx)
    if "chip_count" in ctx.s.blocks:
        return  # the mismatch is with the floorperson, whose decision is still awaited
    ctx.emit(
        "chip_count.requested",
        chip_count.chip_rule(ctx),
        {
            "wagers": chip_count.counted_wagers(ctx),
            "accepted": r.chips_accepted,
            "reissued": True,
            "remedy": "the dealer counts the value chips in front of the table inventory container and enters "
            "the count; no card is dealt until it equals the number accepted",
        },
    )


def void_unrecorded_deal(ctx: StepContext) -> None:
    r = ctx.r
    if ctx.method == "automated_shoe":
        # .13(f): the shoe "fails to deal cards during a round of play": a stack may have left it unrecorded.
        rule, why = (
            ctx.rule("13(f)"),
            (
                f"the table restarted while the automated shoe was dealing "
                f"({r.stacks_dispensed} stack(s) recorded): a stack may have left "
                "the shoe unrecorded"
            ),
        )
    else:
        # .13(c): a card drawn but not recorded leaves some area with an incorrect number of cards.
        rule, why = (
            ctx.rule("13(c)"),
            (
                f"the table restarted while dealing ({len(r.dealt)} card(s) "
                "recorded): a card may have been drawn unrecorded, so an area may "
                "hold an incorrect number of cards"
            ),
        )
    recovered(ctx, "void", rule, cards_recorded=len(r.dealt))
    lock_all(ctx)
    voiding.void(
        ctx,
        rule,
        why,
        remedy="all wagers returned; the cards are removed from the device and reshuffled with any cards already dealt",
    )


def resume_stub_count(ctx: StepContext) -> None:
    r = ctx.r
    count, _, incorrect = ctx.stub_rules()
    recovered(ctx, "resume_stub_count", count)
    lock_all(ctx)
    if r.stub_entered is None:
        ctx.emit(
            "stub_count.requested",
            r.stub_rule or count,
            {
                "deck": r.deck,
                "reissued": True,
                "remedy": "count the stub face down on the layout and enter the count",
            },
            {"expected": r.stub_expected},
        )
    else:
        total = len(r.dealt) + len(r.discarded) + r.stub_entered
        ctx.emit(
            "stub_count.mismatch",
            incorrect,
            {
                "count": r.stub_entered,
                "deck_total": total,
                "reissued": True,
                "remedy": "the dealer determines whether the cards were misdealt: confirm 'misdeal' (52 cards are "
                "there, void) or 'no_misdeal' (void and the deck leaves the table)",
            },
        )


def resume_decisions(ctx: StepContext) -> None:
    r = ctx.r
    d = ctx.setup.decisions[r.decision]
    recovered(ctx, "resume_decisions", d.rule, decision=d.key, seat=r.turn)
    lock_all(ctx)
    seat = r.turn
    if seat is None:  # not a state a step leaves behind; ask from the first seat still in play
        decisions.next_decision(ctx)
        return
    decisions.ask(ctx, seat, d, reissued=True)


# What the supervisor does before clearing each tilt a stored state raises at start (docs/recovery.md).
_SETTLE_BY_HAND = (
    "the round in progress when the state was stored, if any, is not resumed: settle it by hand from the journal "
    "(tablectl journal tail / export) before clearing"
)
REMEDIES = {
    "critical_state": _SETTLE_BY_HAND,
    "tilt:invariant": "a step found a state the engine's own checks rule out (a bug: report it with the journal); "
    "that input was not applied: finish or void the round in progress by hand (tablectl journal tail) before clearing",
    "tilt:meters": "progressive wagers are refused; check the meters against the journal's meter.* events and the "
    "floor's record before clearing",
    "tilt:accounts": "no round starts; check each seat's balance against the journal's account.* events (every "
    "movement is one, with the balance after it) and correct the stored ledger before clearing",
    "tilt:rollback": "the journal lost committed events (its anchor is ahead of it): restore the journal with its "
    "-wal file if they can be had; otherwise settle the rounds they held by hand from the floor's archive (every "
    "published event) before clearing. New events continue after the last seq the anchor knows, never reusing one",
    "tilt:software": "the installed code failed its check against the signed release manifest (605a.4(c)): the table "
    "stays closed; install the certified release (`tablectl verify-software` lists what differs) and start again. "
    "The tilt can be cleared only once a start's check passes",
}


def critical_state_invalid(ctx: StepContext, reason: str, tilt: str = "critical_state") -> None:
    """A tilt, never a silent reset: the table opens BLOCKED until a supervisor clears the tilt."""
    ctx.block(tilt, f"critical state invalid: {reason}")
    if tilt == "tilt:meters":
        progressive.lock_progressive(ctx, "meters", f"the stored progressive meters failed validation ({reason})")
    ctx.emit(
        "critical_state.invalid",
        None,
        {
            "tilt": tilt,
            "reason": reason,
            "rounds_played": ctx.s.rounds_played,
            "remedy": f"no round starts until a supervisor clears the {tilt} tilt; "
            + REMEDIES.get(tilt, _SETTLE_BY_HAND),
        },
    )


def repeated_wager(ctx: StepContext, inp: WagerDetected) -> bool:
    """The same chips on the same spot as already accepted this round (a restarted station reporting its
    sensors, or a repeated reading): confirmed, never taken a second time."""
    r = ctx.s.round
    if r is None or inp.amount_cents <= 0 or inp.seat not in r.seats:
        return False
    if r.seats[inp.seat].wagers.get(inp.spot) != inp.amount_cents:
        return False
    offer = ctx.setup.offers.get(inp.spot)
    d = decisions.current_decision(ctx)
    rule = offer.rule if offer else (d.rule if d is not None else None)
    ctx.emit(
        "wager.confirmed",
        rule,
        {
            "seat": inp.seat,
            "spot": inp.spot,
            "amount": inp.amount_cents,
            "reason": "the station reported chips already accepted this round: not taken again",
        },
    )
    return True
