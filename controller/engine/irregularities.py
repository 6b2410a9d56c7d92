"""Irregularities: a card face up (.13(a)), drawn in error (.13(b)), an exposed community card (.13(d)),
device faults (.13(c), (e), (f)), devices out of order (.13(g)), the void of a round and the
progressive contributions taken back (engine/progressive.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controller.core.settlement import Settled
from controller.engine.inputs import MarkOutOfOrder
from controller.engine.state import Phase
from controller.engine.step import _StepBase, _usable_method
from drivers.interfaces import DeviceFault

SHUFFLER_FAULTS = {"jam", "stopped", "incomplete"}  # .13(e)
SHOE_FAULTS = {"jam", "stopped", "empty", "misfeed"}  # .13(f)
DEVICES = ("shuffler", "shoe")  # the devices .13(g) has marked out of order
SHOE_METHODS = ("automated_shoe", "manual_shoe")


class _IrregularitiesMixin(_StepBase):
    # -- irregularities the dealer or the devices report -----------------------------------------

    def face_up(self, card: str) -> None:
        """.13(a): a card found face up while dealing is not used; more than one voids the round."""
        if self.s.phase is not Phase.DEALING:
            self.ignored("face-up card", "no cards are being dealt")
            return
        r = self.r
        r.discarded.append(card)
        if len(r.discarded) > 1:
            self.void(self.e.rule("13(a)"), f"{len(r.discarded)} cards found face up while dealing")
            return
        self.emit(
            "card.face_up_discarded",
            self.e.rule("13(a)"),
            {"remedy": "not used this round; to the discard rack"},
            {"card": card},
        )

    def drawn_in_error(self) -> None:
        """.13(b): a card drawn in error without its face exposed is used as the next card."""
        if self.s.phase not in (Phase.DEALING, Phase.DEALT):
            self.ignored("drawn in error", "no cards are being dealt")
            return
        self.emit("card.drawn_in_error", self.e.rule("13(b)"), {"remedy": "used as the next card"})

    def community_exposed(self) -> None:
        """.13(d): a community card exposed before every decision is made voids the round."""
        if self.s.phase not in (Phase.DEALING, Phase.DEALT, Phase.DECISION):
            self.ignored("community card exposed", "no community card is on the layout")
            return
        # 683a.13(d): the hands are void, but the optional wagers are still settled; the chapter knows which
        # (this needs the whole deal on the layout, hence DECISION only).
        rows = self.spec.settle_on_exposure(self.rules, self.view()) if self.s.phase is Phase.DECISION else None
        if rows is None:
            self.void(self.e.rule("13(d)"), "a community card was exposed before every decision was made")
            return
        self.void(
            self.e.rule("13(d)"),
            "a community card was exposed before every decision was made",
            remedy="hands void and their wagers returned; optional wagers settled; cards reshuffled",
            settled=rows,
        )

    def device_fault(self, inp: DeviceFault) -> None:
        self.emit("device.fault", None, {"device_id": inp.device_id, "code": inp.code, "detail": inp.detail})
        dev = inp.device_id
        if dev in self.s.out_of_order:
            return  # covered: nothing it says is used
        if dev == "shuffler" and inp.code in SHUFFLER_FAULTS:
            if self.s.phase is Phase.SHUFFLING:
                self.emit(
                    "shuffle.failed", self.e.rule("13(e)"), {"code": inp.code, "remedy": "the cards are reshuffled"}
                )
                self.start_shuffle()
        elif dev == "shoe" and inp.code in SHOE_FAULTS:
            if self.s.phase is Phase.DEALING and self.method == "automated_shoe":
                self.void(self.e.rule("13(f)"), f"the automated dealing shoe reported {inp.code}: {inp.detail}")
        elif dev == "shoe" and inp.code == "foreign_card":
            if self.s.phase is Phase.DEALING:
                # A card that is not of the inspected deck: the hands cannot stand, as with a deck that fails
                # its check.
                self.void(self.e.rule("13(c)"), f"the shoe read a card foreign to the deck: {inp.detail}")
        elif dev in DEVICES:
            # Any other fault (malfunction, failed command, no device): it cannot be used (.13(g)).
            self.device_down(dev, f"fault {inp.code}" + (f": {inp.detail}" if inp.detail else ""))

    # -- devices out of order (.13(g)) -------------------------------------------------------------

    def device_down(self, dev: str, why: str) -> None:
        if dev not in DEVICES or dev in self.s.out_of_order:
            return
        if dev == "shoe" and self.e.method == "hand":
            return  # dealing from the hand uses no shoe
        self.s.devices_down[dev] = why
        self.block(
            f"device:{dev}",
            f"the {dev} is {why}: bring it back, or mark it out of order (.13(g)) before "
            "any other method of shuffling or dealing is used",
        )
        self.emit(
            "device.unusable",
            self.e.rule("13(g)"),
            {
                "device": dev,
                "reason": why,
                "phase": str(self.s.phase),
                "remedy": f"no new round until it is back or marked out of order; then {self.takeover(dev)} takes over",
            },
        )
        if dev == "shoe" and self.s.phase is Phase.DEALING and self.method in SHOE_METHODS:
            rule = self.e.rule("13(f)") if self.method == "automated_shoe" else self.e.rule("13(g)")
            self.void(rule, f"the dealing shoe stopped dealing: {why}")
        elif dev == "shuffler" and self.s.phase is Phase.SHUFFLING:
            self.enter_blocked()  # the shuffle cannot complete; the cards are reshuffled once it is cleared
        else:
            self.pause_empty_betting()

    def device_back(self, dev: str) -> None:
        if dev in self.s.devices_down:
            del self.s.devices_down[dev]
            self.unblock(f"device:{dev}", f"{dev} online")

    def takeover(self, dev: str, out: Mapping[str, str] | None = None) -> str:
        ooo = {**self.s.out_of_order, dev: ""} if out is None else out
        if dev == "shuffler":
            method = _usable_method(self.e.method, self.opts.fallback_dealing_method, ooo)
            return "manual shuffle and cut" + (f", dealing by {method}" if method and method != self.e.method else "")
        return _usable_method(self.e.method, self.opts.fallback_dealing_method, ooo) or "no other dealing method"

    def mark_out_of_order(self, inp: MarkOutOfOrder) -> None:
        dev = inp.device
        if dev not in DEVICES:
            self.ignored(f"out of order {dev!r}", "only the shuffler or the shoe is marked out of order")
            return
        if not inp.out:
            if dev not in self.s.out_of_order:
                self.ignored(f"back in service {dev}", "it is not marked out of order")
            elif dev in self.s.devices_down:
                self.refused(f"back in service {dev}", f"the {dev} is {self.s.devices_down[dev]}", self.e.rule("13(g)"))
            elif self.s.phase not in (Phase.BLOCKED, Phase.OPENING, Phase.BETTING, Phase.CLOSED):
                self.refused(f"back in service {dev}", "only between rounds", self.e.rule("13(g)"))
            else:
                del self.s.out_of_order[dev]
                self.emit(
                    "device.back_in_service", self.e.rule("13(g)"), {"device": dev, "dealing_method": self.method}
                )
                self.unblock("no_method", f"{dev} back in service")
            return
        if dev in self.s.out_of_order:
            self.ignored(f"out of order {dev}", "already marked out of order")
            return
        takes_over = self.takeover(dev)
        was_dealing = dev == "shoe" and self.s.phase is Phase.DEALING and self.method in SHOE_METHODS
        was_shuffling = dev == "shuffler" and self.s.phase is Phase.SHUFFLING
        self.s.out_of_order[dev] = takes_over
        reason = self.s.devices_down.pop(dev, "marked by the dealer")
        self.emit(
            "device.out_of_order",
            self.e.rule("13(g)"),
            {
                "device": dev,
                "reason": reason,
                "takes_over": takes_over,
                "dealing_method": self.method,
                "decks": "one deck" if dev == "shuffler" and self.opts.decks == "two_decks" else None,
            },
        )
        if _usable_method(self.e.method, self.opts.fallback_dealing_method, self.s.out_of_order) is None:
            self.block("no_method", f"the {dev} is out of order and no other dealing method is configured")
        self.s.blocks.pop(f"device:{dev}", None)
        if was_dealing:
            self.void(
                self.e.rule("13(f)") if self.method == "automated_shoe" else self.e.rule("13(g)"),
                "the dealing shoe was marked out of order while dealing",
            )
        elif was_shuffling:
            self.start_shuffle()  # the shuffle starts over by hand
        elif self.s.round is None and self.s.phase in (Phase.BLOCKED, Phase.OPENING):
            if self.s.blocks:
                self.enter_blocked()
            else:
                self.s.block_reason = None
                self.start_shuffle()

    def void(
        self,
        rule: str,
        reason: str,
        remedy: str = "all wagers returned; cards reshuffled",
        settled: Sequence[Settled] = (),
    ) -> None:
        """All hands void, every wager returned (those of a player who left included), the cards reshuffled;
        except the wagers the chapter still settles (`settled`, e.g. 683a.13(d)), reported after the void."""
        r = self.r
        kept = {(x.seat, x.wager) for x in settled}
        returned = {}
        for n, st in sorted(r.seats.items()):
            every = {w: a for w, a in {**st.collected, **st.withdrawn, **st.wagers}.items() if (n, w) not in kept}
            if every:
                returned[str(n)] = every
        payload: dict[str, Any] = {"reason": reason, "returned": returned, "remedy": remedy}
        if r.left:
            payload["players_left"] = sorted(r.left)  # their wagers are held for them, not paid out at the table
        self.emit("round.voided", rule, payload)
        revealed: set[str] = set()
        for x in settled:
            self.emit_settled(x, revealed)
        self.reverse_progressive_contributions(rule, returned)
        self.round_over()
