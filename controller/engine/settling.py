"""Settlement: a player who leaves during a round and the abandoned wagers (.7(b)), the chapter's
settlement events counterclockwise from the dealer's right, and the round's completion (with two decks,
the other deck comes into play, .3(b)(3))."""

from __future__ import annotations

import re
from typing import Any

from controller.core.settlement import Settled
from controller.engine.spec import RoundView, SeatView
from controller.engine.state import Phase
from controller.engine.step import _StepBase

_CITATION = re.compile(r"\d{3}a\.\d+(?:\([a-z0-9]+\))+")


class _SettlingMixin(_StepBase):
    # -- a player who leaves during a round (.7(b)) ------------------------------------------------

    def player_left(self, seat: int) -> None:
        r = self.s.round
        if r is None or seat not in r.seats:
            self.ignored(f"player left seat {seat}", "no wager of that seat is in play")
            return
        st = r.seats[seat]
        if self.s.phase is Phase.BETTING:  # no card yet: the wagers come off the layout for the player
            for spot, amount in sorted(st.wagers.items()):
                self.emit(
                    "wager.returned",
                    self.e.rule("7(c)"),
                    {"seat": seat, "spot": spot, "amount": amount, "reason": "the player left before the deal"},
                )
            st.wagers.clear()
            return
        if seat not in r.players or seat in r.left or not st.wagers:
            self.ignored(f"player left seat {seat}", "no live wager of that seat is in play")
            return
        how = self.opts.abandoned_wagers
        wagers = dict(st.wagers)
        r.left[seat] = how
        st.collected.update(wagers)
        st.wagers.clear()
        if how == "hold":
            held = self.s.held_wagers.setdefault(seat, {})
            for spot, amount in wagers.items():
                held[spot] = held.get(spot, 0) + amount
        self.emit(
            "wagers.abandoned",
            self.e.rule("7(b)"),
            {
                "seat": seat,
                "disposition": how,
                "wagers": wagers,
                "phase": str(self.s.phase),
                "remedy": "treated as losing wagers and collected"
                if how == "lose"
                else "held for the player; the hand takes no further part",
            },
        )
        if self.s.phase is Phase.DECISION and r.turn == seat:
            self.next_decision(after=seat)

    # -- settlement ------------------------------------------------------------------------------

    def view(self) -> RoundView:
        r = self.r
        return RoundView(
            round_id=r.round_id,
            seats=tuple(
                SeatView(
                    n,
                    tuple(r.seats[n].cards),
                    {**r.seats[n].collected, **r.seats[n].withdrawn, **r.seats[n].wagers},
                    r.seats[n].folded_on,
                    frozenset(r.seats[n].withdrawn),
                )
                for n in r.players
                if n not in r.left
            ),
            areas={k: tuple(v) for k, v in r.areas.items()},
            meters=self.meter_values(),
        )

    def settle(self) -> None:
        """Counterclockwise from the dealer's right, through the chapter's own settlement."""
        r = self.r
        view = self.view()
        rows, _ = self.spec.settle(self.rules, view) if view.seats else ([], {})
        rows = self.take_hits(rows)  # each meter award at that seat's turn, from the meter model
        revealed: set[str] = set()
        last = {x.seat: i for i, x in enumerate(rows)}
        for seat in sorted(last, key=last.__getitem__):  # in the order each seat's settlement completed
            mine = [x for x in rows if x.seat == seat]
            st = r.seats[seat]
            main = [x for x in mine if x.wager in self.spec.main_wagers]
            if main and not st.folded:  # a fold's wagers were collected and reported at the fold
                limit_rule = next((m.group(0) for x in main if x.note and (m := _CITATION.search(x.note))), None)
                # A withdrawn bet (643a.11(b)) has no hand: the riding bets' row says how the hand settled.
                lead = next((x for x in main if x.outcome != "withdrawn"), main[0])
                payload: dict[str, Any] = {
                    "seat": seat,
                    "cards": st.cards,
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
                self.emit("hand.settled", lead.rule, payload)
            for x in mine:
                if x.wager not in self.spec.main_wagers:
                    self.emit_settled(x, revealed)
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
        if self.hold_for_jackpot(done):
            return  # round.completed once every hit is validated (engine/progressive.py)
        self.emit("round.completed", self.e.rule("complete"), done)
        self.round_over()

    def emit_settled(self, x: Settled, revealed: set[str]) -> None:
        """`<wager>.settled` for a wager settled on its own, after revealing the cards it needs (655a.11(i)(4))."""
        r = self.r
        if x.wager in self.spec.reveal_before and x.wager not in revealed:
            revealed.add(x.wager)
            event, rule, area = self.spec.reveal_before[x.wager]
            self.emit(event, rule, {"cards": r.areas.get(area, [])})
        payload: dict[str, Any] = {
            "seat": x.seat,
            "cards": r.seats[x.seat].cards,
            "hand": x.hand,
            "paytable": x.paytable,
            **_wager(x),
        }
        if x.note:
            payload["note"] = x.note
        self.emit(f"{x.wager}.settled", x.rule, payload)

    def round_over(self) -> None:
        """The round's cards go to the shuffler; with two decks the other deck comes into play (.3(b)(3))."""
        if self.opts.decks == "two_decks" and not self.manual_shuffle() and len(self.s.decks) > 1:
            labels = sorted(self.s.decks)
            self.s.next_deck = labels[(labels.index(self.r.deck) + 1) % len(labels)]
        self.s.round = None
        self.start_shuffle()


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
