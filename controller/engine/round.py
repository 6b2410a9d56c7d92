"""The round, common to every chapter, as a pure state machine: (state, input) -> (state', effects).

No I/O, no awaiting, no clock: the shell feeds device events and controller inputs in, journals the
domain events that come out, and only then carries out the device commands. A chapter (ChapterSpec)
states what differs: its wagers, deal plans, decisions and settlement. Every domain event cites the
subsection that makes it happen; card identities travel in the sealed part until settlement.

Flow: shuffle -> every station unlocked -> betting -> "no more bets" -> every station's lock confirmed ->
deal (automated shoe stacks, manual shoe cards, or a card-reading shuffler's order dealt from the hand)
-> decisions clockwise from the dealer's left, each followed by its reveal -> settlement counterclockwise
from the dealer's right (the chapter's settle) -> shuffle. Irregularities void, reshuffle or block with
the chapter's remedy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from controller.cards import deck_problems
from controller.engine.inputs import CloseTable, Command, Input, OpenTable
from controller.engine.spec import ChapterSpec, DealingMethod, DealPlan, Decision, RoundView, SeatView
from controller.engine.state import Phase, RoundState, TableState
from controller.events import DomainEvent
from controller.games.settlement import Settled
from controller.money import fmt
from drivers.interfaces import (
    ButtonPressed,
    CardDrawn,
    DeviceFault,
    DeviceOffline,
    DeviceOnline,
    FaceUpCard,
    LockAcknowledged,
    ShuffleCompleted,
    StackDispensed,
    StubRemoved,
    WagerDetected,
    WagerRefused,
)

Effect = DomainEvent | Command
_CITATION = re.compile(r"\d{3}a\.\d+(?:\([a-z0-9]+\))+")

SHUFFLER_FAULTS = {"jam", "stopped", "incomplete"}  # .13(e)
SHOE_FAULTS = {"jam", "stopped", "empty", "misfeed"}  # .13(f)


class RoundEngine:
    """Steps one table. Holds only the chapter and its immutable rules; state travels outside."""

    def __init__(self, spec: ChapterSpec, rules: Any, method: DealingMethod = "automated_shoe") -> None:
        self.spec = spec
        self.rules = rules
        self.method = method
        self.offers = {o.spot: o for o in spec.offers(rules)}
        self.decisions = list(spec.decisions(rules))

    def step(self, state: TableState, inp: Input) -> tuple[TableState, list[Effect]]:
        s = state.clone()
        out: list[Effect] = []
        _Step(self, s, out).handle(inp)
        return s, out

    def rule(self, section: str) -> str:
        return self.spec.citations.get(section) or f"{self.spec.chapter}.{section}"


def _area(target: str) -> tuple[str, int | None]:
    name, _, index = target.partition("#")
    return name, int(index) if index else None


class _Step:
    """One input's worth of work on a private copy of the state."""

    def __init__(self, engine: RoundEngine, s: TableState, out: list[Effect]) -> None:
        self.e = engine
        self.spec = engine.spec
        self.rules = engine.rules
        self.s = s
        self.out = out

    # -- helpers -------------------------------------------------------------------------------

    @property
    def r(self) -> RoundState:
        assert self.s.round is not None, "no round in progress"
        return self.s.round

    @property
    def seats(self) -> int:
        return self.spec.seats(self.rules)

    def emit(self, type_: str, rule: str | None, payload: Mapping[str, Any] | None = None,
             sealed: Mapping[str, Any] | None = None) -> None:
        rid = self.s.round.round_id if self.s.round else None
        self.out.append(DomainEvent(type_, rule, dict(payload or {}), rid, sealed))

    def command(self, target: str, verb: str, seat: int | None = None, cards: int = 0) -> None:
        self.out.append(Command(target, verb, seat, cards))

    def ignored(self, what: str, why: str) -> None:
        self.emit("input.ignored", None, {"input": what, "reason": why, "phase": str(self.s.phase)})

    # -- dispatch ------------------------------------------------------------------------------

    def handle(self, inp: Input) -> None:
        match inp:
            case OpenTable():
                self.open_table()
            case CloseTable():
                self.close_table()
            case ShuffleCompleted():
                self.shuffle_completed(inp)
            case WagerDetected():
                self.wager(inp)
            case WagerRefused():
                self.emit("wager.rejected", self.e.rule("7(c)"), {
                    "seat": inp.seat, "spot": inp.spot, "amount": inp.amount_cents,
                    "reason": f"refused by the wager station's lock-out ({inp.reason}) after \"no more bets\""})
            case ButtonPressed(button="no_more_bets"):
                self.no_more_bets()
            case ButtonPressed(button="fold" | "withdraw" | "let_it_ride"):
                self.button_decision(inp.button)
            case ButtonPressed(button="dealt"):
                self.dealt_confirmed()
            case ButtonPressed(button="drawn_in_error"):
                self.drawn_in_error()
            case ButtonPressed(button="community_exposed"):
                self.community_exposed()
            case ButtonPressed():
                self.ignored(f"button {inp.button!r}", "not a button this controller knows")
            case LockAcknowledged():
                self.lock_acknowledged(inp)
            case StackDispensed():
                self.stack_dispensed(inp)
            case StubRemoved():
                self.stub_removed(inp)
            case CardDrawn():
                self.card_drawn(inp)
            case FaceUpCard():
                self.face_up(inp.card)
            case DeviceFault():
                self.device_fault(inp)
            case DeviceOnline():
                self.emit("device.online", None, {"device_id": inp.device_id, "identity": dict(inp.identity)})
            case DeviceOffline():
                self.emit("device.offline", None, {"device_id": inp.device_id, "reason": inp.reason})
            case _:
                self.ignored(type(inp).__name__, "not an input of this engine")

    # -- opening, closing, shuffling -------------------------------------------------------------

    def open_table(self) -> None:
        if self.s.phase is not Phase.CLOSED:
            self.ignored("open table", "the table is already open")
            return
        self.emit("table.opened", self.e.rule("open"), {
            "chapter": self.spec.chapter, "game": self.spec.name, "seats": self.seats,
            "dealing_method": self.e.method})
        self.start_shuffle()

    def close_table(self) -> None:
        if self.s.phase is Phase.CLOSED:
            self.ignored("close table", "the table is already closed")
        elif self.s.phase in (Phase.SHUFFLING, Phase.BETTING, Phase.BLOCKED):
            if self.s.round:  # no cards are out: wagers on the layout go back to their players
                for n, st in sorted(self.s.round.seats.items()):
                    for spot, amount in sorted(st.wagers.items()):
                        self.emit("wager.returned", self.e.rule("7(c)"), {
                            "seat": n, "spot": spot, "amount": amount, "reason": "the table closed"})
            self.closed()
        else:
            self.s.closing = True
            self.emit("table.closing", None, {"after_round": self.r.number})

    def closed(self) -> None:
        self.s.round = None
        self.s.phase = Phase.CLOSED
        self.s.closing = False
        self.emit("table.closed", None, {"rounds_played": self.s.rounds_played})
        for seat in range(1, self.seats + 1):
            self.command("wager_station", "lock", seat=seat)

    def start_shuffle(self) -> None:
        if self.s.closing:
            self.closed()
            return
        self.s.phase = Phase.SHUFFLING
        self.emit("shuffle.started", self.e.rule("shuffle"), {"device": "shuffler"})
        self.command("shuffler", "shuffle")

    def shuffle_completed(self, inp: ShuffleCompleted) -> None:
        if self.s.phase is not Phase.SHUFFLING:
            self.ignored("shuffle completed", "no shuffle was asked for")
            return
        if inp.card_count != 52:
            # .5(b): a counting shuffler that finds other than 52 cards: the deck leaves the table.
            self.s.phase = Phase.BLOCKED
            self.s.block_reason = f"shuffler counted {inp.card_count} cards; a new deck must be verified"
            self.emit("deck.removed", self.e.rule("count"), {"card_count": inp.card_count,
                                                             "reason": self.s.block_reason})
            return
        if self.e.method == "hand" and len(inp.order) != 52:
            self.s.phase = Phase.BLOCKED
            self.s.block_reason = ("dealing from the hand needs the shuffler's card order, and it gave none: "
                                   "use a card-reading shuffler or another dealing method")
            self.emit("table.blocked", None, {"reason": self.s.block_reason})
            return
        self.s.deck_order = list(inp.order)
        self.emit("shuffle.completed", self.e.rule("count"), {
            "card_count": 52, "deck_in": "shoe" if self.e.method != "hand" else "dealer's hand"})
        self.open_betting()

    # -- betting ---------------------------------------------------------------------------------

    def open_betting(self) -> None:
        """Unlock every wager station; betting opens once all have confirmed, so that no chips meet a
        station still locked from the last round."""
        n = self.s.rounds_played + 1
        self.s.rounds_played = n
        self.s.round = RoundState(number=n, round_id=f"{self.s.table_id}-r{n:06d}")
        self.s.phase = Phase.BETTING
        self.r.unlocks_pending = set(range(1, self.seats + 1))
        for seat in range(1, self.seats + 1):
            self.command("wager_station", "unlock", seat=seat)

    def betting_opened(self) -> None:
        first = next(iter(self.e.offers.values()))
        self.emit("betting.opened", self.e.rule("betting"), {
            "round_no": self.r.number, "seats": self.seats, "wagers_offered": list(self.e.offers),
            "ante_min": first.min_cents, "ante_max": first.max_cents})

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
            self.emit("wager.rejected", self.e.rule("7(c)"), {
                **base, "reason": "not a wager the table takes now: a decision wager is made when the dealer asks"})

    def pre_deal_wager(self, seat: int, spot: str, amount: int, base: dict[str, Any]) -> None:
        if self.s.phase is not Phase.BETTING:
            self.emit("wager.rejected", self.e.rule("7(c)"), {
                **base, "reason": "placed after \"no more bets\" or outside betting: not counted"})
            return
        offer = self.e.offers.get(spot)
        if offer is None:
            self.emit("wager.rejected", self.e.rule("7(c)"), {
                **base, "reason": f"this table does not offer a {spot} wager"})
            return
        wagers = self.r.seat(seat).wagers
        if amount == 0:
            if wagers.pop(spot, 0):
                self.emit("wager.withdrawn", self.e.rule("7(c)"), base)
            return
        if not offer.min_cents <= amount <= offer.max_cents:
            self.emit("wager.rejected", offer.rule, {
                **base, "reason": f"outside the table limits {fmt(offer.min_cents)} to {fmt(offer.max_cents)}"})
            return
        wagers[spot] = amount  # the sensor reports the chips on the spot, so the latest reading stands
        self.emit("wager.accepted", offer.rule, base)

    def no_more_bets(self) -> None:
        if self.s.phase is not Phase.BETTING:
            self.ignored("no more bets", "betting is not open")
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
                self.emit("wager.returned", offer.rule if offer else self.e.rule("player"), {
                    "seat": n, "spot": spot, "amount": amount, "reason": why})
            st.wagers.clear()
        if not players:
            self.emit("no_more_bets.refused", self.e.rule("player"), {"reason": "no player has made the wagers "
                                                                               "that enter a round"})
            return
        r.players = players
        self.s.phase = Phase.LOCKING
        r.locks_pending = set(range(1, self.seats + 1))
        self.emit("no_more_bets", self.lock_rule(), {
            "players": players, "wagers": {str(n): dict(r.seats[n].wagers) for n in players}})
        for seat in range(1, self.seats + 1):
            self.command("wager_station", "lock", seat=seat)

    def lock_rule(self) -> str:
        return self.e.rule({"automated_shoe": "10(a)(2)", "manual_shoe": "8(b)", "hand": "9(a)(3)"}[self.e.method])

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
            self.emit("lockout.confirmed", self.lock_rule(), {"stations": self.seats})
            self.start_dealing()

    # -- dealing ---------------------------------------------------------------------------------

    def plan(self) -> DealPlan:
        r = self.r
        return self.spec.plan(self.rules, self.e.method, r.players, {n: r.seats[n].wagers for n in r.players})

    def start_dealing(self) -> None:
        self.s.phase = Phase.DEALING
        plan = self.plan()
        if self.e.method == "automated_shoe":
            self.command("shoe", "dispense_stack", cards=len(plan.stacks[0].targets))
        elif self.e.method == "hand":
            # The deck's order is known: the layout follows from the chapter's dealing order.
            for target, card in zip(plan.cards, self.s.deck_order, strict=False):
                self.place(target, card, plan.rule)
            self.r.cards_dealt = len(plan.cards)
            self.s.phase = Phase.DEALT
            self.emit("deal.awaiting_dealer", plan.rule, {"cards": len(plan.cards)})
        # A manual shoe: the dealer draws; each card the reader sees arrives as CardDrawn.

    def place(self, target: str, card: str, rule: str) -> None:
        r = self.r
        r.dealt.append(card)
        area, index = _area(target)
        if area.startswith("seat:"):
            seat = int(area[5:])
            r.seats[seat].cards.append(card)
            return
        cards = r.areas.setdefault(area, [])
        if index is None:
            cards.append(card)
        else:
            while len(cards) < index:
                cards.append("")
            cards[index - 1] = card

    def stack_dispensed(self, inp: StackDispensed) -> None:
        if self.s.phase is not Phase.DEALING or self.e.method != "automated_shoe":
            self.ignored("stack dispensed", "no stack was asked for")
            return
        plan = self.plan()
        r = self.r
        if r.stacks_dispensed >= len(plan.stacks):
            self.ignored("stack dispensed", "every stack of the round is already out")
            return
        stack = plan.stacks[r.stacks_dispensed]
        r.stacks_dispensed += 1
        if len(inp.cards) != len(stack.targets):
            r.dealt.extend(inp.cards)
            self.void(self.e.rule("13(c)"), f"a stack of {len(inp.cards)} cards instead of {len(stack.targets)}")
            return
        for target, card in zip(stack.targets, inp.cards, strict=True):
            self.place(target, card, stack.rule)
        self.report_stack(stack.targets, list(inp.cards), stack.rule)
        if r.stacks_dispensed < len(plan.stacks):
            self.command("shoe", "dispense_stack", cards=len(plan.stacks[r.stacks_dispensed].targets))
        else:
            self.command("shoe", "remove_stub")

    def report_stack(self, targets: tuple[str, ...], cards: list[str], rule: str) -> None:
        """One event per area a stack or hand deal fills: `cards.dealt` for a seat, `<area>.dealt` else."""
        groups: dict[str, list[str]] = {}
        for t, c in zip(targets, cards, strict=True):
            groups.setdefault(_area(t)[0], []).append(c)
        for area, got in groups.items():
            if area.startswith("seat:"):
                self.emit("cards.dealt", rule, {"seat": int(area[5:]), "count": len(got)}, {"cards": got})
            else:
                self.emit(f"{area}.dealt", rule, {"count": len(got)}, {"cards": got})

    def stub_removed(self, inp: StubRemoved) -> None:
        if self.s.phase is not Phase.DEALING or self.e.method != "automated_shoe" \
                or self.r.stacks_dispensed < len(self.plan().stacks):
            self.ignored("stub removed", "the stub was not asked for")
            return
        plan = self.plan()
        r = self.r
        stub = list(inp.cards)
        problems = deck_problems(r.dealt + r.discarded + stub)
        if problems:
            self.void(self.e.rule("13(c)"), "deck check failed: " + "; ".join(problems))
            return
        hand_dealt, stub = stub[: len(plan.from_stub)], stub[len(plan.from_stub):]
        for target, card in zip(plan.from_stub, hand_dealt, strict=True):
            self.place(target, card, plan.rule)
        if plan.from_stub:
            self.report_stack(plan.from_stub, hand_dealt, plan.rule)
        self.emit("stub.discarded", plan.rule, {"count": len(stub)})
        self.dealing_complete()

    def card_drawn(self, inp: CardDrawn) -> None:
        if self.s.phase is not Phase.DEALING or self.e.method != "manual_shoe":
            self.ignored("card drawn", "no cards are being dealt from a manual shoe")
            return
        plan = self.plan()
        r = self.r
        if inp.card in r.dealt or inp.card in r.discarded:
            self.void(self.e.rule("13(c)"), f"the shoe gave {inp.card} a second time: the deck is not whole")
            return
        target = plan.cards[r.cards_dealt]
        r.cards_dealt += 1
        self.place(target, inp.card, plan.rule)
        self.emit("card.dealt", plan.rule, {"to": _area(target)[0]}, {"card": inp.card})
        if r.cards_dealt == len(plan.cards):
            self.emit("stub.discarded", plan.rule, {"count": 52 - len(r.dealt) - len(r.discarded)})
            self.dealing_complete()

    def dealt_confirmed(self) -> None:
        if self.s.phase is not Phase.DEALT:
            self.ignored("dealt", "no deal from the hand is awaiting confirmation")
            return
        plan = self.plan()
        self.report_stack(plan.cards, self.r.dealt[: len(plan.cards)], plan.rule)
        self.emit("stub.discarded", plan.rule, {"count": 52 - len(plan.cards) - len(self.r.discarded)})
        self.dealing_complete()

    def dealing_complete(self) -> None:
        self.s.phase = Phase.DECISION
        self.r.decision = 0
        if not self.e.decisions:
            self.settle()
            return
        self.next_decision()

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
        self.emit("card.face_up_discarded", self.e.rule("13(a)"),
                  {"remedy": "not used this round; to the discard rack"}, {"card": card})

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
        self.void(self.e.rule("13(d)"), "a community card was exposed before every decision was made")

    def device_fault(self, inp: DeviceFault) -> None:
        self.emit("device.fault", None, {"device_id": inp.device_id, "code": inp.code, "detail": inp.detail})
        if inp.device_id == "shuffler" and self.s.phase is Phase.SHUFFLING and inp.code in SHUFFLER_FAULTS:
            self.emit("shuffle.failed", self.e.rule("13(e)"), {"code": inp.code, "remedy": "the cards are reshuffled"})
            self.start_shuffle()
        elif inp.device_id == "shoe" and self.s.phase is Phase.DEALING and inp.code in SHOE_FAULTS:
            self.void(self.e.rule("13(f)"), f"the automated dealing shoe reported {inp.code}: {inp.detail}")
        elif inp.device_id == "shoe" and self.s.phase is Phase.DEALING and inp.code == "foreign_card":
            # A card that is not of the inspected deck: the hands cannot stand, as with a deck that fails its check.
            self.void(self.e.rule("13(c)"), f"the shoe read a card foreign to the deck: {inp.detail}")

    def void(self, rule: str, reason: str) -> None:
        """All hands void, every wager returned, the cards reshuffled."""
        r = self.r
        returned = {}
        for n, st in sorted(r.seats.items()):
            every = {**st.collected, **st.withdrawn, **st.wagers}
            if every:
                returned[str(n)] = every
        self.emit("round.voided", rule, {"reason": reason, "returned": returned,
                                         "remedy": "all wagers returned; cards reshuffled"})
        self.s.round = None
        self.start_shuffle()

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
            payload: dict[str, Any] = {"seat": seat, "decision": d.key, "street": d.name, "spot": d.spot,
                                       "kind": d.kind}
            if d.kind == "wager_or_fold":
                payload["allowed"] = list(self.spec.allowed(self.rules, d, r.seats[seat].wagers))
            self.emit("decision.requested", d.rule, payload)
            return
        r.turn = None
        if d.reveal:
            area, index = _area(d.reveal)
            card = r.areas.get(area, [])[(index or 1) - 1]
            r.revealed.append(d.reveal)
            self.emit("community.revealed" if area == "community" else f"{area}.revealed", d.reveal_rule,
                      {"index": index, "after": d.name}, {"card": card})
        if r.decision + 1 < len(self.e.decisions):
            r.decision += 1
            self.next_decision()
        else:
            self.settle()

    def decision_wager(self, seat: int, amount: int, base: dict[str, Any], d: Decision) -> None:
        r = self.r
        if seat != r.turn:
            self.emit("wager.rejected", d.rule, {
                **base, "reason": f"seat {r.turn} is deciding; seat {seat} must wait for its turn"})
            return
        allowed = list(self.spec.allowed(self.rules, d, r.seats[seat].wagers))
        if amount not in allowed:
            self.emit("wager.rejected", d.rule, {
                **base, "reason": "must be one of " + ", ".join(map(fmt, allowed))})
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
            self.emit("seat.folded", d.rule, {
                "seat": seat, "street": d.name, "decision": d.key, "collected": dict(st.collected),
                # With an optional wager the cards stay on the table until it is settled.
                "cards": "left on the table" if optional else "to the discard rack",
                "optional_wagers_pending": optional})
        elif button in ("withdraw", "let_it_ride") and d.kind == "ride_or_withdraw":
            if button == "withdraw":
                st.withdrawn[d.spot] = st.wagers.pop(d.spot)
            self.emit("bet.withdrawn" if button == "withdraw" else "bet.rides", d.rule, {
                "seat": seat, "decision": d.key, "bet": d.spot, "amount": st.withdrawn.get(d.spot) or
                st.wagers.get(d.spot)})
        else:
            self.ignored(button, f"not an answer to {d.name}")
            return
        self.next_decision(after=seat)

    # -- settlement ------------------------------------------------------------------------------

    def view(self) -> RoundView:
        r = self.r
        return RoundView(
            round_id=r.round_id,
            seats=tuple(SeatView(n, tuple(r.seats[n].cards), {**r.seats[n].collected, **r.seats[n].withdrawn,
                                                               **r.seats[n].wagers},
                                 r.seats[n].folded_on, frozenset(r.seats[n].withdrawn))
                        for n in r.players),
            areas={k: tuple(v) for k, v in r.areas.items()})

    def settle(self) -> None:
        """Counterclockwise from the dealer's right, through the chapter's own settlement."""
        r = self.r
        rows, _ = self.spec.settle(self.rules, self.view())
        revealed: set[str] = set()
        last = {x.seat: i for i, x in enumerate(rows)}
        for seat in sorted(last, key=last.__getitem__):  # in the order each seat's settlement completed
            mine = [x for x in rows if x.seat == seat]
            st = r.seats[seat]
            main = [x for x in mine if x.wager in self.spec.main_wagers]
            if main and not st.folded:  # a fold's wagers were collected and reported at the fold
                limit_rule = next((m.group(0) for x in main if x.note and (m := _CITATION.search(x.note))), None)
                self.emit("hand.settled", main[0].rule, {
                    "seat": seat, "cards": st.cards, "community": r.areas.get("community", []),
                    "hand": main[0].hand, "paytable": main[0].paytable, "payout_limited": limit_rule is not None,
                    "payout_limit_rule": limit_rule, "wagers": [_wager(x) for x in main],
                    "paid": sum(x.paid for x in main)})
            for x in mine:
                if x.wager in self.spec.main_wagers:
                    continue
                if x.wager in self.spec.reveal_before and x.wager not in revealed:
                    revealed.add(x.wager)
                    event, rule, area = self.spec.reveal_before[x.wager]
                    self.emit(event, rule, {"cards": r.areas.get(area, [])})
                payload: dict[str, Any] = {"seat": seat, "cards": st.cards, "hand": x.hand, "paytable": x.paytable,
                                           **_wager(x)}
                if x.note:
                    payload["note"] = x.note
                self.emit(f"{x.wager}.settled", x.rule, payload)
        paid, collected = sum(x.paid for x in rows), sum(x.collected for x in rows)
        self.emit("round.completed", self.e.rule("complete"), {
            "round_no": r.number, "players": list(r.players), "areas": {k: list(v) for k, v in r.areas.items()},
            "paid": paid, "collected": collected, "table_result": collected - paid})
        self.s.round = None
        self.start_shuffle()


def _wager(x: Settled) -> dict[str, Any]:
    return {"wager": x.wager, "amount": x.amount, "outcome": x.outcome, "odds": x.odds, "paid": x.paid,
            "returned": x.returned, "collected": x.collected}
