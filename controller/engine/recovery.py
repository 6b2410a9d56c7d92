"""Recovery after a restart at any instant (kill -9, power loss), and a critical state that cannot be restored.

The shell restores the TableState stored with the last journaled step and sends `Recover`: the devices may
never have received that step's commands, and the devices' own reports since may be lost, so each phase
re-issues what it needs or, where cards may have left a device unrecorded, voids the round with the chapter's
remedy. The policy per phase, and why the chapter allows it, is docs/recovery.md; every recovery starts with a
`table.recovered {phase, policy}` event citing the rule it relies on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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
    "open_as_usual": "the table was closed: it opens as usual; a device's fault or mark out of order stands",
    "await_jackpot": "the round is settled and its hits taken from the meters: each hit still awaits a "
    "floorperson's signed validation before it is paid and the round completes",
    "resume_between_rounds": "no round in progress: the stations are locked again, every block stands",
    "reshuffle": "the shuffle may not have completed: the shuffler is asked again (a manual shuffle is awaited)",
    "reopen_betting": "the wagers accepted stand; the stations are unlocked again and betting opens when they "
    "confirm; a station's report of chips already accepted is not taken again",
    "relock": '"no more bets" stands: every station is locked again and the deal waits for their confirmations',
    "recount": "no card is out: the stations are locked again and the dealer's chip count is asked again",
    "await_chip_decision": "no card is out: the stations are locked again; the floorperson's decision on the chip "
    "count mismatch stands and is awaited",
    "void": "cards may have left the device without being recorded: the round is void, every wager returned",
    "resume_deal": "the layout is known from the shuffler's card order: the dealer confirms the deal again",
    "resume_stub_count": "every card is recorded: the stub count (or the misdeal determination) is asked again",
    "resume_decisions": "every card is recorded: the seat whose turn it was is asked again",
    "await_claim": "settled up to a linked hit: the claim is sent again under the same key; the link answers the "
    "hit it recorded the first time",
}


def stopped(state: TableState, by: str) -> DomainEvent:
    """`table.stopped`: the shell stops the table at once (`by`: SIGTERM, a second interrupt), its round left as it is.
    Journaled as the file's last event, so the file says the stop was asked for and what the next start does with
    the round (the policy `recover` takes from the same table, RECOVERY); a crash leaves no such event."""
    r = state.round
    policy = policy_at(state)
    payload: dict[str, Any] = {
        "by": by,
        "phase": str(state.phase),
        "round_no": r.number if r is not None else None,
        "policy": policy,
        "what": POLICIES[policy],
    }
    if state.blocks:
        payload["blocks"] = dict(state.blocks)
    return DomainEvent("table.stopped", None, payload, round_id=r.round_id if r is not None else None)


@dataclass(frozen=True, slots=True)
class Recovering:
    """One `Recover`: the policy of the phase found, from RECOVERY (which `stopped` reads too), and the stop on purpose
    the start follows, if any. `announce` is the `table.recovered` every policy begins with: it names both, so no
    branch can say another policy than the table's, nor leave the stop out."""

    ctx: StepContext
    policy: str
    stop: StopRecord | None

    def announce(self, rule: str | None, **extra: Any) -> None:
        s = self.ctx.s
        payload: dict[str, Any] = {
            "phase": str(s.phase),
            "policy": self.policy,
            "what": POLICIES[self.policy],
            "round_no": s.round.number if s.round else None,
            **extra,
        }
        if s.blocks:
            payload["blocks"] = dict(s.blocks)
        if s.closing:
            # A close asked before the stop stands (stored), and the table closes after the round: said here, or the
            # operator learns it only by asking for the close again.
            payload["closing"] = {"by": s.closing_by, "after_round": payload["round_no"]}
        if self.stop is not None:
            # A reader of the journal (and the floor) tells a stop on purpose from a crash without looking back; the
            # policy is the same either way (the state stored says what is awaited).
            payload["after_stop"] = {"seq": self.stop.seq, "by": self.stop.by}
        if (refused := other_method.refusal_pending(self.ctx)) is not None:
            payload["no_more_bets_refused"] = refused  # pending at the stop: said now, not at the next press
        self.ctx.emit("table.recovered", rule, payload)


def recover(ctx: StepContext, inp: Recover) -> None:
    closed = ctx.s.phase is Phase.CLOSED
    policy, apply = RECOVERY[ctx.s.phase](ctx.s)
    apply(Recovering(ctx, policy, inp.after_stop))
    if closed:
        return
    # A device identifies to a restarted daemon, jammed or not: a fault it reported before stands (docs/recovery.md);
    # a device covered stays covered, said first so that the status of a held stand-in shoe reads out of order.
    other_method.marks_restored(ctx)
    device_holds.faults_restored(ctx)
    link.restarted(ctx)  # the lease is unknown after a restart: locked out until the link grants one
    # Whatever the phase: a light the crash left lit, or never lit, is set right (643a.11(f)(3)(iii)(B)).
    jackpot.reissue_lights(ctx, reachable(ctx))
    # The terminals' lock and display may be anything after a crash: told again, balances from the ledger.
    accounts.reissue(ctx)


def closed_table(rec: Recovering) -> None:
    """The shell recovers a closed table for its marks and faults (controller/shell/restore.py), which stand, and after
    a stop on purpose, which its `table.recovered` names as every start after one does; it then opens as usual."""
    ctx = rec.ctx
    if rec.stop is not None:
        rec.announce(None)
    if ctx.s.device_faults or ctx.s.devices_down or ctx.s.out_of_order:
        other_method.marks_restored(ctx)
        device_holds.faults_restored(ctx)
    elif rec.stop is None:
        ctx.ignored("recover", "the table is closed: it opens as usual")


