"""Decisions: each seat asked clockwise, decision wagers, folds, ride or withdraw, and the reveal after each
decision."""

from __future__ import annotations

from typing import Any

from controller.core.money import fmt
from controller.engine.spec import Decision
from controller.engine.state import Phase
from controller.engine.step import _area, _StepBase


class _DecisionsMixin(_StepBase):
    # -- decisions -------------------------------------------------------------------------------

    def current_decision(self) -> Decision | None:
        if self.s.phase is not Phase.DECISION or self.s.round is None:
            return None
        return self.e.decisions[self.r.decision]

    def next_decision(self, after: int | None = None) -> None:
        """Ask the next seat clockwise, or reveal and move on when everyone has decided."""
        r = self.r
        d = self.e.decisions[r.decision]
        waiting = [n for n in r.in_play() if after is None or r.players.index(n) > r.players.index(after)]
        if waiting:
            seat = waiting[0]
            r.turn = seat
            payload: dict[str, Any] = {
                "seat": seat,
                "decision": d.key,
                "street": d.name,
                "spot": d.spot,
                "kind": d.kind,
            }
            if d.kind == "wager_or_fold":
                payload["allowed"] = list(self.spec.allowed(self.rules, d, r.seats[seat].wagers))
            self.emit("decision.requested", d.rule, payload)
            return
        r.turn = None
        if d.reveal:
            area, index = _area(d.reveal)
            card = r.areas.get(area, [])[(index or 1) - 1]
            r.revealed.append(d.reveal)
            self.emit(
                "community.revealed" if area == "community" else f"{area}.revealed",
                d.reveal_rule,
                {"index": index, "after": d.name},
                {"card": card},
            )
        if r.decision + 1 < len(self.e.decisions):
            r.decision += 1
            self.next_decision()
        else:
            self.settle()

    def decision_wager(self, seat: int, amount: int, base: dict[str, Any], d: Decision) -> None:
        r = self.r
        if seat != r.turn:
            self.emit(
                "wager.rejected",
                d.rule,
                {**base, "reason": f"seat {r.turn} is deciding; seat {seat} must wait for its turn"},
            )
            return
        allowed = list(self.spec.allowed(self.rules, d, r.seats[seat].wagers))
        if amount not in allowed:
            self.emit("wager.rejected", d.rule, {**base, "reason": "must be one of " + ", ".join(map(fmt, allowed))})
            return
        r.seats[seat].wagers[d.spot] = amount
        first = self.spec.main_wagers[0]
        ante = r.seats[seat].wagers.get(first, 0)
        payload: dict[str, Any] = {"seat": seat, "street": d.name, "decision": d.key, "amount": amount}
        if ante:
            payload["multiple"] = amount // ante
        self.emit("street_wager.placed", d.rule, payload)
        self.next_decision(after=seat)

    def button_decision(self, button: str) -> None:
        d = self.current_decision()
        seat = self.s.round.turn if self.s.round else None
        if d is None or seat is None:
            self.ignored(button, "no decision is awaited")
            return
        st = self.r.seats[seat]
        if button == "fold" and d.kind == "wager_or_fold":
            st.folded_on = d.key
            st.collected = {w: st.wagers.pop(w) for w in self.spec.main_wagers if w in st.wagers}
            optional = sorted(w for w in st.wagers)
            self.emit(
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
            self.emit(
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
            self.ignored(button, f"not an answer to {d.name}")
            return
        self.next_decision(after=seat)
