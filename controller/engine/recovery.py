"""Recovery after a restart at any instant (kill -9, power loss), and a critical state that cannot be restored.

The shell restores the TableState stored with the last journaled step and sends `Recover`: the devices may
never have received that step's commands, and the devices' own reports since may be lost, so each phase
re-issues what it needs or, where cards may have left a device unrecorded, voids the round with the chapter's
remedy. The policy per phase, and why the chapter allows it, is docs/recovery.md; every recovery starts with a
`table.recovered {phase, policy}` event citing the rule it relies on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from controller.engine.betting import _BettingMixin
from controller.engine.dealing import _DealingMixin
from controller.engine.state import Phase
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
}


class _RecoveryMixin(_BettingMixin, _DealingMixin):
    # Built on betting and dealing: recovery re-issues their requests (lock-out, chip count, stub count).

    def recover(self) -> None:
        phase = self.s.phase
        if phase is Phase.CLOSED:
            self.ignored("recover", "the table is closed: it opens as usual")
            return
        if phase in (Phase.OPENING, Phase.BLOCKED):
            self.recovered("resume_between_rounds", None)
            self.lock_all()
        elif phase is Phase.SHUFFLING:
            self.recovered("reshuffle", self.e.rule("13(e)"))
            self.lock_all()
            self.start_shuffle()
        elif phase is Phase.BETTING:
            self.reopen_betting()
        elif phase is Phase.LOCKING:
            self.relock()
        elif phase is Phase.RECONCILING:
            self.recount()
        elif phase is Phase.DEALING:
            self.void_unrecorded_deal()
        elif phase is Phase.DEALT:
            plan = self.plan()
            self.recovered("resume_deal", plan.rule)
            self.lock_all()
            self.emit("deal.awaiting_dealer", plan.rule, {"cards": len(plan.cards), "reissued": True})
        elif phase is Phase.STUB_COUNT:
            self.resume_stub_count()
        elif phase is Phase.DECISION:
            self.resume_decisions()
        elif phase is Phase.JACKPOT:
            first = self.s.pending_hits[0].rule if self.s.pending_hits else ""
            self.recovered("await_jackpot", self.spec.validation_rule(first), hits=[h.hit for h in self.s.pending_hits])
            self.lock_all()
        # Whatever the phase: a light the crash left lit, or never lit, is set right (643a.11(f)(3)(iii)(B)).
        self.reissue_lights(self.reachable())

    def recovered(self, policy: str, rule: str | None, **extra: Any) -> None:
        r = self.s.round
        payload: dict[str, Any] = {
            "phase": str(self.s.phase),
            "policy": policy,
            "what": POLICIES[policy],
            "round_no": r.number if r else None,
            **extra,
        }
        if self.s.blocks:
            payload["blocks"] = dict(self.s.blocks)
        self.emit("table.recovered", rule, payload)

    def reachable(self) -> list[int]:
        return [n for n in range(1, self.seats + 1) if n not in self.s.stations_down]

    def lock_all(self) -> None:
        # A station that lost power may come back unlocked; between rounds and after "no more bets" it must not
        # take a pre-deal wager (.7(c)). Locking a locked station changes nothing.
        for n in self.reachable():
            self.command("wager_station", "lock", seat=n)

    # -- before any card --------------------------------------------------------------------------------

    def reopen_betting(self) -> None:
        r = self.r
        accepted = {str(n): dict(st.wagers) for n, st in sorted(r.seats.items()) if st.wagers}
        self.recovered("reopen_betting", self.e.rule("betting"), wagers=accepted)
        r.unlocks_pending = set(self.reachable())
        for n in sorted(r.unlocks_pending):
            self.command("wager_station", "unlock", seat=n)
        if not r.unlocks_pending:
            self.betting_opened()

    def relock(self) -> None:
        r = self.r
        self.recovered("relock", self.lock_rule())
        # A station still unreachable with chips on it stays pending, as before the restart (lockout.waiting).
        r.locks_pending = set(self.reachable()) | (r.locks_pending & set(self.s.stations_down))
        for n in self.reachable():
            self.command("wager_station", "lock", seat=n)
        if not r.locks_pending:
            self.locks_complete()

    def recount(self) -> None:
        r = self.r
        self.recovered("recount", self.chip_rule())
        self.lock_all()
        if "chip_count" in self.s.blocks:
            return  # the mismatch is with the floorperson, whose decision is still awaited
        self.emit(
            "chip_count.requested",
            self.chip_rule(),
            {
                "wagers": self.counted_wagers(),
                "accepted": r.chips_accepted,
                "reissued": True,
                "remedy": "the dealer counts the value chips in front of the table inventory container and enters "
                "the count; no card is dealt until it equals the number accepted",
            },
        )

    # -- cards out ----------------------------------------------------------------------------------------

    def void_unrecorded_deal(self) -> None:
        r = self.r
        if self.method == "automated_shoe":
            # .13(f): the shoe "fails to deal cards during a round of play": a stack may have left it unrecorded.
            rule, why = (
                self.e.rule("13(f)"),
                (
                    f"the table restarted while the automated shoe was dealing "
                    f"({r.stacks_dispensed} stack(s) recorded): a stack may have left "
                    "the shoe unrecorded"
                ),
            )
        else:
            # .13(c): a card drawn but not recorded leaves some area with an incorrect number of cards.
            rule, why = (
                self.e.rule("13(c)"),
                (
                    f"the table restarted while dealing ({len(r.dealt)} card(s) "
                    "recorded): a card may have been drawn unrecorded, so an area may "
                    "hold an incorrect number of cards"
                ),
            )
        self.recovered("void", rule, cards_recorded=len(r.dealt))
        self.lock_all()
        self.void(
            rule,
            why,
            remedy="all wagers returned; the cards are removed from the device and reshuffled "
            "with any cards already dealt",
        )

    def resume_stub_count(self) -> None:
        r = self.r
        count, _, incorrect = self.stub_rules()
        self.recovered("resume_stub_count", count)
        self.lock_all()
        if r.stub_entered is None:
            self.emit(
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
            self.emit(
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

    def resume_decisions(self) -> None:
        r = self.r
        d = self.e.decisions[r.decision]
        self.recovered("resume_decisions", d.rule, decision=d.key, seat=r.turn)
        self.lock_all()
        seat = r.turn
        if seat is None:  # not a state a step leaves behind; ask from the first seat still in play
            self.next_decision()
            return
        payload: dict[str, Any] = {
            "seat": seat,
            "decision": d.key,
            "street": d.name,
            "spot": d.spot,
            "kind": d.kind,
            "reissued": True,
        }
        if d.kind == "wager_or_fold":
            payload["allowed"] = list(self.spec.allowed(self.rules, d, r.seats[seat].wagers))
        self.emit("decision.requested", d.rule, payload)

    # -- a critical state that could not be restored ---------------------------------------------------------

    def critical_state_invalid(self, reason: str, tilt: str = "critical_state") -> None:
        """A tilt, never a silent reset: the table opens BLOCKED until a supervisor clears the tilt."""
        self.block(tilt, f"critical state invalid: {reason}")
        if tilt == "tilt:meters":
            self.lock_progressive("meters", f"the stored progressive meters failed validation ({reason})")
        self.emit(
            "critical_state.invalid",
            None,
            {
                "tilt": tilt,
                "reason": reason,
                "rounds_played": self.s.rounds_played,
                "remedy": "no round starts until a supervisor clears the critical_state tilt; the round in progress "
                "when the state was stored, if any, is not resumed: settle it by hand from the journal "
                "(tablectl journal tail / export) before clearing",
            },
        )

    # -- a station reporting chips already taken -----------------------------------------------------------

    def repeated_wager(self, inp: WagerDetected) -> bool:
        """The same chips on the same spot as already accepted this round (a restarted station reporting its
        sensors, or a repeated reading): confirmed, never taken a second time."""
        r = self.s.round
        if r is None or inp.amount_cents <= 0 or inp.seat not in r.seats:
            return False
        if r.seats[inp.seat].wagers.get(inp.spot) != inp.amount_cents:
            return False
        offer = self.e.offers.get(inp.spot)
        d = self.current_decision()
        rule = offer.rule if offer else (d.rule if d is not None else None)
        self.emit(
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

    if TYPE_CHECKING:

        def reissue_lights(self, reachable: Sequence[int]) -> None: ...  # controller/engine/progressive.py