def between_rounds(rec: Recovering) -> None:
    rec.announce(None)
    lock_all(rec.ctx)


def reshuffle(rec: Recovering) -> None:
    rec.announce(rec.ctx.rule("13(e)"))
    lock_all(rec.ctx)
    boundary.start_shuffle(rec.ctx)


def resume_deal(rec: Recovering) -> None:
    ctx = rec.ctx
    plan = dealing.deal_plan(ctx)
    rec.announce(plan.rule)
    lock_all(ctx)
    ctx.emit("deal.awaiting_dealer", plan.rule, {"cards": len(plan.cards), "reissued": True})


def await_claim(rec: Recovering) -> None:
    rec.announce(None, claims=[k for k, q in rec.ctx.s.link_outbox.items() if q.kind == "claim"])
    lock_all(rec.ctx)


def await_jackpot(rec: Recovering) -> None:
    ctx = rec.ctx
    first = ctx.s.pending_hits[0].rule if ctx.s.pending_hits else ""
    rec.announce(ctx.spec.validation_rule(first), hits=[h.hit for h in ctx.s.pending_hits])
    lock_all(ctx)


def reachable(ctx: StepContext) -> list[int]:
    return [n for n in range(1, ctx.seats + 1) if n not in ctx.s.stations_down]


def lock_all(ctx: StepContext) -> None:
    # A station that lost power may come back unlocked; between rounds and after "no more bets" it must not
    # take a pre-deal wager (.7(c)). Locking a locked station changes nothing.
    for n in reachable(ctx):
        ctx.command(LockSeat(n))


def reopen_betting(rec: Recovering) -> None:
    ctx, r = rec.ctx, rec.ctx.r
    accepted = {str(n): dict(st.wagers) for n, st in sorted(r.seats.items()) if st.wagers}
    rec.announce(ctx.rule("betting"), wagers=accepted)
    r.unlocks_pending = set(reachable(ctx))
    for n in sorted(r.unlocks_pending):
        ctx.command(UnlockSeat(n))
    if not r.unlocks_pending:
        betting.betting_opened(ctx)


def relock(rec: Recovering) -> None:
    ctx, r = rec.ctx, rec.ctx.r
    rec.announce(ctx.lock_rule())
    # A station still unreachable with chips on it stays pending, as before the restart (lockout.waiting).
    r.locks_pending = set(reachable(ctx)) | (r.locks_pending & set(ctx.s.stations_down))
    for n in reachable(ctx):
        ctx.command(LockSeat(n))
    if not r.locks_pending:
        betting.locks_complete(ctx)


def await_chip_decision(rec: Recovering) -> None:
    rec.announce(chip_count.chip_rule(rec.ctx))
    lock_all(rec.ctx)


def recount(rec: Recovering) -> None:
    ctx, r = rec.ctx, rec.ctx.r
    rec.announce(chip_count.chip_rule(ctx))
    lock_all(ctx)
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


def void_unrecorded_deal(rec: Recovering) -> None:
    ctx, r = rec.ctx, rec.ctx.r
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
    rec.announce(rule, cards_recorded=len(r.dealt))
    lock_all(ctx)
    voiding.void(
        ctx,
        rule,
        why,
        remedy="all wagers returned; the cards are removed from the device and reshuffled with any cards already dealt",
    )


def resume_stub_count(rec: Recovering) -> None:
    ctx, r = rec.ctx, rec.ctx.r
    count, _, incorrect = ctx.stub_rules()
    rec.announce(count)
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


def resume_decisions(rec: Recovering) -> None:
    ctx, r = rec.ctx, rec.ctx.r
    d = ctx.setup.decisions[r.decision]
    rec.announce(d.rule, decision=d.key, seat=r.turn)
    lock_all(ctx)
    seat = r.turn
    if seat is None:  # not a state a step leaves behind; ask from the first seat still in play
        decisions.next_decision(ctx)
        return
    decisions.ask(ctx, seat, d, reissued=True)


Apply = Callable[[Recovering], None]


def _always(policy: str, apply: Apply) -> Callable[[TableState], tuple[str, Apply]]:
    return lambda _: (policy, apply)


def _reconciling(s: TableState) -> tuple[str, Apply]:
    # A mismatch is with the floorperson (.8(b)): the decision stands and is awaited; no count is asked again.
    return ("await_chip_decision", await_chip_decision) if "chip_count" in s.blocks else ("recount", recount)


# What `recover` does in each phase, with the policy its `table.recovered` names: the one source of both, which a table
# stopped at once reads for the policy it tells its journal (`stopped`). Why each is allowed: docs/recovery.md.
RECOVERY: dict[Phase, Callable[[TableState], tuple[str, Apply]]] = {
    Phase.CLOSED: _always("open_as_usual", closed_table),
    Phase.OPENING: _always("resume_between_rounds", between_rounds),
    Phase.BLOCKED: _always("resume_between_rounds", between_rounds),
    Phase.SHUFFLING: _always("reshuffle", reshuffle),
    Phase.BETTING: _always("reopen_betting", reopen_betting),
    Phase.LOCKING: _always("relock", relock),
    Phase.RECONCILING: _reconciling,
    Phase.DEALING: _always("void", void_unrecorded_deal),
    Phase.DEALT: _always("resume_deal", resume_deal),
    Phase.STUB_COUNT: _always("resume_stub_count", resume_stub_count),
    Phase.DECISION: _always("resume_decisions", resume_decisions),
    Phase.CLAIMING: _always("await_claim", await_claim),
    Phase.JACKPOT: _always("await_jackpot", await_jackpot),
}


def policy_at(state: TableState) -> str:
    """The policy `recover` applies to this state (what `table.stopped` tells the journal the next start does)."""
    return RECOVERY[state.phase](state)[0]


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
