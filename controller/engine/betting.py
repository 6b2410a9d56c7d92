"""Betting: the wager stations unlocked, wagers taken, "no more bets", the lock-out (.7(c), .8(b), .9(a)(3),
.10(a)(2)) and the chip count of the counted wagers (.8(b))."""

from __future__ import annotations

from typing import Any

from controller.core.money import fmt
from controller.engine.inputs import FloorpersonDecision
from controller.engine.state import Phase, RoundState
from controller.engine.step import _StepBase
from drivers.interfaces import LockAcknowledged, WagerDetected

# Blocks that stop a round already in betting from being dealt (others only stop the next round).
_STOPS_DEALING = ("device:", "no_method", "deck_removed")


class _BettingMixin(_StepBase):
    # -- betting ---------------------------------------------------------------------------------

    def open_betting(self) -> None:
        """Unlock every wager station; betting opens once all have confirmed, so that no chips meet a
        station still locked from the last round."""
        n = self.s.rounds_played + 1
        self.s.rounds_played = n
        self.s.round = RoundState(number=n, round_id=f"{self.s.table_id}-r{n:06d}", deck=self.s.next_deck)
        self.s.phase = Phase.BETTING
        # A station that cannot be reached cannot open; its seat simply takes no wagers until it is back.
        self.r.unlocks_pending = set(range(1, self.seats + 1)) - set(self.s.stations_down)
        for seat in sorted(self.r.unlocks_pending):
            self.command("wager_station", "unlock", seat=seat)
        if not self.r.unlocks_pending:
            self.betting_opened()

    def betting_opened(self) -> None:
        first = next(iter(self.e.offers.values()))
        self.emit(
            "betting.opened",
            self.e.rule("betting"),
            {
                "round_no": self.r.number,
                "seats": self.seats,
                "wagers_offered": list(self.e.offers),
                "ante_min": first.min_cents,
                "ante_max": first.max_cents,
            },
        )

    def wager(self, inp: WagerDetected) -> None:
        seat, spot, amount = inp.seat, inp.spot, inp.amount_cents
        base = {"seat": seat, "spot": spot, "amount": amount}
        if not 1 <= seat <= self.seats:
            self.emit("wager.rejected", self.e.rule("seat"), {**base, "reason": f"no seat {seat} at this table"})
            return
        d = self.current_decision()
        if d is not None and d.kind == "wager_or_fold" and spot == d.spot:
            self.decision_wager(seat, amount, base, d)
        elif spot in self.e.offers or self.s.phase is Phase.BETTING:
            self.pre_deal_wager(seat, spot, amount, base)
        else:
            self.emit(
                "wager.rejected",
                self.e.rule("7(c)"),
                {**base, "reason": "not a wager the table takes now: a decision wager is made when the dealer asks"},
            )

    def pre_deal_wager(self, seat: int, spot: str, amount: int, base: dict[str, Any]) -> None:
        if self.s.phase is not Phase.BETTING:
            self.emit(
                "wager.rejected",
                self.e.rule("7(c)"),
                {**base, "reason": 'placed after "no more bets" or outside betting: not counted'},
            )
            return
        offer = self.e.offers.get(spot)
        if offer is None:
            self.emit(
                "wager.rejected", self.e.rule("7(c)"), {**base, "reason": f"this table does not offer a {spot} wager"}
            )
            return
        refusal = self.progressive_refusal(spot, amount)
        if refusal is not None:
            self.emit("wager.rejected", offer.rule, {**base, "reason": refusal})
            return
        wagers = self.r.seat(seat).wagers
        if amount == 0:
            if wagers.pop(spot, 0):
                self.emit("wager.withdrawn", self.e.rule("7(c)"), base)
            return
        if not offer.min_cents <= amount <= offer.max_cents:
            self.emit(
                "wager.rejected",
                offer.rule,
                {**base, "reason": f"outside the table limits {fmt(offer.min_cents)} to {fmt(offer.max_cents)}"},
            )
            return
        wagers[spot] = amount  # the sensor reports the chips on the spot, so the latest reading stands
        self.emit("wager.accepted", offer.rule, base)

    def no_more_bets(self) -> None:
        if self.s.phase is not Phase.BETTING:
            self.ignored("no more bets", "betting is not open")
            return
        stops = {k: v for k, v in self.s.blocks.items() if k.startswith(_STOPS_DEALING)}
        if stops:
            self.emit(
                "no_more_bets.refused",
                self.e.rule("13(g)"),
                {"reason": "the cards cannot be dealt: " + "; ".join(stops.values()), "blocks": sorted(stops)},
            )
            return
        r = self.r
        players = []
        for n, st in sorted(r.seats.items()):
            if not st.wagers:
                continue
            why = self.spec.player_problem(st.wagers)
            if why is None:
                players.append(n)
                continue
            for spot, amount in sorted(st.wagers.items()):  # not a player: everything goes back
                offer = self.e.offers.get(spot)
                self.emit(
                    "wager.returned",
                    offer.rule if offer else self.e.rule("player"),
                    {"seat": n, "spot": spot, "amount": amount, "reason": why},
                )
            st.wagers.clear()
        if not players:
            self.emit(
                "no_more_bets.refused",
                self.e.rule("player"),
                {"reason": "no player has made the wagers that enter a round"},
            )
            return
        unlockable = sorted(n for n in players if n in self.s.stations_down)
        if unlockable:
            # The lock-out of a station that cannot be reached cannot be confirmed, and its wagers stand on it.
            self.emit(
                "no_more_bets.refused",
                self.lock_rule(),
                {
                    "reason": "the wager station of seat(s) " + ", ".join(map(str, unlockable)) + " cannot confirm its "
                    "lock-out (" + "; ".join(self.s.stations_down[n] for n in unlockable) + "): bring it back",
                    "seats": unlockable,
                },
            )
            return
        r.players = players
        self.s.phase = Phase.LOCKING
        r.locks_pending = set(range(1, self.seats + 1)) - set(self.s.stations_down)
        self.emit(
            "no_more_bets",
            self.lock_rule(),
            {"players": players, "wagers": {str(n): dict(r.seats[n].wagers) for n in players}},
        )
        for seat in sorted(r.locks_pending):
            self.command("wager_station", "lock", seat=seat)
        if not r.locks_pending:
            self.locks_complete()

    def lock_rule(self) -> str:
        return self.e.rule({"automated_shoe": "10(a)(2)", "manual_shoe": "8(b)", "hand": "9(a)(3)"}[self.method])

    def lock_acknowledged(self, inp: LockAcknowledged) -> None:
        if not inp.locked:
            if self.s.phase is Phase.BETTING and self.r.unlocks_pending:
                self.r.unlocks_pending.discard(inp.seat)
                if not self.r.unlocks_pending:
                    self.betting_opened()
            return
        if self.s.phase is not Phase.LOCKING:
            return  # a repeated confirmation after dealing began changes nothing
        self.r.locks_pending.discard(inp.seat)
        if not self.r.locks_pending:
            self.locks_complete()

    def locks_complete(self) -> None:
        down = sorted(self.s.stations_down)
        payload: dict[str, Any] = {"stations": self.seats - len(down)}
        if down:
            payload["unreachable"] = down  # no wagers at those seats; they are locked when they come back
        self.emit("lockout.confirmed", self.lock_rule(), payload)
        self.contribute_wagers()  # the progressive wagers are collected now (655a.8(b), 643a.8(b)(2))
        self.reconcile_or_deal()

    # -- wager stations going away and coming back -------------------------------------------------------

    def station_down(self, seat: int, why: str) -> None:
        if seat in self.s.stations_down or not 1 <= seat <= self.seats:
            return
        self.s.stations_down[seat] = why
        r = self.s.round
        if r is None:
            return
        has_wagers = bool(r.seats.get(seat) and r.seats[seat].wagers)
        if self.s.phase is Phase.BETTING and seat in r.unlocks_pending:
            r.unlocks_pending.discard(seat)
            if not r.unlocks_pending:
                self.betting_opened()
        elif self.s.phase is Phase.LOCKING and seat in r.locks_pending:
            if has_wagers:
                # Its chips are on the layout and its lock-out unconfirmed: no card until it answers.
                self.emit("lockout.waiting", self.lock_rule(), {"seat": seat, "reason": why})
                return
            r.locks_pending.discard(seat)
            if not r.locks_pending:
                self.locks_complete()

    def station_back(self, seat: int) -> None:
        if self.s.stations_down.pop(seat, None) is None:
            return
        r = self.s.round
        if r is None or self.s.phase in (Phase.CLOSED, Phase.SHUFFLING, Phase.BLOCKED, Phase.OPENING):
            return
        if self.s.phase is Phase.BETTING:
            self.command("wager_station", "unlock", seat=seat)
        else:
            # Past "no more bets" a station must not take a pre-deal wager: it is locked on its return.
            self.command("wager_station", "lock", seat=seat)

    # -- the chip count of the counted wagers (.8(b)) ---------------------------------------------

    def counted_wagers(self) -> dict[str, dict[str, int]]:
        """Counted wagers of the round's players, by spot: seat -> amount."""
        r = self.r
        out: dict[str, dict[str, int]] = {}
        for n in r.players:
            for spot, amount in r.seats[n].wagers.items():
                if spot in self.e.counted:
                    out.setdefault(spot, {})[str(n)] = amount
        return out

    def chip_rule(self) -> str:
        rules = [self.e.counted[spot] for spot in self.counted_wagers()]
        return next((x for x in rules if x), None) or self.lock_rule()

    def reconcile_or_deal(self) -> None:
        counted = self.counted_wagers()
        if not counted:
            self.start_dealing()
            return
        r = self.r
        r.chips_accepted = sum(len(v) for v in counted.values())
        self.s.phase = Phase.RECONCILING
        self.emit(
            "chip_count.requested",
            self.chip_rule(),
            {
                "wagers": {spot: dict(v) for spot, v in counted.items()},
                "accepted": r.chips_accepted,
                "remedy": "the dealer counts the value chips in front of the table inventory container and enters "
                "the count; no card is dealt until it equals the number accepted",
            },
        )

    def chips_counted(self, count: int) -> None:
        r = self.r
        if "chip_count" in self.s.blocks:
            self.ignored("chip count", "the count is with the floorperson: awaiting a decision")
            return
        r.chips_entered.append(count)
        if count == r.chips_accepted:
            self.emit("chip_count.reconciled", self.chip_rule(), {"entered": count, "accepted": r.chips_accepted})
            self.start_dealing()
            return
        self.block(
            "chip_count",
            f"chip count {count} does not equal the {r.chips_accepted} counted wagers "
            "accepted: a floorperson must decide",
        )
        self.emit(
            "chip_count.mismatch",
            self.chip_rule(),
            {
                "entered": count,
                "accepted": r.chips_accepted,
                "counts": list(r.chips_entered),
                "remedy": "no card is dealt until a floorperson decides (proceed, recount or void)",
            },
        )

    def chip_decision(self, d: FloorpersonDecision) -> None:
        if self.s.phase is not Phase.RECONCILING or "chip_count" not in self.s.blocks:
            self.ignored("floorperson decision", "no chip count is awaiting a decision")
            return
        if d.decision not in ("proceed", "recount", "void"):
            self.refused("floorperson decision", f"{d.decision!r}: decide proceed, recount or void", None)
            return
        r = self.r
        self.s.blocks.pop("chip_count")
        self.emit(
            "chip_count.resolved",
            self.chip_rule(),
            {
                "decision": d.decision,
                "floorperson": d.floorperson,
                "note": d.note,
                "entered": list(r.chips_entered),
                "accepted": r.chips_accepted,
            },
        )
        if d.decision == "proceed":
            self.start_dealing()
        elif d.decision == "recount":
            self.emit(
                "chip_count.requested",
                self.chip_rule(),
                {"wagers": self.counted_wagers(), "accepted": r.chips_accepted, "recount": True},
            )
        else:
            self.void(
                self.chip_rule(),
                "the floorperson voided the round over the chip count "
                f"({r.chips_entered[-1]} counted, {r.chips_accepted} accepted)",
            )
