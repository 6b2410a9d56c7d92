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
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from controller.cards import deck_problems
from controller.engine.inputs import (
    CloseTable,
    Command,
    Confirm,
    CountEntered,
    FloorpersonDecision,
    Input,
    MarkOutOfOrder,
    OpenTable,
    PlayerLeft,
    Tick,
)
from controller.engine.spec import (
    DEFAULT_COUNTED_WAGERS,
    DEFAULT_PROGRESSIVE_WAGERS,
    ChapterSpec,
    DealingMethod,
    DealPlan,
    Decision,
    RoundView,
    SeatView,
    TableOptions,
)
from controller.engine.state import DeckLife, Phase, RoundState, TableState
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
DEVICES = ("shuffler", "shoe")  # the devices .13(g) has marked out of order
SHOE_METHODS = ("automated_shoe", "manual_shoe")
# Blocks that stop a round already in betting from being dealt (others only stop the next round).
_STOPS_DEALING = ("device:", "no_method", "deck_removed")
# Inputs that are gaming activity (.5(f)): anything a player or the dealer does at the layout.
_ACTIVITY = (WagerDetected, WagerRefused, ButtonPressed, CardDrawn, StackDispensed, StubRemoved, CountEntered,
             PlayerLeft)


class RoundEngine:
    """Steps one table. Holds only the chapter and its immutable rules; state travels outside."""

    def __init__(self, spec: ChapterSpec, rules: Any, method: DealingMethod = "automated_shoe",
                 options: TableOptions | None = None) -> None:
        require = getattr(spec, "require_method", None)
        if require is not None:
            require(method)  # a chapter whose other dealing sections are unpublished refuses them up front
        self.spec = spec
        self.rules = rules
        self.method = method
        opts = options or TableOptions.from_rules(rules)
        supported = getattr(spec, "supported_methods", None)
        if supported is not None and opts.fallback_dealing_method not in supported:
            # The chapter publishes no procedure for that method: once its device is out of order (.13(g)) the
            # table waits for it (the `no_method` block) instead of dealing by a method the chapter lacks.
            opts = replace(opts, fallback_dealing_method=None)
        self.options = opts
        self.offers = {o.spot: o for o in spec.offers(rules)}
        self.decisions = list(spec.decisions(rules))
        counted = getattr(spec, "counted_wagers", DEFAULT_COUNTED_WAGERS)
        self.counted: dict[str, str | None] = (dict(counted) if isinstance(counted, Mapping)
                                               else dict.fromkeys(counted))
        self.progressive = tuple(getattr(spec, "progressive_wagers", DEFAULT_PROGRESSIVE_WAGERS))

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

    def refused(self, what: str, why: str, rule: str | None) -> None:
        """An input the rules forbid now (not merely out of place): recorded with the rule."""
        self.emit("input.refused", rule, {"input": what, "reason": why, "phase": str(self.s.phase)})

    @property
    def opts(self) -> TableOptions:
        return self.e.options

    @property
    def method(self) -> DealingMethod:
        """The dealing method in use: the configured one, or what took over from a device marked out of
        order (.13(g)); when none is usable the `no_method` block keeps the table from dealing."""
        return _usable_method(self.e.method, self.opts.fallback_dealing_method, self.s.out_of_order) or self.e.method

    def manual_shuffle(self) -> bool:
        return "shuffler" in self.s.out_of_order

    def shuffler_counts(self) -> bool:
        return self.opts.shuffler_counts and not self.manual_shuffle()

    # -- blocks ----------------------------------------------------------------------------------

    def block(self, key: str, reason: str) -> None:
        """No new round until this is cleared. Between rounds the table shows BLOCKED at once (the caller
        emits the event that says why); during a round the block waits for the round to end."""
        self.s.blocks[key] = reason
        if self.s.round is None and self.s.phase in (Phase.BLOCKED, Phase.OPENING):
            self.s.block_reason = self.reasons()

    def reasons(self) -> str:
        return "; ".join(self.s.blocks.values())

    def enter_blocked(self) -> None:
        self.s.phase = Phase.OPENING if "inspection" in self.s.blocks else Phase.BLOCKED
        reason = self.reasons()
        if reason != self.s.block_reason:
            self.s.block_reason = reason
            self.emit("table.blocked", None, {"reasons": dict(self.s.blocks)})

    def unblock(self, key: str, by: str) -> None:
        if self.s.blocks.pop(key, None) is None:
            return
        self.emit("table.block_cleared", None, {"block": key, "by": by, "remaining": dict(self.s.blocks)})
        if self.s.phase in (Phase.BLOCKED, Phase.OPENING) and self.s.round is None:
            if self.s.blocks:
                self.enter_blocked()
            else:
                self.s.block_reason = None
                self.start_shuffle()

    def pause_empty_betting(self) -> None:
        """A block that arises while betting is open and no wager is on the layout: betting closes now."""
        r = self.s.round
        if self.s.phase is Phase.BETTING and r is not None and not any(st.wagers for st in r.seats.values()):
            self.s.round = None
            for seat in range(1, self.seats + 1):
                self.command("wager_station", "lock", seat=seat)
            self.enter_blocked()

    # -- dispatch ------------------------------------------------------------------------------

    def handle(self, inp: Input) -> None:
        if isinstance(inp, _ACTIVITY) and self.s.now is not None:
            self.s.last_activity = self.s.now
        match inp:
            case OpenTable():
                self.open_table()
            case CloseTable():
                self.close_table()
            case Tick():
                self.tick(inp)
            case Confirm():
                self.confirm(inp)
            case CountEntered():
                self.count_entered(inp)
            case FloorpersonDecision():
                self.floorperson_decision(inp)
            case MarkOutOfOrder():
                self.mark_out_of_order(inp)
            case PlayerLeft():
                self.player_left(inp.seat)
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
                self.device_back(inp.device_id)
            case DeviceOffline():
                self.emit("device.offline", None, {"device_id": inp.device_id, "reason": inp.reason})
                self.device_down(inp.device_id, f"offline ({inp.reason})" if inp.reason else "offline")
            case _:
                self.ignored(type(inp).__name__, "not an input of this engine")

    # -- opening, closing, shuffling -------------------------------------------------------------

    def open_table(self) -> None:
        if self.s.phase is not Phase.CLOSED:
            self.ignored("open table", "the table is already open")
            return
        labels = ("A", "B") if self.opts.decks == "two_decks" else ("A",)
        self.s.decks = {d: self.s.decks.get(d, DeckLife(since=self.s.now)) for d in labels}
        self.s.last_activity = self.s.now
        self.emit("table.opened", self.e.rule("open"), {
            "chapter": self.spec.chapter, "game": self.spec.name, "seats": self.seats,
            "dealing_method": self.e.method, "decks": list(labels),
            "cards_preinspected": self.opts.cards_preinspected})
        if not self.opts.cards_preinspected:
            # .4(a): the dealer inspects the cards, the floorperson verifies; only then the first shuffle.
            self.s.blocks["inspection"] = "the opening inspection of the cards: dealer, verified by the floorperson"
            self.s.confirmed = set()
            self.s.phase = Phase.OPENING
            self.s.block_reason = self.reasons()
            self.emit("cards.inspection_requested", self.e.rule("4(a)"), {
                "decks": list(labels), "by": ["dealer", "floorperson"],
                "reason": "the table opens: the dealer inspects the cards and the floorperson verifies"})
            return
        self.start_shuffle()

    def close_table(self) -> None:
        if self.s.phase is Phase.CLOSED:
            self.ignored("close table", "the table is already closed")
        elif self.s.phase in (Phase.SHUFFLING, Phase.BETTING, Phase.BLOCKED, Phase.OPENING):
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
        if self.s.blocks:  # no new round until every block is cleared
            self.enter_blocked()
            return
        self.s.phase = Phase.SHUFFLING
        if self.manual_shuffle():
            # .13(g): the shuffler is out of order; the dealer shuffles by hand and cuts with the cover card.
            self.emit("shuffle.started", self.e.rule("shuffle"), {
                "device": "manual", "deck": self.s.next_deck,
                "then": "cut with the cover card at least ten cards in (.5(d)); confirm when done"})
            return
        self.emit("shuffle.started", self.e.rule("shuffle"), {"device": "shuffler"})
        self.command("shuffler", "shuffle")

    def shuffle_completed(self, inp: ShuffleCompleted) -> None:
        if self.s.phase is not Phase.SHUFFLING or self.manual_shuffle():
            self.ignored("shuffle completed", "no shuffle was asked for" if not self.manual_shuffle()
                         else "the shuffler is out of order (.13(g))")
            return
        if self.opts.shuffler_counts and inp.card_count != 52:
            # .5(b): a counting shuffler that finds other than 52 cards: the deck leaves the table.
            self.s.blocks["deck_removed"] = (f"shuffler counted {inp.card_count} cards; "
                                             "a new deck must be verified")
            self.s.phase = Phase.BLOCKED
            self.s.block_reason = self.reasons()
            self.emit("deck.removed", self.e.rule("count"), {"card_count": inp.card_count,
                                                             "deck": self.s.next_deck,
                                                             "reason": self.s.blocks["deck_removed"]})
            return
        if self.method == "hand" and len(inp.order) != 52:
            self.s.blocks["shuffle_order"] = ("dealing from the hand needs the shuffler's card order, and it gave "
                                              "none: use a card-reading shuffler or another dealing method")
            self.s.phase = Phase.BLOCKED
            self.s.block_reason = self.reasons()
            self.emit("table.blocked", None, {"reason": self.s.block_reason, "reasons": dict(self.s.blocks)})
            return
        self.s.deck_order = list(inp.order)
        payload: dict[str, Any] = {"card_count": inp.card_count if self.opts.shuffler_counts else None,
                                   "deck_in": "shoe" if self.method != "hand" else "dealer's hand"}
        if self.opts.decks == "two_decks":
            payload["deck"] = self.s.next_deck
        self.emit("shuffle.completed", self.e.rule("count") if self.opts.shuffler_counts
                  else self.e.rule("shuffle"), payload)
        self.after_shuffle()

    def after_shuffle(self) -> None:
        if self.s.closing:
            self.closed()
        elif self.s.blocks:
            self.enter_blocked()
        else:
            self.open_betting()

    def manual_shuffle_done(self, who: str) -> None:
        if not self.manual_shuffle():
            self.refused("shuffled", "the shuffler is not marked out of order: no other method of shuffling may "
                         "be used (.13(g))", self.e.rule("13(g)"))
            return
        if self.s.phase is not Phase.SHUFFLING or who != "dealer":
            self.ignored("shuffled", "no manual shuffle is awaited from the dealer")
            return
        self.s.deck_order = []
        self.emit("shuffle.completed", self.e.rule("5(c)(2)"), {
            "card_count": None, "device": "manual", "cut": self.e.rule("5(d)"),
            "deck_in": "shoe" if self.method != "hand" else "dealer's hand"})
        self.after_shuffle()

    # -- betting ---------------------------------------------------------------------------------

    def open_betting(self) -> None:
        """Unlock every wager station; betting opens once all have confirmed, so that no chips meet a
        station still locked from the last round."""
        n = self.s.rounds_played + 1
        self.s.rounds_played = n
        self.s.round = RoundState(number=n, round_id=f"{self.s.table_id}-r{n:06d}", deck=self.s.next_deck)
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
        stops = {k: v for k, v in self.s.blocks.items() if k.startswith(_STOPS_DEALING)}
        if stops:
            self.emit("no_more_bets.refused", self.e.rule("13(g)"), {
                "reason": "the cards cannot be dealt: " + "; ".join(stops.values()), "blocks": sorted(stops)})
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
            self.emit("lockout.confirmed", self.lock_rule(), {"stations": self.seats})
            self.reconcile_or_deal()

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
        self.emit("chip_count.requested", self.chip_rule(), {
            "wagers": {spot: dict(v) for spot, v in counted.items()}, "accepted": r.chips_accepted,
            "remedy": "the dealer counts the value chips in front of the table inventory container and enters "
                      "the count; no card is dealt until it equals the number accepted"})

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
        self.block("chip_count", f"chip count {count} does not equal the {r.chips_accepted} counted wagers "
                                 "accepted: a floorperson must decide")
        self.emit("chip_count.mismatch", self.chip_rule(), {
            "entered": count, "accepted": r.chips_accepted, "counts": list(r.chips_entered),
            "remedy": "no card is dealt until a floorperson decides (proceed, recount or void)"})

    def chip_decision(self, d: FloorpersonDecision) -> None:
        if self.s.phase is not Phase.RECONCILING or "chip_count" not in self.s.blocks:
            self.ignored("floorperson decision", "no chip count is awaiting a decision")
            return
        if d.decision not in ("proceed", "recount", "void"):
            self.refused("floorperson decision", f"{d.decision!r}: decide proceed, recount or void", None)
            return
        r = self.r
        self.s.blocks.pop("chip_count")
        self.emit("chip_count.resolved", self.chip_rule(), {
            "decision": d.decision, "floorperson": d.floorperson, "note": d.note, "entered": list(r.chips_entered),
            "accepted": r.chips_accepted})
        if d.decision == "proceed":
            self.start_dealing()
        elif d.decision == "recount":
            self.emit("chip_count.requested", self.chip_rule(), {
                "wagers": self.counted_wagers(), "accepted": r.chips_accepted, "recount": True})
        else:
            self.void(self.chip_rule(), "the floorperson voided the round over the chip count "
                                        f"({r.chips_entered[-1]} counted, {r.chips_accepted} accepted)")

    # -- dealing ---------------------------------------------------------------------------------

    def plan(self) -> DealPlan:
        r = self.r
        # The wagers as at "no more bets": a player who left mid-deal (.7(b)) does not change the deal.
        return self.spec.plan(self.rules, self.method, r.players,
                              {n: {**r.seats[n].collected, **r.seats[n].wagers} for n in r.players})

    def start_dealing(self) -> None:
        self.s.phase = Phase.DEALING
        life = self.s.decks.get(self.r.deck, DeckLife(since=self.s.now))
        self.s.decks[self.r.deck] = replace(life, rounds=life.rounds + 1,
                                            rounds_since_count=life.rounds_since_count + 1)
        plan = self.plan()
        if self.method == "automated_shoe":
            self.command("shoe", "dispense_stack", cards=len(plan.stacks[0].targets))
        elif self.method == "hand":
            if len(self.s.deck_order) < len(plan.cards):
                # .9(a)(1): dealing from the hand takes an automated shuffler, and only its card order tells
                # the controller the layout; after a manual shuffle there is none, so this round cannot be
                # dealt from the hand and no round will be until the shuffler is back or a shoe deals.
                self.block("no_method", "dealing from the hand needs the automated shuffler's card order "
                                        f"({self.e.rule('9(a)(1)')}): put the shuffler back in service")
                self.void(self.e.rule("9(a)(1)"), "no card order from an automated shuffler to deal from the hand")
                return
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
        if self.s.phase is not Phase.DEALING or self.method != "automated_shoe":
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
        if self.s.phase is not Phase.DEALING or self.method != "automated_shoe" \
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
        self.finish_deal(plan.rule, len(stub))

    def card_drawn(self, inp: CardDrawn) -> None:
        if self.s.phase is not Phase.DEALING or self.method != "manual_shoe":
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
            self.finish_deal(plan.rule, 52 - len(r.dealt) - len(r.discarded))

    def dealt_confirmed(self) -> None:
        if self.s.phase is not Phase.DEALT:
            self.ignored("dealt", "no deal from the hand is awaiting confirmation")
            return
        plan = self.plan()
        self.report_stack(plan.cards, self.r.dealt[: len(plan.cards)], plan.rule)
        self.finish_deal(plan.rule, 52 - len(plan.cards) - len(self.r.discarded))

    # -- the stub count without a counting shuffler (.8(f)-(h), .9(d)-(f), .10(d)-(f)) ---------------

    def stub_rules(self) -> tuple[str, str, str]:
        """(count, whole, incorrect) for the dealing method."""
        sub = {"manual_shoe": ("8(f)", "8(g)", "8(h)"), "hand": ("9(d)", "9(e)", "9(f)"),
               "automated_shoe": ("10(d)", "10(e)", "10(f)")}[self.method]
        return self.e.rule(sub[0]), self.e.rule(sub[1]), self.e.rule(sub[2])

    def finish_deal(self, rule: str, stub: int) -> None:
        """Every card is on the layout: the stub goes to the discard rack, after a count when one is due."""
        r = self.r
        life = self.s.decks.get(r.deck, DeckLife())
        if not self.shuffler_counts() and life.rounds_since_count >= self.opts.stub_count_every:
            self.s.phase = Phase.STUB_COUNT
            r.stub_rule = self.stub_rules()[0]
            r.stub_expected = 52 - len(r.dealt) - len(r.discarded)
            self.emit("stub_count.requested", r.stub_rule, {
                "rounds_since_count": life.rounds_since_count, "deck": r.deck,
                "remedy": "count the stub face down on the layout and enter the count"},
                {"expected": r.stub_expected})
            return
        self.emit("stub.discarded", rule, {"count": stub})
        self.dealing_complete()

    def stub_counted(self, count: int) -> None:
        r = self.r
        if r.stub_entered is not None:
            self.ignored("stub count", "the dealer is determining whether the cards were misdealt")
            return
        _, whole, incorrect = self.stub_rules()
        total = len(r.dealt) + len(r.discarded) + count
        if total == 52:
            life = self.s.decks.get(r.deck, DeckLife())
            self.s.decks[r.deck] = replace(life, rounds_since_count=0)
            self.emit("stub.counted", whole, {"count": count, "deck_total": 52, "deck": r.deck})
            self.emit("stub.discarded", whole, {"count": count})
            r.stub_rule = None
            self.dealing_complete()
            return
        r.stub_entered = count
        self.emit("stub_count.mismatch", incorrect, {
            "count": count, "deck_total": total,
            "remedy": "the dealer determines whether the cards were misdealt: confirm 'misdeal' (52 cards are there, "
                      "void) or 'no_misdeal' (void and the deck leaves the table)"})

    def misdeal_determined(self, misdealt: bool) -> None:
        r = self.r
        _, _, incorrect = self.stub_rules()
        total = len(r.dealt) + len(r.discarded) + (r.stub_entered or 0)
        if misdealt:
            self.void(incorrect, f"the cards were misdealt; the stub count ({r.stub_entered}) with the layout makes "
                                 "52 cards")
            return
        self.block("deck_removed", f"the stub count makes {total} cards and the cards were not misdealt: a new deck "
                                   "must be verified")
        self.emit("deck.removed", incorrect, {"card_count": total, "deck": r.deck,
                                              "reason": self.s.blocks["deck_removed"]})
        self.void(incorrect, f"the stub count makes {total} cards, not 52, and the cards were not misdealt",
                  remedy="all wagers returned; the entire deck is removed from the table")

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
        hook = getattr(self.spec, "settle_on_exposure", None)
        if hook is None or self.s.phase is not Phase.DECISION:
            self.void(self.e.rule("13(d)"), "a community card was exposed before every decision was made")
            return
        # 683a.13(d): the hands are void, but the optional wagers are still settled; the chapter knows which
        # (this needs the whole deal on the layout, hence DECISION only).
        rows = hook(self.rules, self.view())
        self.void(self.e.rule("13(d)"), "a community card was exposed before every decision was made",
                  remedy="hands void and their wagers returned; optional wagers settled; cards reshuffled",
                  settled=rows)

    def device_fault(self, inp: DeviceFault) -> None:
        self.emit("device.fault", None, {"device_id": inp.device_id, "code": inp.code, "detail": inp.detail})
        dev = inp.device_id
        if dev in self.s.out_of_order:
            return  # covered: nothing it says is used
        if dev == "shuffler" and inp.code in SHUFFLER_FAULTS:
            if self.s.phase is Phase.SHUFFLING:
                self.emit("shuffle.failed", self.e.rule("13(e)"), {"code": inp.code,
                                                                  "remedy": "the cards are reshuffled"})
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
        self.block(f"device:{dev}", f"the {dev} is {why}: bring it back, or mark it out of order (.13(g)) before "
                                    "any other method of shuffling or dealing is used")
        self.emit("device.unusable", self.e.rule("13(g)"), {
            "device": dev, "reason": why, "phase": str(self.s.phase),
            "remedy": "no new round until it is back or marked out of order; then "
                      f"{self.takeover(dev)} takes over"})
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
                self.emit("device.back_in_service", self.e.rule("13(g)"),
                          {"device": dev, "dealing_method": self.method})
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
        self.emit("device.out_of_order", self.e.rule("13(g)"), {
            "device": dev, "reason": reason, "takes_over": takes_over, "dealing_method": self.method,
            "decks": "one deck" if dev == "shuffler" and self.opts.decks == "two_decks" else None})
        if _usable_method(self.e.method, self.opts.fallback_dealing_method, self.s.out_of_order) is None:
            self.block("no_method", f"the {dev} is out of order and no other dealing method is configured")
        self.s.blocks.pop(f"device:{dev}", None)
        if was_dealing:
            self.void(self.e.rule("13(f)") if self.method == "automated_shoe" else self.e.rule("13(g)"),
                      "the dealing shoe was marked out of order while dealing")
        elif was_shuffling:
            self.start_shuffle()  # the shuffle starts over by hand
        elif self.s.round is None and self.s.phase in (Phase.BLOCKED, Phase.OPENING):
            if self.s.blocks:
                self.enter_blocked()
            else:
                self.s.block_reason = None
                self.start_shuffle()

    # -- time: deck life (.3(c)) and the idle table (.5(f)) -----------------------------------------

    def tick(self, inp: Tick) -> None:
        if self.s.now is not None and inp.now <= self.s.now:
            return  # time never runs backwards here; a repeated or late tick changes nothing
        self.s.now = inp.now
        if self.s.last_activity is None:
            self.s.last_activity = inp.now
        if self.s.phase is Phase.CLOSED:
            return
        for d, life in list(self.s.decks.items()):
            if life.since is None:
                self.s.decks[d] = replace(life, since=inp.now)
        hand = self.e.method == "hand"
        hours = self.opts.deck_change_hours or (4 if hand else 8)
        due = sorted(d for d, life in self.s.decks.items()
                     if life.since is not None and inp.now - life.since >= timedelta(hours=hours))
        if due and "deck_change_due" not in self.s.blocks:
            rule = self.e.rule("3(c)(1)" if hand else "3(c)(2)")
            self.block("deck_change_due", f"deck {', '.join(due)} in play {hours:g} hours: a new deck must be verified")
            self.emit("deck.change_due", rule, {
                "decks": due, "hours": hours, "since": {d: _iso(self.s.decks[d].since) for d in due},
                "remedy": "no new round until a new deck is verified by the floorperson"})
            self.pause_empty_betting()
        idle = self.opts.idle_inspection_minutes
        quiet = self.s.round is None or (self.s.phase is Phase.BETTING
                                         and not any(st.wagers for st in self.s.round.seats.values()))
        if (idle is not None and quiet and self.s.last_activity is not None and "inspection" not in self.s.blocks
                and "idle_inspection" not in self.s.blocks
                and inp.now - self.s.last_activity >= timedelta(minutes=idle)):
            self.block("idle_inspection", f"no gaming activity for {idle} minutes: the cards must be inspected "
                                          "before the next round")
            self.emit("cards.inspection_due", self.e.rule("5(f)"), {
                "idle_minutes": idle, "since": _iso(self.s.last_activity),
                "remedy": "the cards are spread for inspection, then washed and shuffled; the dealer confirms"})
            self.pause_empty_betting()

    # -- what people confirm ---------------------------------------------------------------------

    def confirm(self, c: Confirm) -> None:
        match c.what:
            case "cards_inspected":
                self.inspected(c.who)
            case "deck_verified":
                self.deck_verified(c)
            case "shuffled":
                self.manual_shuffle_done(c.who)
            case "misdeal" | "no_misdeal":
                if self.s.phase is not Phase.STUB_COUNT or self.r.stub_entered is None or c.who != "dealer":
                    self.ignored(c.what, "no stub count awaits the dealer's determination of a misdeal")
                else:
                    self.misdeal_determined(c.what == "misdeal")
            case _:
                self.ignored(f"confirm {c.what!r}", "not something this controller asks to confirm")

    def inspected(self, who: str) -> None:
        if "inspection" in self.s.blocks:  # .4(a): the dealer inspects, the floorperson verifies
            if who == "floorperson" and "dealer" not in self.s.confirmed:
                self.refused("cards_inspected", "the floorperson verifies the dealer's inspection: the dealer "
                             "inspects first", self.e.rule("4(a)"))
                return
            self.s.confirmed.add(who)
            self.emit("cards.inspected" if who == "dealer" else "cards.inspection_verified", self.e.rule("4(a)"),
                      {"by": who})
            if {"dealer", "floorperson"} <= self.s.confirmed:
                self.s.confirmed = set()
                self.unblock("inspection", "dealer and floorperson")
        elif "idle_inspection" in self.s.blocks:  # .5(f): spread, inspected, then washed and shuffled
            self.emit("cards.inspected", self.e.rule("5(f)"), {"by": who})
            if self.s.now is not None:
                self.s.last_activity = self.s.now
            self.unblock("idle_inspection", who)
        else:
            self.ignored("cards_inspected", "no inspection is awaited")

    def deck_verified(self, c: Confirm) -> None:
        if c.who != "floorperson":
            self.refused("deck_verified", "a new deck is verified by the floorperson", self.e.rule("4(a)"))
            return
        removed = "deck_removed" in self.s.blocks
        due = "deck_change_due" in self.s.blocks
        if not (removed or due):
            self.ignored("deck_verified", "no new deck is awaited")
            return
        decks = [c.deck] if c.deck in self.s.decks else list(self.s.decks)
        for d in decks:
            self.s.decks[d] = DeckLife(since=self.s.now)
        self.emit("deck.verified", self.e.rule("4(a)"), {"decks": decks, "by": "floorperson", "note": c.note})
        hand = self.e.method == "hand"
        hours = self.opts.deck_change_hours or (4 if hand else 8)
        still_due = [d for d, life in self.s.decks.items() if self.s.now is not None and life.since is not None
                     and self.s.now - life.since >= timedelta(hours=hours)]
        if due and not still_due:
            self.unblock("deck_change_due", "floorperson")
        if removed:
            self.unblock("deck_removed", "floorperson")

    def count_entered(self, c: CountEntered) -> None:
        if c.count < 0:
            self.refused(f"{c.what} count", "a count is not negative", None)
        elif c.what == "chips" and self.s.phase is Phase.RECONCILING:
            self.chips_counted(c.count)
        elif c.what == "stub" and self.s.phase is Phase.STUB_COUNT:
            self.stub_counted(c.count)
        else:
            self.ignored(f"{c.what} count", "no such count is awaited")

    def floorperson_decision(self, d: FloorpersonDecision) -> None:
        if d.about == "chip_count":
            self.chip_decision(d)
        elif d.about == "shuffle_order" and "shuffle_order" in self.s.blocks and d.decision == "reshuffle":
            self.emit("floorperson.decided", None, {"about": d.about, "decision": d.decision,
                                                    "floorperson": d.floorperson, "note": d.note})
            self.unblock("shuffle_order", "floorperson")
        else:
            self.ignored(f"floorperson decision on {d.about!r}", "nothing awaits that decision")

    # -- a player who leaves during a round (.7(b)) ------------------------------------------------

    def player_left(self, seat: int) -> None:
        r = self.s.round
        if r is None or seat not in r.seats:
            self.ignored(f"player left seat {seat}", "no wager of that seat is in play")
            return
        st = r.seats[seat]
        if self.s.phase is Phase.BETTING:  # no card yet: the wagers come off the layout for the player
            for spot, amount in sorted(st.wagers.items()):
                self.emit("wager.returned", self.e.rule("7(c)"), {
                    "seat": seat, "spot": spot, "amount": amount, "reason": "the player left before the deal"})
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
        self.emit("wagers.abandoned", self.e.rule("7(b)"), {
            "seat": seat, "disposition": how, "wagers": wagers, "phase": str(self.s.phase),
            "remedy": "treated as losing wagers and collected" if how == "lose"
            else "held for the player; the hand takes no further part"})
        if self.s.phase is Phase.DECISION and r.turn == seat:
            self.next_decision(after=seat)

    def void(self, rule: str, reason: str, remedy: str = "all wagers returned; cards reshuffled",
             settled: Sequence[Settled] = ()) -> None:
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

    def reverse_progressive_contributions(self, rule: str, returned: Mapping[str, Mapping[str, int]]) -> None:
        """A void returns the progressive wagers, so their contributions to the meters are taken back.

        HOOK: the engine keeps no meters yet (no progressive wager can be taken live); when it does, the
        contribution of each wager (its incrementation rate, primary and reserve) goes into this event's
        payload and the meters drop by exactly that amount, journaled with the void."""
        wagers = {seat: {spot: amount for spot, amount in w.items() if spot in self.e.progressive}
                  for seat, w in returned.items()}
        wagers = {seat: w for seat, w in wagers.items() if w}
        if wagers:
            self.emit("progressive.contributions_reversed", rule, {"wagers": wagers, "contributions": {}})

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
                        for n in r.players if n not in r.left),
            areas={k: tuple(v) for k, v in r.areas.items()})

    def settle(self) -> None:
        """Counterclockwise from the dealer's right, through the chapter's own settlement."""
        r = self.r
        view = self.view()
        rows, _ = self.spec.settle(self.rules, view) if view.seats else ([], {})
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
                    "seat": seat, "cards": st.cards, "community": r.areas.get("community", []),
                    "hand": lead.hand, "paytable": lead.paytable, "payout_limited": limit_rule is not None,
                    "payout_limit_rule": limit_rule, "wagers": [_wager(x) for x in main],
                    "paid": sum(x.paid for x in main)}
                if "dealer" in r.areas:  # 679a, 684a: the hand played against the dealer's
                    payload["dealer"] = r.areas["dealer"]
                self.emit("hand.settled", lead.rule, payload)
            for x in mine:
                if x.wager not in self.spec.main_wagers:
                    self.emit_settled(x, revealed)
        paid, collected = sum(x.paid for x in rows), sum(x.collected for x in rows)
        done: dict[str, Any] = {
            "round_no": r.number, "players": list(r.players), "areas": {k: list(v) for k, v in r.areas.items()},
            "paid": paid, "collected": collected, "table_result": collected - paid}
        if r.left:  # .7(b): abandoned wagers, collected as losing or held for the player
            done["abandoned"] = {str(n): {"disposition": how, "wagers": dict(r.seats[n].collected)}
                                    for n, how in sorted(r.left.items())}
            lost = sum(sum(r.seats[n].collected.values()) for n, how in r.left.items() if how == "lose")
            done["collected"] = collected + lost
            done["table_result"] = collected + lost - paid
        self.emit("round.completed", self.e.rule("complete"), done)
        self.round_over()

    def emit_settled(self, x: Settled, revealed: set[str]) -> None:
        """`<wager>.settled` for a wager settled on its own, after revealing the cards it needs (655a.11(i)(4))."""
        r = self.r
        if x.wager in self.spec.reveal_before and x.wager not in revealed:
            revealed.add(x.wager)
            event, rule, area = self.spec.reveal_before[x.wager]
            self.emit(event, rule, {"cards": r.areas.get(area, [])})
        payload: dict[str, Any] = {"seat": x.seat, "cards": r.seats[x.seat].cards, "hand": x.hand,
                                   "paytable": x.paytable, **_wager(x)}
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


def _usable_method(base: DealingMethod, fallback: DealingMethod | None,
                   out_of_order: Mapping[str, str]) -> DealingMethod | None:
    """The configured method if its device is in service, else the fallback if that one can be used."""
    def usable(m: DealingMethod) -> bool:
        if m == "hand":  # .9(a)(1): an automated shuffler, and this engine needs its card order
            return "shuffler" not in out_of_order
        if m == "automated_shoe" or base == "manual_shoe":  # the configured shoe
            return "shoe" not in out_of_order
        return True  # a manual shoe standing in for the automated one

    if usable(base):
        return base
    return fallback if fallback is not None and fallback != base and usable(fallback) else None


def _iso(t: Any) -> str | None:
    return t.isoformat() if t is not None else None


def _wager(x: Settled) -> dict[str, Any]:
    return {"wager": x.wager, "amount": x.amount, "outcome": x.outcome, "odds": x.odds, "paid": x.paid,
            "returned": x.returned, "collected": x.collected}
